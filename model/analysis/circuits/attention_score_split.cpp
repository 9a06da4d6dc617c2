#include "model/analysis/circuits/attention_score_split.h"

#include "model/analysis/common/index_checks.h"
#include "model/analysis/common/input_checks.h"
#include "model/core/errors.h"
#include "model/transformer/forward.h"
#include "model/transformer/rotary_embedding.h"

#include <QCoreApplication>
#include <cmath>

namespace attnscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("analysis", text); }

/// One side of the score: the components of resid_pre[layer] at `position` through ln_1 (cached scale) and
/// the head's projection, rotated at the position: [component, d_head]; `ids` receives their names.
Eigen::MatrixXd side(const Model& model, const ActivationCache& cache, int layer, int position, const Weight& W, const Weight& b,
                     const Weight& headNorm, std::vector<ComponentId>& ids) {
    const ModelConfig& cfg = model.config();
    const LayerWeights& w = model.layer(layer);
    const ResidualDecomposition dec = decomposeResidual(model, cache, {layer, ResidualBoundary::Point::Pre}, position);
    Vector scale;
    Matrix normed;
    applyNorm(cfg, Matrix(dec.residual.transpose()), w.ln1_w, w.ln1_b, normed, &scale); // σ at this position, as the pass computed it
    const bool centre = cfg.norm == NormKind::LayerNorm;
    const RowVector gain = w.ln1_w.rowVector(0);
    const bool hasBias = !w.ln1_b.empty() || !b.empty();
    Matrix x(Eigen::Index(dec.components.size()) + (hasBias ? 1 : 0), cfg.d_model);
    for (size_t c = 0; c < dec.components.size(); ++c) {
        Vector v = dec.components[c].vec;
        if (centre) v.array() -= v.mean();
        x.row(Eigen::Index(c)) = (v.transpose().array() / scale(0)) * gain.array();
        ids.push_back(dec.components[c]);
    }
    const Matrix Wm = W.toMatrix(); // [d_model, d_head]
    Matrix q = x * Wm;
    if (hasBias) {
        q.row(q.rows() - 1).setZero();
        if (!w.ln1_b.empty()) q.row(q.rows() - 1) += w.ln1_b.rowVector(0) * Wm;
        if (!b.empty()) q.row(q.rows() - 1) += b.rowVector(0);
        ids.push_back({QStringLiteral("bias"), ComponentKind::AttnBias, layer, -1});
    }
    if (cfg.qkNorm) { // Qwen 3's q/k norm with this position's divisor (that of the whole vector): linear, exact
        const RowVector whole = q.colwise().sum();
        const float divisor = std::sqrt(whole.squaredNorm() / float(whole.size()) + float(cfg.norm_eps));
        q.array().rowwise() *= headNorm.rowVector(0).array() / divisor;
    }
    if (cfg.positions == PositionKind::Rotary) {
        const std::vector<int> at(size_t(q.rows()), position);
        applyRotary(cfg, *ropeTable(cfg, layer, position + 1), q, at);
    }
    return q.cast<double>();
}

} // namespace

AttentionScoreSplit splitAttentionScore(const Model& model, const ActivationCache& cache, int layer, int head, int query, int key) {
    const ModelConfig& cfg = model.config();
    checkHead(cfg, layer, head);
    requirePosition(query, cache.nPositions());
    requirePosition(key, cache.nPositions());
    if (key > query)
        throw InputError(tr("Key position %1 comes after query position %2: the causal mask hides it (no score to split).")
                             .arg(key).arg(query));
    if (cfg.windowOf(layer) > 0 && query - key >= cfg.windowOf(layer))
        throw InputError(tr("Key position %1 is outside the sliding window of %2 positions before query %3: masked.")
                             .arg(key).arg(cfg.windowOf(layer)).arg(query));
    const LayerWeights& w = model.layer(layer);
    const int L = cfg.d_head, kv = cfg.kvHeadOf(head);
    AttentionScoreSplit out;
    out.layer = layer;
    out.head = head;
    out.query = query;
    out.key = key;
    const Weight bQ = w.b_Q.empty() ? Weight{} : w.b_Q.colBlock(Eigen::Index(head) * L, L);
    const Weight bK = w.b_K.empty() ? Weight{} : w.b_K.colBlock(Eigen::Index(kv) * L, L);
    const Eigen::MatrixXd q = side(model, cache, layer, query, w.W_Q_head(head, L), bQ, w.q_norm_w, out.queryComponents);
    const Eigen::MatrixXd k = side(model, cache, layer, key, w.W_K_head(kv, L), bK, w.k_norm_w, out.keyComponents);
    out.terms = cfg.attnScale(layer) * (q * k.transpose());
    out.sum = out.terms.sum();
    const std::shared_ptr<const LayerCache> lc = cache.layer(layer);
    out.score = double(lc->attn_scores[size_t(head)](query, key));
    out.pattern = double(lc->pattern[size_t(head)](query, key));
    // with Gemma 2's soft-cap the terms split the scaled score before it: compare through the cap
    const double cap = cfg.attn_logit_softcap;
    out.checkError = std::abs((cap > 0 ? cap * std::tanh(out.sum / cap) : out.sum) - out.score);
    return out;
}

} // namespace attnscope
