#include "model/analysis/gradients/input_attribution.h"

#include "model/analysis/common/input_checks.h"
#include "model/analysis/gradients/metric_gradients.h"
#include "model/core/errors.h"
#include "model/transformer/forward.h"

#include <QCoreApplication>
#include <cmath>

namespace attnscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("gradients", text); }

} // namespace

ActivationCache runWithTokenEmbedding(const Model& model, std::span<const int> tokens, const Matrix& embedding, const Matrix& posEmbed,
                                      bool allLogits) {
    ForwardOptions o;
    o.cacheHeadResults = false;
    o.allLogits = allLogits;
    auto hooks = std::make_shared<ForwardHooks>();
    hooks->resid_pre = [start = Matrix(embedding + posEmbed)](int layer, Matrix& x) { // a copy: the cache keeps the hooks
        if (layer == 0) x = start;
    };
    o.hooks = hooks;
    return runForward(model, tokens, o);
}

QString saliencyMethodName(SaliencyMethod m) {
    return m == SaliencyMethod::GradientTimesInput ? QStringLiteral("grad-x-input") : QStringLiteral("ig");
}

InputAttribution attributeInput(const Model& model, std::span<const int> tokens, const InputAttributionOptions& options,
                                const Progress& progress) {
    const ModelConfig& cfg = model.config();
    if (options.metric.kind == PatchingMetricKind::KL)
        throw InputError(tr("Input attribution takes logit_diff, logit, prob or logprob: kl needs a second run to compare with."));
    checkPatchingMetric(cfg, options.metric);
    if (options.baselineToken >= cfg.d_vocab)
        throw InputError(tr("The baseline token id %1 is outside the vocabulary [0, %2).").arg(options.baselineToken).arg(cfg.d_vocab));
    if (options.method == SaliencyMethod::IntegratedGradients && options.steps < 1)
        throw InputError(tr("Integrated gradients need at least 1 step, got %1.").arg(options.steps));

    ForwardOptions plain;
    plain.cacheHeadResults = false;
    const ActivationCache input = runForward(model, tokens, plain);
    const int S = input.nPositions();
    InputAttribution out;
    out.options = options;
    out.position = resolvePosition(options.metric.position, S);
    PatchingMetric metric = options.metric;
    metric.position = out.position;

    Matrix baseline = Matrix::Zero(S, cfg.d_model);
    if (options.baselineToken >= 0) {
        RowVector row(cfg.d_model);
        model.globals().W_E.copyRow(options.baselineToken, row.data());
        baseline.rowwise() = row * float(cfg.embed_scale); // as the forward embeds it (Gemma: · √d_model)
    }
    const Matrix delta = input.embed - baseline;
    const int passes = options.method == SaliencyMethod::IntegratedGradients ? options.steps + 1 : 2;
    int done = 0;
    progress.step(done, passes, QStringLiteral("input"));

    const MetricGradients atInput = metricGradients(model, input, metric, RowVector(), {}, {});
    if (options.method == SaliencyMethod::GradientTimesInput) requireFiniteGradients(atInput);
    out.metricInput = atInput.value;
    progress.step(++done, passes, QStringLiteral("baseline"));
    const ActivationCache atBaseline = runWithTokenEmbedding(model, tokens, baseline, input.pos_embed);
    out.metricBaseline = patchingMetricValue(metric, atBaseline.logits.row(atBaseline.logitRow(out.position)), RowVector());

    Eigen::MatrixXd gradSum = Eigen::MatrixXd::Zero(S, cfg.d_model);
    if (options.method == SaliencyMethod::GradientTimesInput) {
        gradSum = atInput.gradients.embed.cast<double>();
    } else {
        // the Riemann midpoint rule (Captum's riemann_middle): α at the midpoints of `steps` equal intervals
        for (int k = 0; k < options.steps; ++k) {
            progress.step(++done, passes, QStringLiteral("step %1 of %2").arg(k + 1).arg(options.steps));
            const float alpha = float((k + 0.5) / options.steps);
            const Matrix point = baseline + alpha * delta;
            const MetricGradients g = metricGradients(model, runWithTokenEmbedding(model, tokens, point, input.pos_embed), metric, RowVector(), {}, {});
            requireFiniteGradients(g, tr(" at α = %1").arg(alpha));
            gradSum += g.gradients.embed.cast<double>();
        }
        gradSum /= double(options.steps);
    }
    out.attributions.resize(size_t(S));
    out.sum = 0;
    for (int p = 0; p < S; ++p) {
        out.attributions[size_t(p)] = (delta.row(p).cast<double>().array() * gradSum.row(p).array()).sum();
        out.sum += out.attributions[size_t(p)];
    }
    const double change = out.metricInput - out.metricBaseline;
    out.completenessError = std::abs(out.sum - change) / std::max(std::abs(change), 1e-12);
    progress.step(passes, passes, QStringLiteral("done"));
    return out;
}

} // namespace attnscope
