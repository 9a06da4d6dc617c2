#pragma once
// The gradient of one scalar (a metric of the logits) with respect to every hook point of a forward pass:
// the backward pass's counterpart of ActivationCache, with the same names and layouts, so that
// activation × gradient products (attribution patching, EAP, integrated gradients) pair fields one to one.
// Axis names as in activation_cache.h: pos, d_model, n_heads·d_head, d_mlp.

#include "model/core/tensor.h"

#include <QString>
#include <vector>

namespace attnscope {

/// Which nonlinearities the backward pass treats as constants (detached in PyTorch's terms). Each makes its
/// block linear in its input with coefficients frozen at the forward pass's values — what attribution graphs
/// (Ameisen et al. 2025, "Circuit Tracing", §2: frozen attention patterns and norm denominators) and the
/// attribution-patching variants compare:
struct StopGradients {
    /// LayerNorm/RMSNorm (ln_1, ln_2, ln_final): the divisor √(var + eps) (RMS for RMSNorm) is held fixed;
    /// LayerNorm's mean subtraction still passes the gradient.
    bool normScale = false;
    /// The attention pattern is held fixed: z = pattern·V passes the gradient to V (and reports it at the
    /// pattern), but none reaches q or k through the softmax.
    bool attentionPattern = false;
    /// The MLP nonlinearity is held fixed: mlp_post = mlp_pre ⊙ (act(mlp_pre)/mlp_pre) with the ratio frozen
    /// (act′(0) where mlp_pre = 0); for gated MLPs mlp_post = act(gate) ⊙ up with act(gate) frozen, so
    /// the gate projection gets no gradient.
    bool mlpNonlinearity = false;

    bool any() const { return normScale || attentionPattern || mlpNonlinearity; }
};

/// ∂metric/∂(hook point) for one layer; the same layouts as LayerCache.
struct LayerGradients {
    Matrix resid_pre;            ///< [pos, d_model]          blocks.l.hook_resid_pre
    Matrix q, k, v;              ///< [pos, n_heads·d_head]   attn.hook_q/k/v: before rotary embeddings; for grouped-query
                                 ///< attention k and v per query head (the cache's repeated layout: the gradient of
                                 ///< that head's copy; summing a group's copies gives the shared K/V head's)
    std::vector<Matrix> pattern; ///< [head][query pos, key pos] attn.hook_pattern; only the cells the causal mask (and
                                 ///< a sliding window) keep, 0 elsewhere; empty when not requested
    Matrix z;                    ///< [pos, n_heads·d_head]   attn.hook_z
    Matrix attn_out;             ///< [pos, d_model]          hook_attn_out
    Matrix resid_mid;            ///< [pos, d_model]          hook_resid_mid
    Matrix mlp_pre;              ///< [pos, d_mlp]            LayerCache::mlp_pre (x·W_in + b_in: the "up" input of a gated MLP)
    Matrix mlp_post;             ///< [pos, d_mlp]            mlp.hook_post
    Matrix mlp_out;              ///< [pos, d_model]          hook_mlp_out
    Matrix resid_post;           ///< [pos, d_model]          hook_resid_post
};

struct GradientCache {
    std::vector<int> tokens;            ///< [pos] the ids of the forward pass
    Matrix embed;                       ///< [pos, d_model] hook_embed (= hook_pos_embed's and resid_pre 0's)
    std::vector<LayerGradients> layers; ///< [layer]
    Matrix ln_final_in;                 ///< [pos, d_model] ∂metric/∂(ln_final's input) = the last resid_post's
    StopGradients stops;                ///< what was held fixed
    /// The first hook point, in backward order (from the logits down), whose gradient holds a NaN or ±Inf
    /// ("blocks.3.attn.hook_pattern"), or "" when every gradient is finite.
    QString firstNonFinite;

    int nLayers() const { return int(layers.size()); }
};

} // namespace attnscope
