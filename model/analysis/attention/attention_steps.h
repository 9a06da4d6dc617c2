#pragma once
// One attention head of one layer, unrolled into the matrices a reader would write down by hand:
// embeddings → residual stream → ln1 → Q, K, V → scores → scaled → masked → pattern → z → concat →
// attn_out, plus the per-head results and their sum (the "additive" view of W_O).
// Every step's values are taken from the ActivationCache of a forward pass (runForward); nothing of
// the forward pass is re-implemented here. Only the unscaled scores Q_h·K_hᵀ are recomputed (one
// GEMM on the cached q, k) because the cache stores them already scaled; the step reports how far
// that product is from attn_scores / attnScale(layer).
//
// Axis names in `shape`: B batch, S positions, V vocabulary, D d_model, H heads, L d_head.
// Sources: Vaswani et al. 2017, "Attention Is All You Need", eq. (1); Hugging Face GPT2Attention;
// Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits" (additive heads).

#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"

#include <QString>
#include <limits>
#include <vector>

namespace attnscope {

/// One intermediate matrix of the attention computation of a single head.
struct AttentionStep {
    /// How to colour / format the values.
    enum class ValueKind {
        Signed,      ///< real numbers of either sign (diverging palette)
        Probability, ///< in [0, 1], rows sum to 1 (sequential palette)
        TokenIds     ///< integer token ids (shown as token text); no step of attentionSteps uses it yet
    };
    /// What a row or column index means.
    enum class AxisKind {
        Tokens,     ///< a sequence position (label with the token text)
        Dimensions  ///< a feature index (d_model, d_head or concatenated head dimension)
    };

    QString name;     ///< stable identifier: "embed", "pos_embed", ..., "head_result_3", ...
    QString formula;  ///< how the step is computed, e.g. "ln1·W_Q^h + b_Q^h"
    QString shape;    ///< operands and result with named axes, e.g. "S×D · D×L → S×L"
    QString meaning;  ///< one sentence: what the matrix is
    QString note;     ///< extra text (checks such as the max abs difference), may be empty
    Matrix values;    ///< [rows, cols]; NaN marks a masked cell (only when hasMask)
    int rows = 0;
    int cols = 0;
    ValueKind kind = ValueKind::Signed;
    bool hasMask = false;            ///< true if some cells are masked (NaN in values, null in JSON)
    AxisKind rowAxis = AxisKind::Tokens;
    AxisKind colAxis = AxisKind::Dimensions;
    std::vector<int> tokenIds;       ///< the input ids [S] ("embed" step only: the one-hot rows, never densified)
    /// For checking steps ("scores", "attn_out_additive"): max |this path − the cached path|; NaN otherwise.
    double maxAbsDiff = std::numeric_limits<double>::quiet_NaN();
};

/// The steps of head `head` in layer `layer`, in this order:
/// embed, pos_embed, resid_pre, ln1, q, k, v, (q_norm, k_norm: models with q/k norms, where q and k are the
/// projections before them), (q_rot, k_rot: rotary models), scores, scaled, (softcapped: Gemma 2), masked, pattern,
/// z, concat, attn_out, head_result_0 … head_result_{H−1}, attn_out_additive, resid_mid.
/// ln1 is LayerNorm or RMSNorm as the config says; for grouped-query attention k, v (and k_rot) are the K/V head
/// query head `head` reads, with the query heads sharing it named; a sliding window (Mistral) is part of the mask.
/// embed/pos_embed are the model's input embeddings; for layer > 0 resid_pre is the cached
/// resid_pre of that layer (the output of layers 0..layer−1), not embed + pos_embed.
/// Shapes: S = cache.nPositions(); q/k/v/z are [S, d_head]; scores..pattern [S query, S key];
/// concat [S, n_heads·d_head]; the others [S, d_model].
/// Throws InputError if layer/head are out of range, the cache does not belong to this model
/// (layer count / widths differ) or was computed without per-head results
/// (ForwardOptions::cacheHeadResults = false).
std::vector<AttentionStep> attentionSteps(const Model& model, const ActivationCache& cache, int layer, int head);

/// The step names attentionSteps returns for a model with n_heads heads, in order (q/k norm models: q_norm and
/// k_norm after v; rotary models: q_rot and k_rot after those; soft-capped models: softcapped after scaled).
QStringList attentionStepNames(int n_heads, bool rotary = false, bool qkNorm = false, bool softcap = false);

} // namespace attnscope
