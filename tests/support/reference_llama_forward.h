#pragma once
// An independent float64 forward pass of a Llama-family model, for the tests: written from the math of
// transformers' modeling_llama.py (LlamaRMSNorm, LlamaRotaryEmbedding with _compute_llama3_parameters,
// rotate_half, repeat_kv, eager attention with the causal and Mistral sliding-window masks, LlamaMLP) and of
// llama2.c run.c (interleaved RoPE pairs), over a LlamaCheckpoint in plain loops. It calls nothing in
// model/transformer or model/core: every number is recomputed here, so an agreement with the library is
// evidence for both.

#include "tests/support/llama_checkpoint.h"

#include <Eigen/Core>
#include <vector>

namespace attnscope::test {

/// Logits [position, d_vocab] of `tokens` (ids in [0, d_vocab)), every position, in float64.
Eigen::MatrixXd referenceLlamaLogits(const LlamaCheckpoint& c, const std::vector<int>& tokens);

/// The inverse frequencies θ_i (i < d_head/2) of the spec, with llama3 scaling (float64).
std::vector<double> referenceInverseFrequencies(const LlamaSpec& spec);

} // namespace attnscope::test
