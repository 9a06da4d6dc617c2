#pragma once
// The six models the gradient suites check (tst_backward, tst_edge_attribution), one per family of blocks:
//  - "tiny-gpt2": LayerNorm, gelu_new, learned positions, tied unembedding;
//  - "stories260K": RMSNorm, SwiGLU, interleaved RoPE, grouped-query heads;
//  - "mistral": a random Mistral written as an HF folder (rotate_half RoPE, 4 heads on 2 K/V heads, sliding window 3,
//    q/k/v biases, untied head);
//  - "qwen3": a random Qwen 3 written as an HF folder (per-head q/k RMSNorm before RoPE, GQA, head_dim 16 ≠ d_model / n_heads);
//  - "gemma2": a random Gemma 2 written as an HF folder (post-norms, (1 + w) norms, attention and final soft-caps that
//    bind, a window of 3 on layer 0 only, query_pre_attn_scalar 4, GeGLU, the √d_model embedding);
//  - "gemma3": a random Gemma 3 written as an HF folder (Gemma 2's blocks without soft-caps, (1 + w) q/k norms, six layers
//    of which the last is global: window 3 and RoPE base 1e4 on the sliding ones, 1e6 with linear scaling 8 on the global).
// Each with an 8-token prompt and a metric logit[token] − logit[counter] at the last position.

#include "model/transformer/model.h"

#include <QString>
#include <map>
#include <memory>
#include <vector>

namespace attnscope::test {

struct GradientCase {
    std::shared_ptr<const Model> model;
    std::vector<int> tokens;
    int token = 0, counter = 0;
};

/// The five cases by name; the Mistral, Qwen 3 and Gemma 2 folders are written under `tmpDir`. Throws as loadModel.
std::map<QString, GradientCase> gradientCases(const QString& tmpDir);

} // namespace attnscope::test
