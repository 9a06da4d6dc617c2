#include "model/analysis/gradients/metric_gradients.h"

#include "model/analysis/common/input_checks.h"
#include "model/core/errors.h"

#include <QCoreApplication>

namespace attnscope {

MetricGradients metricGradients(const Model& model, const ActivationCache& run, const PatchingMetric& metric,
                                const RowVector& clean, const BackwardOptions& options, const Progress& progress) {
    const ModelConfig& cfg = model.config();
    checkPatchingMetric(cfg, metric);
    MetricGradients out;
    out.metric = metric;
    out.position = resolvePosition(metric.position, run.nPositions());
    const int row = run.logitRow(out.position);
    if (row < 0)
        throw InputError(QCoreApplication::translate("gradients", "The run has no logits at position %1.").arg(out.position));
    if (metric.kind == PatchingMetricKind::KL && clean.size() != cfg.d_vocab)
        throw InputError(QCoreApplication::translate("gradients", "The kl metric needs the clean run's logits."));
    const RowVector logits = run.logits.row(row);
    out.value = patchingMetricValue(metric, logits, clean);
    const LogitGradient seed{out.position, patchingMetricLogitGradient(metric, logits, clean)};
    out.gradients = runBackward(model, run, std::span(&seed, 1), options, progress);
    return out;
}

void requireFiniteGradients(const MetricGradients& g, const QString& context) {
    if (!g.gradients.firstNonFinite.isEmpty())
        throw InputError(QCoreApplication::translate("gradients", "The gradient is not finite from %1 on%2.").arg(g.gradients.firstNonFinite, context));
}

} // namespace attnscope
