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
    out.position = metric.position < 0 ? run.nPositions() - 1 : metric.position;
    requirePosition(out.position, run.nPositions());
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

} // namespace attnscope
