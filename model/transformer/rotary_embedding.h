#pragma once
// Rotary position embeddings (Su et al. 2021, "RoFormer", §3.4): the query and key of each head are
// rotated, pair of dims by pair of dims, by the angle position·θ_i, θ_i = base^(−2i/d_head), so that
// q_p·k_s depends on p − s only. Which dims pair up is the file's layout (ModelConfig::rope_layout):
// HalfSplit (i, i + d_head/2) as HF's rotate_half, or Interleaved (2i, 2i + 1) as Meta/llama2.c/GGUF llama.
// Angles are computed in double and rounded once (HF and llama2.c compute them in float32, which at
// position 4096 is off by ~4·10⁻⁴ rad; the tests' tolerances cover the difference at their lengths).

#include "model/core/tensor.h"
#include "model/transformer/model_config.h"

#include <memory>
#include <span>
#include <vector>

namespace attnscope {

/// The inverse frequencies θ_i, i < d_head/2, of `layer` (its base and scaling: ModelConfig::rotaryBaseOf,
/// ropeScalingOf) with the scaling applied (Linear: θ/factor; Llama3: HF modeling_rope_utils._compute_llama3_parameters).
std::vector<double> ropeInverseFrequencies(const ModelConfig& cfg, int layer);

/// cos and sin of position·θ_i for positions [0, S): [pos, d_head/2] each.
struct RopeTable {
    int positions = 0;
    Matrix cos, sin;
};

/// The table of `layer` (Gemma 3's sliding and global layers differ) for at least S positions, shared (a small cache of
/// recent tables; thread-safe).
std::shared_ptr<const RopeTable> ropeTable(const ModelConfig& cfg, int layer, int S);

/// Rotates, in place, every head of x [pos, n·d_head] (position = row index) in the config's layout.
void applyRotary(const ModelConfig& cfg, const RopeTable& table, Matrix& x);
/// The same with row r of x at position positions[r] (positions.size() == x.rows(), each < table.positions):
/// bitwise what applyRotary computes for that row at that position.
void applyRotary(const ModelConfig& cfg, const RopeTable& table, Matrix& x, std::span<const int> positions);

} // namespace attnscope
