#pragma once
// The forward pass: tokens -> ActivationCache. Reads like the math, one short function per block.
// Conventions follow Hugging Face GPT2LMHeadModel (modeling_gpt2.py): Conv1D weights [in, out],
// LayerNorm with biased variance and eps from the config, gelu_new = tanh approximation,
// scores scaled by 1/√d_head (and 1/(layer+1) when scale_attn_by_inverse_layer_idx).

#include "model/core/progress.h"
#include "model/transformer/activation_cache.h"
#include "model/transformer/forward_hooks.h"
#include "model/transformer/model.h"

#include <memory>
#include <span>
#include <vector>

namespace attnscope {

/// A head whose output is replaced during the forward pass (ablation).
struct HeadAblation {
    enum class Kind {
        Zero, ///< z_h = 0 at every position, so the head writes only nothing (b_O is shared and kept)
        Mean  ///< z_h at every position = its mean over this prompt's positions
    };
    int layer = 0;
    int head = 0;
    Kind kind = Kind::Zero;
};

struct ForwardOptions {
    bool cacheHeadResults = true;   ///< store per-head result z_h·W_O^h ([head][pos, d_model])
    bool allLogits = true;          ///< logits for every position; false = last position only
    bool cacheLayers = true;        ///< false: keep no per-layer activations (ActivationCache::layers stays
                                    ///< empty; one scratch layer is reused), for logits-only runs
    std::vector<HeadAblation> ablations; ///< heads to ablate (applied to z before W_O)
    bool residualsOnly = false;     ///< keep per layer only resid_pre/mid/post, attn_out, mlp_out and z; the rest is
                                    ///< recomputed on demand (ActivationCache::layer). runForward also chooses this
                                    ///< when the full cache would not fit the memory budget (cache_budget.h)
    int recomputedLayers = 4;       ///< residuals-only: LRU bound of recomputed layers (lowered to fit the budget, ≥ 1)
    /// Callbacks that may replace activations as they are computed (forward_hooks.h); kept by recomputed
    /// layers of a residuals-only cache, so those stay what the hooked pass computed.
    std::shared_ptr<const ForwardHooks> hooks;
    /// TransformerLens's stop_at_layer: when in [0, n_layers), run blocks 0 … stopAtLayer − 1 only. The cache then
    /// holds those layers (ActivationCache::layers has stopAtLayer entries) and no ln_final, logits or
    /// logitPositions: for passes that only read a hook point part-way up (the corpus pass of feature_contexts.h).
    int stopAtLayer = -1;
};

/// Runs the model on `tokens` (ids in [0, d_vocab)) and returns every intermediate.
/// Throws InputError if tokens is empty, longer than n_ctx ("the prompt has N tokens but the model's
/// context is n_ctx ...") or holds an out-of-range id; throws Cancelled if progress says so.
/// Progress units: layers done out of n_layers + 1. The cache layout (full, without per-head results, or
/// residuals-only) follows planCache(cfg, S, options, cacheBudget()); throws its InputError when even
/// the residuals-only cache does not fit.
ActivationCache runForward(const Model& model, std::span<const int> tokens,
                           const ForwardOptions& options = {}, const Progress& progress = {});

/// The same, writing into the buffers of `recycled` (a cache the caller no longer needs, typically the
/// previous pass's): for a prompt of the same length no memory is allocated, so no fresh pages are
/// faulted in (≈ 0.4 s per GiB here, ../shared/BASELINE.md §1; glibc returns a freed multi-GiB cache
/// to the OS whatever its trim threshold, whose int setting stops at 2 GiB). Results are identical.
ActivationCache runForward(const Model& model, std::span<const int> tokens, const ForwardOptions& options,
                           const Progress& progress, ActivationCache&& recycled);

/// Transformer block `layer` on c.resid_pre [pos, d_model] (set by the caller): fills every other field
/// of c (ln1 … resid_post) exactly as runForward does — it is the code runForward runs for each layer,
/// so a block recomputed from a cached resid_pre is bitwise identical to the original pass.
/// options: cacheHeadResults, ablations (of this layer) and hooks (but resid_pre, which runForward applies) apply.
void runBlock(const Model& model, int layer, LayerCache& c, const ForwardOptions& options = {});

/// Unscaled attention scores of one head, Q_h·K_hᵀ [query pos, key pos], every cell (no mask): the product
/// runForward computes for the cells the causal mask keeps, with the same kernel and summation order, so
/// the lower triangle times attnScale is bitwise the cached attn_scores. q [pos, n_heads·d_head],
/// k [pos, n_heads·d_head] (a layer's cached q and k, GQA heads already repeated); head in [0, n_heads).
Matrix attentionScores(const Matrix& q, const Matrix& k, int head, int d_head);

/// Rows [firstRow, S) of head `head`'s causal attention in layer `layer`, bitwise what runForward computes
/// for those rows: the same query blocks, kernels and summation order (the full pass is firstRow = 0).
/// Rows before firstRow are neither read from q nor written, so a rerun of the later positions of a prompt
/// (activation patching) needs only the earlier positions' keys and values.
///   q: row i − firstRow holds query position i (i ≥ firstRow), row stride ldq, head h in columns
///      [h·d_head, (h+1)·d_head) (after rotary embeddings for rotary models);
///   k, v: [pos, n_heads·d_head] for every position (GQA heads repeated);
///   scores, pattern: [pos, pos] (resized when needed), rows ≥ firstRow written: scaled, masked scores and softmax;
///   z: row i − firstRow receives pattern[i]·V_h in the head's columns, row stride ldz.
void headAttentionRows(const ModelConfig& cfg, int layer, const float* q, Eigen::Index ldq, const Matrix& k, const Matrix& v,
                       int head, int firstRow, Matrix& scores, Matrix& pattern, float* z, Eigen::Index ldz);

/// Normalisation as the config says, row-wise over d_model: LayerNorm (x-μ)/√(σ²+eps)·w + b or
/// RMSNorm x/√(mean(x²)+eps)·w. x: [pos, d_model]. If scale is given it receives the divisor per row.
Matrix applyNorm(const ModelConfig& cfg, const Matrix& x, const Weight& w, const Weight& b, Vector* scale = nullptr);
/// The same into y (resized; its buffer is reused when the size is unchanged).
void applyNorm(const ModelConfig& cfg, const Matrix& x, const Weight& w, const Weight& b, Matrix& y, Vector* scale = nullptr);

/// The per-head RMSNorm of q or k (ModelConfig::qkNorm; transformers Qwen3RMSNorm over head_dim): each d_head-wide
/// segment of each row of x [pos, n·d_head] becomes seg/√(mean(seg²) + norm_eps) ⊙ w, in place. w: [1, d_head].
void applyHeadNorm(const ModelConfig& cfg, Matrix& x, const Weight& w);

/// Post-norm models (Gemma 2): the factor w/σ_p [pos, d_model] that takes any part of a block output before its
/// post-norm to its share of the normed output, σ_p being the norm's divisor of the whole output preNorm[p]
/// ([pos, d_model]): with every part so scaled the parts sum to the normed output exactly (the norm is linear once
/// its divisor is fixed). w: the post-norm's weight [1, d_model].
Matrix postNormFactors(const ModelConfig& cfg, const Matrix& preNorm, const Weight& w);

/// Gemma 2's final logit soft-cap (ModelConfig::final_logit_softcap; transformers Gemma2ForCausalLM): each logit z
/// becomes cap·tanh(z/cap), in place; nothing without a cap. logits: [rows, d_vocab].
void applyFinalSoftcap(const ModelConfig& cfg, Matrix& logits);

/// The MLP activation, elementwise, in place.
void applyActivation(ActivationKind kind, Matrix& x);

} // namespace attnscope
