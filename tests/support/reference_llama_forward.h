#pragma once
// An independent float64 forward pass of a Llama-family model, for the tests: written from the math of
// transformers' modeling_llama.py (LlamaRMSNorm, LlamaRotaryEmbedding with _compute_llama3_parameters,
// rotate_half, repeat_kv, eager attention with the causal and Mistral sliding-window masks, LlamaMLP) and of
// llama2.c run.c (interleaved RoPE pairs), and of modeling_gemma2.py and modeling_gemma3.py (post-norms, (1 + w) norms and
// q/k norms, soft-caps, per-layer windows and RoPE), over a LlamaCheckpoint in plain loops. It calls nothing in
// model/transformer or model/core: every number is recomputed here, so an agreement with the library is
// evidence for both.

#include "tests/support/llama_checkpoint.h"

#include <Eigen/Core>
#include <QString>
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace attnscope::test {

/// Logits [position, d_vocab] of `tokens` (ids in [0, d_vocab)), every position, in float64. With `modules`, the outputs
/// (or input) of the transformers modules Gemma Scope 2 hooks, under their names [position, width]:
/// "model.layers.L.output", "model.layers.L.self_attn.o_proj.input", "model.layers.L.pre_feedforward_layernorm.output"
/// and "model.layers.L.post_feedforward_layernorm.output" (the last two for Gemma models).
Eigen::MatrixXd referenceLlamaLogits(const LlamaCheckpoint& c, const std::vector<int>& tokens,
                                     std::map<QString, Eigen::MatrixXd>* modules = nullptr);

/// The inverse frequencies θ_i (i < d_head/2) of the spec, with llama3 scaling (float64).
std::vector<double> referenceInverseFrequencies(const LlamaSpec& spec);

/// The worst position's max |ours − reference| / max |reference| (each position against its own largest logit); ∞ when
/// the shapes differ.
template <class M>
double worstRelativeRow(const M& ours, const Eigen::MatrixXd& ref) {
    if (ours.rows() != ref.rows() || ours.cols() != ref.cols()) return INFINITY;
    double worst = 0;
    for (Eigen::Index p = 0; p < ref.rows(); ++p)
        worst = std::max(worst, (ours.row(p).template cast<double>() - ref.row(p)).cwiseAbs().maxCoeff() / ref.row(p).cwiseAbs().maxCoeff());
    return worst;
}

} // namespace attnscope::test
