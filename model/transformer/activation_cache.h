#pragma once
// Every intermediate of one forward pass, named as TransformerLens names its hook points.
// Shapes use axis names: pos = sequence position (S), d_model (D), head (H), d_head (L), d_mlp, d_vocab (V).

#include "model/core/tensor.h"

#include <vector>

namespace attnscope {

struct LayerCache {
    Matrix resid_pre;               ///< [pos, d_model]   blocks.l.hook_resid_pre
    Matrix ln1;                     ///< [pos, d_model]   ln_1 output (normalized · w + b), the attention input
    Matrix q, k, v;                 ///< [pos, n_heads*d_head]  head h = columns h*d_head..; k/v already expanded for GQA
    std::vector<Matrix> attn_scores;///< [head][query_pos, key_pos] scaled Q·Kᵀ after the causal mask: −∞ above the
                                    ///< diagonal, as TransformerLens's hook_attn_scores (those products are never computed)
    std::vector<Matrix> pattern;    ///< [head][query_pos, key_pos] softmax over keys after the causal mask; 0 above the diagonal
    Matrix z;                       ///< [pos, n_heads*d_head]  pattern·V per head (hook_z)
    std::vector<Matrix> result;     ///< [head][pos, d_model] z_h·W_O^h, no bias (hook_result); empty if not requested
    Matrix attn_out;                ///< [pos, d_model]   Σ_h result_h + b_O
    Matrix resid_mid;               ///< [pos, d_model]   resid_pre + attn_out
    Matrix ln2;                     ///< [pos, d_model]   ln_2 output, the MLP input
    Matrix mlp_pre;                 ///< [pos, d_mlp]     x·W_in + b_in (before the activation)
    Matrix mlp_post;                ///< [pos, d_mlp]     after the activation (× gate for gated MLPs)
    Matrix mlp_out;                 ///< [pos, d_model]   mlp_post·W_out + b_out
    Matrix resid_post;              ///< [pos, d_model]   resid_mid + mlp_out
};

struct ActivationCache {
    std::vector<int> tokens;        ///< [pos] the ids that were run (BOS included when prepended)
    Matrix embed;                   ///< [pos, d_model]   W_E[tokens]            (hook_embed)
    Matrix pos_embed;               ///< [pos, d_model]   W_pos[0..S)            (hook_pos_embed); zeros for rotary models
    std::vector<LayerCache> layers; ///< [layer]
    Matrix ln_final;                ///< [pos, d_model]   ln_final output
    Vector ln_final_scale;          ///< [pos]            the divisor of ln_final: sqrt(var + eps) (RMS for RMSNorm)
    Matrix logits;                  ///< [logit_row, d_vocab] rows for positions logitPositions
    std::vector<int> logitPositions;///< positions the rows of logits belong to (all positions by default)

    int nPositions() const { return int(tokens.size()); }
    /// Row of `logits` for position p, or -1 if its logits were not computed.
    int logitRow(int p) const;
};

} // namespace attnscope
