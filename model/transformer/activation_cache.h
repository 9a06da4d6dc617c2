#pragma once
// Every intermediate of one forward pass, named as TransformerLens names its hook points.
// Shapes use axis names: pos = sequence position (S), d_model (D), head (H), d_head (L), d_mlp, d_vocab (V).

#include "model/core/progress.h"
#include "model/core/tensor.h"

#include <memory>
#include <vector>

namespace attnscope {

class LayerRecomputer;

struct LayerCache {
    Matrix resid_pre;               ///< [pos, d_model]   blocks.l.hook_resid_pre
    Matrix ln1;                     ///< [pos, d_model]   ln_1 output (normalized · w + b), the attention input
    Matrix q, k, v;                 ///< [pos, n_heads*d_head]  head h = columns h*d_head..; k/v already expanded for GQA
                                    ///< (hook_q, hook_k, hook_v: before rotary embeddings; after q_norm/k_norm when
                                    ///< ModelConfig::qkNorm)
    Matrix q_pre_norm, k_pre_norm;  ///< qkNorm models only (else empty): the projections ln1·W_Q [pos, n_heads*d_head] and
                                    ///< ln1·W_K [pos, n_kv_heads*d_head] before the per-head RMSNorm (attn.q_norm/k_norm's input)
    Matrix q_rot, k_rot;            ///< [pos, n_heads*d_head]  q and k after rotary embeddings (hook_rot_q, hook_rot_k),
                                    ///< what the scores are computed from; empty for learned positions
    std::vector<Matrix> attn_scores;///< [head][query_pos, key_pos] scaled Q·Kᵀ after the causal mask: −∞ above the
                                    ///< diagonal, as TransformerLens's hook_attn_scores (those products are never computed)
    std::vector<Matrix> pattern;    ///< [head][query_pos, key_pos] softmax over keys after the causal mask; 0 above the diagonal
    Matrix z;                       ///< [pos, n_heads*d_head]  pattern·V per head (hook_z)
    std::vector<Matrix> result;     ///< [head][pos, d_model] z_h·W_O^h, no bias (hook_result); empty if not requested
    Matrix attn_out;                ///< [pos, d_model]   Σ_h result_h + b_O (hook_attn_out); with post-norms (Gemma 2) the
                                    ///< normed output ln1_post(z·W_O), and result_h = z_h·W_O^h / σ ⊙ w_post with σ the
                                    ///< post-norm's divisor of the whole output, so that Σ_h result_h = attn_out still
    Matrix attn_out_pre_norm;       ///< [pos, d_model]   post-norm models only (else empty): z·W_O + b_O before ln1_post
    Matrix resid_mid;               ///< [pos, d_model]   resid_pre + attn_out
    Matrix ln2;                     ///< [pos, d_model]   ln_2 output, the MLP input
    Matrix mlp_pre;                 ///< [pos, d_mlp]     x·W_in + b_in (before the activation)
    Matrix mlp_post;                ///< [pos, d_mlp]     after the activation (× gate for gated MLPs)
    Matrix mlp_out;                 ///< [pos, d_model]   mlp_post·W_out + b_out (with post-norms: ln2_post of it)
    Matrix mlp_out_pre_norm;        ///< [pos, d_model]   post-norm models only (else empty): mlp_post·W_out + b_out
    Matrix resid_post;              ///< [pos, d_model]   resid_mid + mlp_out
};

/// An ActivationCache comes in two layouts (runForward chooses; cache_budget.h):
///  - full: `layers` holds every field of every layer;
///  - residuals-only (the full cache would not fit the memory budget, or ForwardOptions::residualsOnly):
///    `layers[l]` holds only the [pos, d_model]-sized fields resid_pre, resid_mid, resid_post, attn_out,
///    mlp_out and z; the S²-sized and per-head fields are recomputed from resid_pre on demand by layer(l)
///    (runBlock with the pass's options and ablations, so bitwise identical to the original pass).
/// Read a layer through layer(l) (every field, any layout) or stored(l) (no recomputation).
struct ActivationCache {
    std::vector<int> tokens;        ///< [pos] the ids that were run (BOS included when prepended)
    Matrix embed;                   ///< [pos, d_model]   W_E[tokens]            (hook_embed)
    Matrix pos_embed;               ///< [pos, d_model]   W_pos[0..S)            (hook_pos_embed); zeros for rotary models
    std::vector<LayerCache> layers; ///< [layer] as stored (see above); prefer layer(l) / stored(l)
    Matrix ln_final;                ///< [pos, d_model]   ln_final output
    Vector ln_final_scale;          ///< [pos]            the divisor of ln_final: sqrt(var + eps) (RMS for RMSNorm)
    Matrix logits;                  ///< [logit_row, d_vocab] rows for positions logitPositions (after the final soft-cap,
                                    ///< ModelConfig::final_logit_softcap)
    std::vector<int> logitPositions;///< positions the rows of logits belong to (all positions by default)

    /// Set in residuals-only caches: recomputes dropped layers (shared by copies of the cache; do not
    /// modify the stored residuals of a residuals-only cache).
    std::shared_ptr<LayerRecomputer> recomputer;

    int nPositions() const { return int(tokens.size()); }
    /// Row of `logits` for position p, or -1 if its logits were not computed.
    int logitRow(int p) const;

    int nLayers() const { return int(layers.size()); }
    /// Heads per layer (n_heads), known without recomputing anything.
    int nHeads() const;
    /// True when layers hold only the residual streams and layer(l) may have to recompute.
    bool residualsOnly() const { return recomputer != nullptr; }

    /// Every field of layer l in [0, nLayers()): in a full cache a non-owning pointer to layers[l] (valid while
    /// the cache lives); in a residuals-only cache the layer recomputed with runBlock from layers[l].resid_pre
    /// (bitwise equal to the original pass), kept in a small LRU (LayerRecomputer) and shared while anyone
    /// holds it. Thread-safe; may take one block's compute time, so never call it on the GUI thread for a
    /// layer that !isLayerReady(l). Throws InputError for l out of range, Cancelled when `progress` is cancelled
    /// before the recomputation starts (e.g. while waiting for another one).
    std::shared_ptr<const LayerCache> layer(int l, const Progress& progress = {}) const;
    /// True when layer(l) returns without computing (full cache, or the layer is in the LRU or still held).
    bool isLayerReady(int l) const;
    /// The stored fields of layer l, never recomputed: everything in a full cache, only resid_pre, resid_mid,
    /// resid_post, attn_out, mlp_out and z in a residuals-only cache. Throws InputError for l out of range.
    const LayerCache& stored(int l) const;
};

} // namespace attnscope
