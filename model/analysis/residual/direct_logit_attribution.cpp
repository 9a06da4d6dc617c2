#include "model/analysis/residual/direct_logit_attribution.h"

#include "model/analysis/common/input_checks.h"
#include "model/analysis/common/token_json.h"

#include <QJsonArray>
#include <cmath>

namespace attnscope {

namespace {

/// u = W_U[:, t] (- W_U[:, t']): [d_model], the logit (difference) direction in ln_final output space.
Vector unembedDirection(const GlobalWeights& g, int token, int counterToken) {
    Vector u = g.W_U_T.rowVector(token).transpose();
    if (counterToken >= 0) u -= g.W_U_T.rowVector(counterToken).transpose();
    return u;
}

double unembedBias(const GlobalWeights& g, int token, int counterToken) {
    if (g.b_U.empty()) return 0.0;
    return double(g.b_U.at(0, token)) - (counterToken >= 0 ? double(g.b_U.at(0, counterToken)) : 0.0);
}

} // namespace

DirectLogitAttribution directLogitAttribution(const Model& model, const ActivationCache& cache, const DlaOptions& options) {
    const ModelConfig& cfg = model.config();
    const GlobalWeights& g = model.globals();
    requireToken(cfg, options.token);
    if (options.counterToken >= 0) requireToken(cfg, options.counterToken);
    const int p = options.position < 0 ? cache.nPositions() - 1 : options.position;
    const ResidualDecomposition dec = decomposeResidual(model, cache, ResidualBoundary::finalResidual(cfg), p);

    DirectLogitAttribution out;
    out.position = p;
    out.token = options.token;
    out.counterToken = options.counterToken;

    const Vector u = unembedDirection(g, options.token, options.counterToken);
    // w ⊙ u / scale: what a (centred) component is dotted with
    const Vector wu = g.ln_final_w.rowVector(0).transpose().cwiseProduct(u) / cache.ln_final_scale(p);
    const bool centre = cfg.norm == NormKind::LayerNorm;
    for (const ResidualComponent& c : dec.components) {
        const Vector x = centre ? Vector(c.vec.array() - c.vec.mean()) : c.vec;
        const double value = double(x.dot(wu));
        out.components.push_back({ComponentId(c), value});
        out.total += value;
    }

    out.biasTerm = unembedBias(g, options.token, options.counterToken);
    if (!g.ln_final_b.empty()) out.biasTerm += double(g.ln_final_b.rowVector(0).dot(u.transpose()));

    // Actual logit: from the cached logits row, or ln_final[p]·u + b_U when only the last row was kept or when the
    // cached logits are soft-capped (Gemma 2: DLA splits the logit before the final soft-cap, which is not additive)
    const int row = cfg.final_logit_softcap > 0 ? -1 : cache.logitRow(p);
    if (row >= 0) {
        out.logit = double(cache.logits(row, options.token));
        if (options.counterToken >= 0) out.logit -= double(cache.logits(row, options.counterToken));
    } else {
        out.logit = double(cache.ln_final.row(p).dot(u.transpose())) + unembedBias(g, options.token, options.counterToken);
    }
    out.checkError = std::abs(out.total + out.biasTerm - out.logit);

    double running = out.biasTerm;
    for (const DlaComponent& c : out.components) out.cumulative.push_back(running += c.value);
    return out;
}

Matrix dlaTable(const ModelConfig& cfg, const DirectLogitAttribution& dla) {
    return layerHeadTable(cfg, dla.components, [](const DlaComponent& c) { return c.value; });
}

QJsonObject dlaToJson(const DirectLogitAttribution& dla, const Tokenizer& tokenizer) {
    QJsonArray components;
    for (const DlaComponent& c : dla.components)
        components.append(QJsonObject{{QStringLiteral("name"), c.name}, {QStringLiteral("value"), c.value}});
    QJsonObject o{{QStringLiteral("components"), components},
                  {QStringLiteral("total"), dla.total},
                  {QStringLiteral("logit"), dla.logit},
                  {QStringLiteral("bias_term"), dla.biasTerm},
                  {QStringLiteral("check_error"), dla.checkError},
                  {QStringLiteral("position"), dla.position},
                  {QStringLiteral("token_id"), dla.token},
                  {QStringLiteral("token"), tokenText(tokenizer, dla.token)}};
    if (dla.counterToken >= 0) {
        o.insert(QStringLiteral("counter_token_id"), dla.counterToken);
        o.insert(QStringLiteral("counter_token"), tokenText(tokenizer, dla.counterToken));
    }
    return o;
}

} // namespace attnscope
