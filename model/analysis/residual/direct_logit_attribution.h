#pragma once
// Direct logit attribution (DLA): how much each residual component adds directly to one logit (or a
// logit difference) through the unembedding, with the final LayerNorm frozen at its cached scale.
// Convention of TransformerLens: ActivationCache.apply_ln_to_stack(..., layer=-1, pos_slice=p) (divide by
// the cached ln_final scale, centre for LayerNorm) followed by a dot with logit_diff_directions
// (W_U[:, t] or W_U[:, t] - W_U[:, t']) after multiplying by ln_final.w
// (TransformerLens ActivationCache.py; Nanda, "Exploratory Analysis Demo").

#include "model/analysis/residual/residual_decomposition.h"
#include "model/tokenizers/tokenizer.h"

#include <QJsonObject>
#include <vector>

namespace attnscope {

struct DlaOptions {
    int position = -1;     ///< residual position p; -1 = the last position
    int token = 0;         ///< target token t (the logit W_U[:, t] is read at p)
    int counterToken = -1; ///< when >= 0: attribute the logit difference logit[t] - logit[t']
};

/// One component's direct contribution to the logit (difference).
struct DlaComponent : ComponentId {
    double value = 0;
};

struct DirectLogitAttribution {
    int position = 0;
    int token = 0;
    int counterToken = -1;
    std::vector<DlaComponent> components; ///< forward order (as decomposeResidual of the final residual)
    double total = 0;      ///< Σ component values
    double logit = 0;      ///< the model's actual logit (difference) at position (before Gemma 2's final soft-cap, which
                           ///< is not additive: the cap, c·tanh(z/c), is applied to the sum)
    double biasTerm = 0;   ///< ln_final.b·u (+ b_U[t] (- b_U[t'])), u = W_U[:, t] (- W_U[:, t']): the part no component owns
    double checkError = 0; ///< |total + biasTerm - logit|: float32 rounding only; large means a cache/model mismatch
    /// cumulative[k] = biasTerm + Σ_{j<=k} components[j].value: the logit (difference) after adding each
    /// component in forward order, with the final LN scale frozen; the last entry equals `logit`.
    std::vector<double> cumulative;
};

/// DLA of every component of the final residual at options.position (see the file comment):
/// value_c = (centre(c) / ln_final_scale[p]) ⊙ ln_final.w · u, with centre = subtract the mean over
/// d_model for LayerNorm and the identity for RMSNorm. Σ value_c + biasTerm == logit.
/// Throws InputError for a position outside the cache or a token outside [0, d_vocab).
DirectLogitAttribution directLogitAttribution(const Model& model, const ActivationCache& cache, const DlaOptions& options);

/// Component values as a [n_layers, n_heads + 1] table (last column = MLP), for the head grid.
Matrix dlaTable(const ModelConfig& cfg, const DirectLogitAttribution& dla);

/// The CLI's "dla" object: {"components": [{"name": "L0H1", "value": …}, …], "total": …, "logit": …,
/// "bias_term": …, "check_error": …, "position": p, "token_id": t, "token": its text, "counter_token_id": t',
/// "counter_token": its text (these two only for a difference)}. "logit" is the model's actual logit (difference).
QJsonObject dlaToJson(const DirectLogitAttribution& dla, const Tokenizer& tokenizer);

} // namespace attnscope
