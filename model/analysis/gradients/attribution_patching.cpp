#include "model/analysis/gradients/attribution_patching.h"

#include "model/analysis/common/input_checks.h"
#include "model/analysis/gradients/metric_gradients.h"
#include "model/core/errors.h"

#include <QCoreApplication>
#include <cmath>

namespace attnscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("patching", text); }

/// Σ over rows [r0, r1) and columns [c0, c0 + n) of (other − base) ⊙ grad, in double.
double deltaDot(const Matrix& other, const Matrix& base, const Matrix& grad, Eigen::Index r0, Eigen::Index r1, Eigen::Index c0,
                Eigen::Index n) {
    double sum = 0;
    for (Eigen::Index i = r0; i < r1; ++i)
        for (Eigen::Index j = c0; j < c0 + n; ++j) sum += (double(other(i, j)) - double(base(i, j))) * double(grad(i, j));
    return sum;
}

/// Row i of head h's causal softmax in double, from query row `q` and keys K (rotated for rotary models); with K2
/// given, key `patchedKey` (every key when −1) is read from K2 instead (AtP*'s k cells). A q cell passes the
/// other run's query row as `q`.
Eigen::VectorXd patternRow(const ModelConfig& cfg, int layer, int h, Eigen::Index i, const float* q, const Matrix& K,
                           const Matrix* K2, Eigen::Index patchedKey) {
    const int L = cfg.d_head;
    const Eigen::Index col = Eigen::Index(h) * L;
    const int window = cfg.windowOf(layer);
    const Eigen::Index lo = window > 0 ? std::max<Eigen::Index>(0, i - window + 1) : 0;
    Eigen::VectorXd p = Eigen::VectorXd::Zero(K.rows());
    const double scale = cfg.attnScale(layer);
    double m = -INFINITY;
    for (Eigen::Index j = lo; j <= i; ++j) {
        const bool patched = K2 && (patchedKey < 0 || patchedKey == j);
        const float* k = (patched ? K2->data() + j * K2->cols() : K.data() + j * K.cols()) + col;
        double s = 0;
        for (int d = 0; d < L; ++d) s += double(q[col + d]) * double(k[d]);
        p(j) = s * scale;
        if (cfg.attn_logit_softcap > 0) p(j) = cfg.attn_logit_softcap * std::tanh(p(j) / cfg.attn_logit_softcap);
        m = std::max(m, p(j));
    }
    double sum = 0;
    for (Eigen::Index j = lo; j <= i; ++j) sum += (p(j) = std::exp(p(j) - m));
    for (Eigen::Index j = lo; j <= i; ++j) p(j) /= sum;
    return p;
}

/// AtP*'s estimate of a q or k cell of head h: Σ (pattern_patched − pattern_base)·∂metric/∂pattern over the rows
/// the patch changes, both patterns recomputed the same way. position −1 = every position.
double atpStarDelta(const ModelConfig& cfg, int layer, int h, PatchHook hook, int position, const LayerCache& base,
                    const LayerCache& other, const Matrix& dPattern) {
    const bool rotary = cfg.positions == PositionKind::Rotary;
    const Matrix& Qb = rotary ? base.q_rot : base.q;
    const Matrix& Kb = rotary ? base.k_rot : base.k;
    const Matrix& Qo = rotary ? other.q_rot : other.q;
    const Matrix& Ko = rotary ? other.k_rot : other.k;
    const Eigen::Index S = Qb.rows();
    double sum = 0;
    for (Eigen::Index i = 0; i < S; ++i) {
        if (hook == PatchHook::Q && position >= 0 && i != position) continue; // a query patch changes its own row
        if (hook == PatchHook::K && position >= 0 && i < position) continue;  // a key is seen by the queries after it
        const Eigen::VectorXd before = patternRow(cfg, layer, h, i, Qb.data() + i * Qb.cols(), Kb, nullptr, -1);
        const Eigen::VectorXd after = hook == PatchHook::Q ? patternRow(cfg, layer, h, i, Qo.data() + i * Qo.cols(), Kb, nullptr, -1)
                                                           : patternRow(cfg, layer, h, i, Qb.data() + i * Qb.cols(), Kb, &Ko, position);
        for (Eigen::Index j = 0; j <= i; ++j) sum += (after(j) - before(j)) * double(dPattern(i, j));
    }
    return sum;
}

} // namespace

PatchingSweep runAttributionPatching(const Model& model, const PatchingRuns& runs, const PatchingOptions& o, bool atpStar,
                                     const Progress& progress) {
    const ModelConfig& cfg = model.config();
    if (!runs.clean) throw InputError(tr("Attribution patching needs a clean run."));
    if (!runs.corrupt) throw InputError(tr("Attribution patching needs a corrupted prompt."));
    if (o.ablation != AblationKind::None)
        throw InputError(tr("Attribution patching estimates patching between the clean and corrupted runs; it takes no ablation."));
    const int S = runs.clean->nPositions();
    if (runs.corrupt->nPositions() != S) requireSameTokenLength(model.tokenizer(), runs.clean->tokens, runs.corrupt->tokens);
    checkPatchingMetric(cfg, o.metric);

    PatchingSweep sweep;
    sweep.options = o;
    sweep.method = atpStar ? PatchingMethod::AtpStar : PatchingMethod::Attribution;
    sweep.position = resolvePosition(o.metric.position, S);
    const RowVector cleanLogits = runs.clean->logits.row(runs.clean->logitRow(sweep.position));
    const RowVector corruptLogits = runs.corrupt->logits.row(runs.corrupt->logitRow(sweep.position));
    sweep.clean = patchingMetricValue(o.metric, cleanLogits, cleanLogits);
    sweep.corrupt = patchingMetricValue(o.metric, corruptLogits, cleanLogits);

    const bool denoise = o.direction == PatchDirection::Denoise;
    const ActivationCache& base = denoise ? *runs.corrupt : *runs.clean;
    const ActivationCache& other = denoise ? *runs.clean : *runs.corrupt;
    PatchingMetric metric = o.metric;
    metric.position = sweep.position;
    BackwardOptions backward;
    backward.patternGradients = o.hook == PatchHook::Pattern || (atpStar && (o.hook == PatchHook::Q || o.hook == PatchHook::K));
    const MetricGradients g = metricGradients(model, base, metric, cleanLogits, backward, progress);
    requireFiniteGradients(g, tr(": attribution patching cannot estimate the cells"));

    sweep.cells = patchingCells(cfg, S, o);
    const int L = cfg.d_head;
    for (PatchingCell& cell : sweep.cells) {
        const LayerGradients& d = g.gradients.layers[size_t(cell.layer)];
        const Eigen::Index r0 = cell.position < 0 ? 0 : cell.position, r1 = cell.position < 0 ? S : cell.position + 1;
        double delta = 0;
        switch (o.hook) {
        case PatchHook::ResidPre:
            delta = deltaDot(other.stored(cell.layer).resid_pre, base.stored(cell.layer).resid_pre, d.resid_pre, r0, r1, 0, cfg.d_model);
            break;
        case PatchHook::AttnOut:
            delta = deltaDot(other.stored(cell.layer).attn_out, base.stored(cell.layer).attn_out, d.attn_out, r0, r1, 0, cfg.d_model);
            break;
        case PatchHook::MlpOut:
            delta = deltaDot(other.stored(cell.layer).mlp_out, base.stored(cell.layer).mlp_out, d.mlp_out, r0, r1, 0, cfg.d_model);
            break;
        case PatchHook::Z:
            delta = deltaDot(other.stored(cell.layer).z, base.stored(cell.layer).z, d.z, r0, r1, Eigen::Index(cell.head) * L, L);
            break;
        case PatchHook::Q:
        case PatchHook::K:
        case PatchHook::V:
        case PatchHook::Pattern: {
            const auto b = base.layer(cell.layer, progress), a = other.layer(cell.layer, progress);
            if (atpStar && (o.hook == PatchHook::Q || o.hook == PatchHook::K))
                delta = atpStarDelta(cfg, cell.layer, cell.head, o.hook, cell.position, *b, *a, d.pattern[size_t(cell.head)]);
            else if (o.hook == PatchHook::Pattern)
                delta = deltaDot(a->pattern[size_t(cell.head)], b->pattern[size_t(cell.head)], d.pattern[size_t(cell.head)], r0, r1, 0, S);
            else {
                const Matrix& ma = o.hook == PatchHook::Q ? a->q : o.hook == PatchHook::K ? a->k : a->v;
                const Matrix& mb = o.hook == PatchHook::Q ? b->q : o.hook == PatchHook::K ? b->k : b->v;
                const Matrix& md = o.hook == PatchHook::Q ? d.q : o.hook == PatchHook::K ? d.k : d.v;
                delta = deltaDot(ma, mb, md, r0, r1, Eigen::Index(cell.head) * L, L);
            }
            break;
        }
        }
        cell.metric = g.value + delta;
        cell.normalised = normalisedMetric(cell.metric, sweep.clean, sweep.corrupt);
        cell.done = true;
        cell.recomputed = false;
    }
    sweep.cellsDone = int(sweep.cells.size());
    return sweep;
}

} // namespace attnscope
