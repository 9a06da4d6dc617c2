#pragma once
// The local replacement model of one prompt (Ameisen et al. 2025, "Circuit Tracing", §2.2; circuit-tracer's
// replacement_model and attribution/context): every MLP is replaced by its transcoder, and the attention patterns
// and every norm's divisor are frozen at the clean run, so the model is linear in the active features:
//   mlp_out[L, p] = f[L, p]·W_dec + b_dec + err[L, p]      (p ≥ 1; err = the real MLP's output − the reconstruction)
//   mlp_out[L, 0] = the real MLP's output                   (BOS: no feature or error carries it; a constant)
// With a cross-layer transcoder set, f[L, p]·W_dec is Σ_{i ≤ L} f[i, p]·W_dec_i[:, L − i, :] (+ b_dec_L).
// Attention still moves values through V and W_O with the clean patterns, and each norm still centres its input
// (LayerNorm) and applies its gain and bias; only the divisor √(var + ε) is held (Gemma 2's post-attention norm's too). Axis names: pos, d_model, d_transcoder.

#include "model/core/progress.h"
#include "model/features/dictionary_set.h"
#include "model/features/hook_point.h"
#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"

#include <span>
#include <vector>

namespace attnscope {

struct ReplacementModel {
    const Model* model = nullptr;
    const DictionarySet* transcoders = nullptr;
    std::vector<int> tokens;             ///< [pos] the prompt's ids (BOS first when the prompt has one)
    ActivationCache clean;               ///< the clean run (patterns, residual streams, logits at every position)
    std::vector<HookPoint> inputHook;    ///< [layer] where transcoder L reads (MlpIn or ResidMid of layer L)
    std::vector<Matrix> activations;     ///< [layer] [pos, d_transcoder] feature activations; row 0 zeroed
    std::vector<Matrix> errors;          ///< [layer] [pos, d_model] real mlp_out − reconstruction; row 0 zeroed
    std::vector<Vector> ln1Scale, ln2Scale; ///< [layer] [pos] the frozen divisors of ln_1 and ln_2
    std::vector<Vector> ln1PostScale;    ///< [layer] [pos] the frozen divisor of the post-attention norm (Gemma 2; else empty)
    Vector lnFinalScale;                 ///< [pos] the frozen divisor of ln_final

    int nLayers() const { return int(activations.size()); }
    int nPositions() const { return int(tokens.size()); }
    /// A cross-layer transcoder set: layer i's features write into every layer j ≥ i (DictionarySet::crossLayerDecoders).
    bool crossLayer() const { return !transcoders->crossLayerDecoders.empty(); }
};

/// The transcoder that decodes layer `source`'s features into layer `target`'s MLP output (source ≤ target): a
/// per-layer set's coders[source] when source == target; a cross-layer set's coders[source] with W_dec the slice
/// W_dec_source[:, target − source, :], and b_dec (and W_skip) only when source == target. Throws InputError when a
/// per-layer set is asked for source ≠ target.
SparseCoder decoderInto(const ReplacementModel& rm, int source, int target);

/// Layer `layer`'s MLP output as the transcoders reconstruct it from `activations` ([layer] [pos, d_transcoder]):
/// per-layer, decode(f_layer); cross-layer, Σ_{i ≤ layer} f_i·W_dec_i[:, layer − i, :] + b_dec_layer. `x` is the
/// layer's transcoder input [pos, d_model] (read by skip connections). [pos, d_model].
Matrix reconstructMlpOut(const ReplacementModel& rm, const std::vector<Matrix>& activations, int layer, const Matrix& x);

/// encodeFeatures(tc, x) [pos, d_sae], then the pages of a memory-mapped W_enc handed back (dropMappedPages; the page
/// cache keeps them): an encode reads all of W_enc once per prompt, so a set larger than memory (Llama-3.2-1B's
/// 131 072 × 16 layers, 17 GB in BF16) is streamed with one layer's W_enc resident at a time, and the graph then
/// maps again only the rows of the features it visits. Owned or in-memory weights are left as they are.
Matrix encodeStreamed(const SparseCoder& tc, const Matrix& x);

/// Hands back the pages of a memory-mapped W_dec that reading its rows mapped into the process (dropMappedPages), once
/// layer `layer`'s output has been read from the decoders: a decoder row read maps the pages around it too (the
/// kernel's fault-around, 64 KiB), so the rows of a few thousand active features would hold gigabytes of a large set
/// resident. A per-layer set: that layer's W_dec. A cross-layer set, whose decoders every layer above theirs reads:
/// all of them, at the last layer.
void releaseDecoderPages(const DictionarySet& set, int layer);
/// Likewise the pages of layer `layer`'s W_enc, once a batch of graph targets has read its encoder rows.
void releaseEncoderPages(const DictionarySet& set, int layer);

/// Bytes buildReplacementModel allocates: the clean run's cache (without head results; logits at every position),
/// the activations [layer] [pos, d_transcoder] and their encoding's pre-activations, the errors and divisors, and
/// `encoderLayerBytes`: the largest layer's W_enc as stored, which a memory-mapped set holds resident while that layer
/// is encoded (encodeStreamed; for a set in memory it is already resident: counted anyway, an upper bound).
/// `dTranscoder`: Σ over layers of d_transcoder.
qint64 replacementModelBytes(const ModelConfig& cfg, int nPositions, qint64 dTranscoder, qint64 encoderLayerBytes = 0);
/// The largest W_enc of `set`'s coders in stored bytes (replacementModelBytes' encoderLayerBytes).
qint64 largestEncoderBytes(const DictionarySet& set);

/// Runs the clean forward on `tokens` and builds the replacement model with `transcoders`, a set with one
/// transcoder per layer reading ln2.hook_normalized (mlp.hook_in) or hook_resid_mid and writing hook_mlp_out, or a
/// cross-layer transcoder reading and writing the same hooks. Throws InputError naming the set's path when it is not
/// such a set (an SAE, a missing layer, a transcoder that reads or writes elsewhere, d_model ≠ the model's, an input
/// normalisation that is not linear). With post-attention and post-MLP norms (Gemma 2), the post-attention norm's
/// divisor is frozen too, and the transcoders write hook_mlp_out after the post-MLP norm (as Gemma Scope's do), so
/// their output reaches the residual stream directly.
/// Refuses before running when replacementModelBytes exceeds the memory budget (InputError with both sizes).
/// Cancelled when `progress` says so.
ReplacementModel buildReplacementModel(const Model& model, const DictionarySet& transcoders, std::span<const int> tokens,
                                       const Progress& progress = {});

/// The frozen replacement model run forward with the given feature activations ([layer] [pos, d_transcoder], e.g.
/// rm.activations edited) and error terms (rm.errors, or zero matrices to leave them out): logits at every
/// position [pos, d_vocab], before the final soft-cap. With rm.activations and rm.errors it reproduces the clean
/// logits (up to float rounding); it is affine in the activations. `inputs`, when given, receives each layer's transcoder
/// input in this run ([layer] [pos, d_model]): a feature's pre-activation moves by W_enc[f]·Δx, so knocking a source out
/// and reading the change checks an edge by a forward pass (the tests).
Matrix replacementLogits(const ReplacementModel& rm, const std::vector<Matrix>& activations, const std::vector<Matrix>& errors,
                         std::vector<Matrix>* inputs = nullptr);

/// resid_pre of `layer` [pos, d_model] in the frozen replacement model run forward with the given activations, errors
/// and token embeddings `embed` [pos, d_model] (rm.clean.embed for the prompt's; a row zeroed removes that token), the
/// positional embeddings and every bias kept; `activations` or `errors` empty: none (b_dec and a skip still apply). With all three zero it is the residual's constant part, which no graph
/// source carries (biases, positional embeddings, the BOS position's MLP outputs). InputError for a layer out of range.
Matrix replacementResidPre(const ReplacementModel& rm, const std::vector<Matrix>& activations, const std::vector<Matrix>& errors,
                           const Matrix& embed, int layer);

} // namespace attnscope
