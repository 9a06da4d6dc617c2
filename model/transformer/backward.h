#pragma once
// The backward pass: reverse-mode differentiation of the forward (forward.h), written by hand block by block,
// from the gradient of a scalar with respect to the logits down to the token embeddings. Only activations
// get gradients (the weights are constants), so every weight product is a product with Wᵀ, run on the weight
// GEMM's kernels with a transposed read (W.t()). Conventions and stop-gradient switches: gradient_cache.h.
// Checked against PyTorch autograd (tools/gradient_references.py) and float64 central differences.

#include "model/core/progress.h"
#include "model/transformer/activation_cache.h"
#include "model/transformer/gradient_cache.h"
#include "model/transformer/model.h"

#include <span>

namespace attnscope {

/// ∂metric/∂logits at one position: d_logits [d_vocab].
struct LogitGradient {
    int position = 0;
    RowVector d_logits;
};

struct BackwardOptions {
    StopGradients stops;
    bool patternGradients = true; ///< keep ∂/∂pattern per head (n_layers·n_heads·S² floats)
    /// Post-norm models (Gemma 2, 3): the post-attention norm's divisor σ (ln1_post) held fixed at the cache's
    /// values, so that attn_out is linear in each head's z_h·W_O^h (edge attribution's senders, edge_attribution.h);
    /// the other norms keep their full gradient unless stops.normScale holds them too.
    bool frozenPostAttentionNorm = false;
};

/// Bytes of the GradientCache of a backward over nPositions tokens (float32): per layer 5·S·D + 4·S·H·L +
/// 2·S·M (+ H·S² with pattern gradients), plus 2·S·D, and a layer's scratch (its S² score gradients).
qint64 estimateGradientBytes(const ModelConfig& cfg, int nPositions, const BackwardOptions& options);

/// The gradient of Σ_seeds ⟨d_logits, logits[position]⟩ with respect to every hook point of the forward pass
/// that made `cache` (a pass of runForward without hooks or ablations, any cache layout: layers are read
/// through ActivationCache::layer). Exact reverse mode of forward.cpp: LayerNorm/RMSNorm, gelu_new, GELU,
/// ReLU, SiLU/SwiGLU, rotary embeddings in both layouts, grouped-query heads, sliding windows, the causal
/// softmax, tied or untied unembedding, biases; with options.stops some nonlinearities are held fixed.
/// Throws InputError for a seed position outside the prompt or a d_logits of the wrong size, or when the
/// gradients would not fit the memory budget (cache_budget.h; the message gives both sizes); Cancelled
/// between layers when `progress` says so. Progress units: layers done out of n_layers + 1.
GradientCache runBackward(const Model& model, const ActivationCache& cache, std::span<const LogitGradient> seeds,
                          const BackwardOptions& options = {}, const Progress& progress = {});

/// Building blocks of the backward pass, for analyses that take gradients at inputs the cache does not name
/// (EAP's per-head inputs, edge_attribution.h).
///
/// dx [rows, W.rows] = dy [rows, W.cols] · Wᵀ: the gradient of x·W with respect to x, on the weight GEMM's kernels
/// (W read transposed in place; a block-quantized weight is decoded first).
void timesTransposed(const Matrix& dy, const Weight& W, Matrix& dx);

/// The backward of a row-wise LayerNorm/RMSNorm y = n(x)·w + b (forward.h applyNorm), added into dx [pos, d_model]:
/// with g = dy ⊙ w, x̂ = n(x) and σ its divisor, LayerNorm dx += (g − mean(g) − x̂·mean(g ⊙ x̂)) / σ, RMSNorm
/// dx += (g − x̂·mean(g ⊙ x̂)) / σ; with frozenScale the x̂ terms are dropped (σ held fixed). x, dy: [pos, d_model].
void normBackward(const ModelConfig& cfg, const Matrix& x, const Weight& w, const Matrix& dy, bool frozenScale, Matrix& dx);

/// The backward of the per-head q/k RMSNorm (forward.h applyHeadNorm): dx [pos, n·d_head] (resized) from the norm's
/// input x [pos, n·d_head] (LayerCache::q_pre_norm, k_pre_norm) and dy, the gradient at its output, each d_head-wide
/// segment as normBackward's RMSNorm row; with frozenScale the divisor is held fixed.
void headNormBackward(const ModelConfig& cfg, const Matrix& x, const Weight& w, const Matrix& dy, bool frozenScale, Matrix& dx);

} // namespace attnscope
