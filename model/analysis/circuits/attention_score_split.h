#pragma once
// Why does head h attend from query position i to key position j? The pre-softmax score split exactly into
// (query-side component, key-side component) terms, each side written as the residual decomposition of its
// position (residual_decomposition.h: embed, pos_embed, each earlier head, each earlier b_O, each earlier MLP)
// passed through the layer's ln_1 with the cached scale of that position (LayerNorm centres each component,
// RMSNorm does not; the scale is the position's own, so the split is linear and exact, as DLA is through
// ln_final) and the head's W_Q or W_K, with rotary embeddings applied at the position for rotary models:
//
//   q_i = Σ_c q_c + q_bias,   q_c = (centre(x_c)/σ_i ⊙ w_ln)·W_Q^h,   q_bias = b_ln·W_Q^h + b_Q^h
//   k_j = Σ_c' k_c' + k_bias  (the same with σ_j, W_K and b_K of the head's K/V head)
//   score = scale · R_i q_i · R_j k_j = Σ_{c, c'} scale · (R_i q_c)·(R_j k_c')
//
// (the QK circuit of Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits", §"Attention
// heads", read term by term on one prompt). The terms sum to the cached scaled score (attn_scores) up to
// float rounding; checkError says by how much. With Qwen 3's q/k norms each side also passes through the norm with
// its position's divisor (that of the whole q or k), linear and exact as ln_1; with Gemma 2's attention soft-cap the
// terms sum to the scaled score before the cap, and checkError compares cap·tanh(sum/cap) with the cached score.

#include "model/analysis/residual/residual_decomposition.h"

namespace attnscope {

struct AttentionScoreSplit {
    int layer = 0, head = 0, query = 0, key = 0;
    std::vector<ComponentId> queryComponents; ///< the decomposition at the query position, then "bias" (when present)
    std::vector<ComponentId> keyComponents;   ///< the same at the key position
    Eigen::MatrixXd terms;  ///< [query component, key component]: scale · (R_i q_c)·(R_j k_c')
    double score = 0;       ///< the cached scaled pre-softmax score attn_scores[head](query, key) (after a soft-cap)
    double sum = 0;         ///< Σ terms (before a soft-cap)
    double checkError = 0;  ///< |sum − score|, or |cap·tanh(sum/cap) − score| with a soft-cap
    double pattern = 0;     ///< the attention weight A[query, key] after the softmax
};

/// Splits the score of (layer, head, query, key) of `cache`. Throws InputError for a layer, head or position
/// out of range, and for a key after the query or outside a sliding window (masked: no score to split).
AttentionScoreSplit splitAttentionScore(const Model& model, const ActivationCache& cache, int layer, int head, int query,
                                        int key);

} // namespace attnscope
