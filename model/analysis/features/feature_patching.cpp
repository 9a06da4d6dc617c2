#include "model/analysis/features/feature_patching.h"

#include "model/analysis/common/input_checks.h"
#include "model/analysis/features/feature_activations.h"
#include "model/analysis/features/feature_intervention.h"
#include "model/analysis/gradients/metric_gradients.h"
#include "model/core/errors.h"
#include "model/transformer/forward.h"

#include <cmath>
#include <limits>

namespace attnscope {

namespace {

/// ∂metric/∂(the hook's activation) [pos, width] from a gradient cache.
const Matrix& hookGradient(const GradientCache& g, const HookPoint& h) {
    const LayerGradients& l = g.layers.at(size_t(h.layer));
    switch (h.site) {
    case HookSite::ResidPre: return l.resid_pre;
    case HookSite::ResidMid: return l.resid_mid;
    case HookSite::ResidPost: return l.resid_post;
    case HookSite::AttnOut: return l.attn_out;
    case HookSite::MlpOut: return l.mlp_out;
    case HookSite::Z: return l.z;
    default: break;
    }
    throw InputError(QStringLiteral("%1: no gradient is kept for this hook").arg(h.name()));
}

} // namespace

FeaturePatching featurePatching(const Model& model, const PatchingRuns& runs, const SparseCoder& sae, const PatchingMetric& metric,
                                int exactTop, const Progress& progress) {
    if (!runs.clean || !runs.corrupt) throw InputError(QStringLiteral("feature patching needs a clean and a corrupted prompt"));
    const ActivationCache& clean = *runs.clean;
    const ActivationCache& corrupt = *runs.corrupt;
    if (clean.nPositions() != corrupt.nPositions())
        throw InputError(QStringLiteral("the clean and corrupted prompts have %1 and %2 tokens: patching needs the same length")
                             .arg(clean.nPositions()).arg(corrupt.nPositions()));
    const FeatureRun a = runDictionary(model, clean, sae);
    const FeatureRun b = runDictionary(model, corrupt, sae);
    requireEditable(b.hookOut);
    const int p = resolvePosition(metric.position, corrupt.nPositions());
    const RowVector cleanLogits = clean.logits.row(clean.logitRow(p));
    const MetricGradients grads = metricGradients(model, corrupt, metric, cleanLogits, {}, progress);
    FeaturePatching out;
    out.hook = b.hookOut.name();
    out.metricCorrupt = grads.value;
    out.metricClean = patchingMetricValue(metric, cleanLogits, cleanLogits);
    const Matrix& g = hookGradient(grads.gradients, b.hookOut);
    for (int pos = 0; pos < a.f.rows(); ++pos)
        for (int f = 0; f < sae.d_sae; ++f) {
            const float fc = a.f(pos, f), fx = b.f(pos, f);
            if (fc == 0.0f && fx == 0.0f) continue;
            const RowVector d = decoderDirectionAt(sae, f, b.x.row(pos));
            const double attr = double(fc - fx) * double(d.dot(g.row(pos)));
            out.cells.push_back({f, pos, fc, fx, attr, std::numeric_limits<double>::quiet_NaN()});
        }
    std::sort(out.cells.begin(), out.cells.end(), [](const FeaturePatchingCell& x, const FeaturePatchingCell& y) {
        const double ax = std::abs(x.attribution), ay = std::abs(y.attribution);
        if (ax != ay) return ax > ay;
        return x.position != y.position ? x.position < y.position : x.feature < y.feature;
    });
    const int n = std::min<int>(exactTop, int(out.cells.size()));
    for (int i = 0; i < n; ++i) {
        progress.step(i, n, QStringLiteral("patched run %1 of %2").arg(i + 1).arg(n));
        FeaturePatchingCell& c = out.cells[size_t(i)];
        const FeatureEdit e{c.feature, c.clean == 0.0f ? FeatureEditKind::Ablate : FeatureEditKind::Clamp, double(c.clean), {c.position}};
        ForwardOptions o;
        o.cacheLayers = false;
        o.cacheHeadResults = false;
        o.hooks = featureEditHooks(model, sae, {e});
        const ActivationCache r = runForward(model, corrupt.tokens, o);
        c.patched = patchingMetricValue(metric, r.logits.row(r.logitRow(p)), cleanLogits) - out.metricCorrupt;
    }
    return out;
}

} // namespace attnscope
