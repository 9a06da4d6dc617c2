#pragma once
// The gradient of a patching metric (patching_metric.h: logit_diff, logit, prob, logprob, kl) with respect to
// every hook point of one run: the metric's logit gradient at its position, then the backward pass
// (model/transformer/backward.h).

#include "model/analysis/circuits/patching_metric.h"
#include "model/transformer/backward.h"

namespace attnscope {

struct MetricGradients {
    PatchingMetric metric;
    int position = 0;      ///< where the metric reads the logits
    double value = 0;      ///< the metric on this run
    GradientCache gradients;
};

/// ∂metric/∂(every hook point) of the run `run` (a cache with the logits of the metric's position).
/// `clean` [d_vocab]: the reference distribution's logits for kl (ignored otherwise; may be empty then).
/// Throws InputError for a metric token outside the vocabulary, a position outside the prompt or without
/// logits, a kl metric without `clean`, and as runBackward (budget); Cancelled.
MetricGradients metricGradients(const Model& model, const ActivationCache& run, const PatchingMetric& metric,
                                const RowVector& clean, const BackwardOptions& options = {}, const Progress& progress = {});

/// The one finite-gradient guard: throws InputError "The gradient is not finite from HOOK on<context>." when the
/// backward met a non-finite value (GradientCache::firstNonFinite); `context` says where (" at EAP-IG step 3",
/// ": attribution patching cannot estimate the cells", or nothing).
void requireFiniteGradients(const MetricGradients& g, const QString& context = {});

} // namespace attnscope
