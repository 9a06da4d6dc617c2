#include "views/circuits/saliency_view.h"

#include "model/transformer/prompt.h"
#include "views/circuits/circuit_inputs.h"
#include "views/circuits/token_chips.h"
#include "views/common/token_picker.h"

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QVBoxLayout>
#include <cmath>

namespace attnscope {

namespace {
QString kEmptyText() {
    return QObject::tr("Attribute: each token of the clean prompt as a chip, red where it raises the metric, blue where it lowers it.");
}
} // namespace

SaliencyView::SaliencyView(CircuitInputs* inputs, QWidget* parent)
    : QWidget(parent), inputs_(inputs), tool_(tr("Attribute"), tr("Pick a metric above, then Attribute: how much each token of the clean prompt adds to it.")) {
    auto* layout = new QVBoxLayout(this);
    methodCombo_ = new QComboBox;
    methodCombo_->addItem(tr("integrated gradients"), int(SaliencyMethod::IntegratedGradients));
    methodCombo_->addItem(tr("gradient × input"), int(SaliencyMethod::GradientTimesInput));
    methodCombo_->setItemData(0, tr("(e − b)·mean of ∂metric/∂e along the straight path from the baseline b to the embeddings e"), Qt::ToolTipRole);
    methodCombo_->setItemData(1, tr("(e − b)·∂metric/∂e at the input: one backward pass"), Qt::ToolTipRole);
    steps_ = new QSpinBox;
    steps_->setRange(1, 4096);
    steps_->setValue(32);
    steps_->setPrefix(tr("steps "));
    steps_->setToolTip(tr("Integrated gradients: interpolation points (the Riemann midpoint rule); more steps, smaller completeness error"));
    baselineCombo_ = new QComboBox;
    baselineCombo_->addItem(tr("baseline: zero embedding"));
    baselineCombo_->addItem(tr("baseline: token"));
    baselineToken_ = new TokenPicker;
    baselineToken_->setPlaceholderText(tr("baseline token, e.g. ␣the"));
    completeness_ = textLine();
    chips_ = new TokenChips;
    chips_->setEmptyText(kEmptyText());
    auto* result = new QWidget;
    auto* resultLayout = new QVBoxLayout(result);
    resultLayout->setContentsMargins(0, 0, 0, 0);
    resultLayout->addWidget(completeness_);
    resultLayout->addWidget(chips_);
    resultLayout->addStretch(1);
    tool_.addTo(layout, {methodCombo_, steps_, baselineCombo_, baselineToken_}, result);

    tool_.settings().add(QStringLiteral("saliency_method"), methodCombo_,
                         {saliencyMethodName(SaliencyMethod::IntegratedGradients), saliencyMethodName(SaliencyMethod::GradientTimesInput)});
    tool_.settings().add(QStringLiteral("ig_steps"), steps_);
    tool_.settings().add(QStringLiteral("baseline"), baselineCombo_, {QStringLiteral("zero"), QStringLiteral("token")});
    tool_.settings().add(QStringLiteral("baseline_token"), baselineToken_->lineEdit());
    connect(&tool_, &BackgroundTool::runRequested, this, &SaliencyView::run);
    connect(methodCombo_, &QComboBox::currentIndexChanged, this, &SaliencyView::updateInputs);
    connect(baselineCombo_, &QComboBox::currentIndexChanged, this, &SaliencyView::updateInputs);
    tool_.setProgressInStatus(true);
    tool_.setFailedHandler([this](const QString& message) { // a gradient that is not finite names its hook, in place of the chips
        tool_.setStatus(message);
        attribution_.reset();
        chips_->setChips({}, {}, {});
        chips_->setEmptyText(tr("No attribution: %1").arg(message));
        completeness_->clear();
    });
    updateInputs();
}

void SaliencyView::updateInputs() {
    steps_->setEnabled(method() == SaliencyMethod::IntegratedGradients);
    baselineToken_->setEnabled(model_ && baselineCombo_->currentIndex() == 1);
}

void SaliencyView::setContext(std::shared_ptr<const Model> model) {
    if (model == model_) return;
    tool_.newContext();
    model_ = std::move(model);
    baselineToken_->setTokenizer(model_ ? &model_->tokenizer() : nullptr);
    attribution_.reset();
    chips_->setChips({}, {}, {});
    completeness_->clear();
    updateInputs();
}

void SaliencyView::restoreSettings(const PanelStateReader& reader) {
    tool_.settings().restore(reader);
    baselineToken_->setText(baselineToken_->lineEdit()->text()); // resolve the restored text
    updateInputs();
}

void SaliencyView::setMethod(SaliencyMethod m) { methodCombo_->setCurrentIndex(methodCombo_->findData(int(m))); }
SaliencyMethod SaliencyView::method() const { return SaliencyMethod(methodCombo_->currentData().toInt()); }
void SaliencyView::setSteps(int steps) { steps_->setValue(steps); }
void SaliencyView::setBaselineToken(int token) {
    baselineCombo_->setCurrentIndex(token < 0 ? 0 : 1);
    if (token >= 0) baselineToken_->setTokenId(token);
    else baselineToken_->clear();
}
QString SaliencyView::completenessText() const { return completeness_->text(); }

void SaliencyView::run() {
    if (!model_) return;
    InputAttributionOptions o;
    o.method = method();
    o.steps = steps_->value();
    CircuitRunSpec spec;
    try {
        spec = inputs_->spec(false);
        if (spec.metric.kind == PatchingMetricKind::KL)
            throw InputError(tr("Saliency needs a metric of the clean run alone (logit difference, logit, probability, log-probability); "
                                "KL compares two runs."));
        if (baselineCombo_->currentIndex() == 1) {
            if (!baselineToken_->tokenId())
                throw InputError(tr("Baseline: pick the token whose embedding replaces every token%1.")
                                     .arg(baselineToken_->problem().isEmpty() ? QString() : QStringLiteral(" (") + baselineToken_->problem() + QStringLiteral(")")));
            o.baselineToken = *baselineToken_->tokenId();
        }
    } catch (const InputError& e) {
        tool_.reject(e.message());
        return;
    }
    o.metric = spec.metric;
    const QStringList labels = tokenLabels(model_->tokenizer(), spec.clean);
    const QString metric = spec.metricDescription;
    const QString baseline = o.baselineToken < 0 ? tr("zero baseline") : tr("baseline %1").arg(model_->tokenizer().displayToken(o.baselineToken));
    tool_.start(tr("Attributing…"), [this, model = model_, spec, o, labels, metric, baseline](const BackgroundTask::Context& ctx) -> std::function<void()> {
        InputAttribution a = attributeInput(*model, spec.clean, o, ctx.progress);
        // gradient × input does not check its one gradient: a NaN or Inf attribution is reported, never drawn as a blank chip
        for (size_t p = 0; p < a.attributions.size(); ++p)
            if (!std::isfinite(a.attributions[p]))
                throw InputError(tr("The attribution of position %1 is not finite: the gradient overflowed or is NaN (metric(input) = %2).")
                                     .arg(p)
                                     .arg(a.metricInput));
        return [this, a = std::move(a), labels, metric, baseline] {
            attribution_ = a;
            chips_->setEmptyText(kEmptyText());
            const bool ig = a.options.method == SaliencyMethod::IntegratedGradients;
            const QString what = ig ? tr("integrated gradients (%1 steps, %2)").arg(a.options.steps).arg(baseline)
                                    : tr("gradient × input (%1)").arg(baseline);
            chips_->setChips(tr("%1 at position %2, %3").arg(metric).arg(a.position).arg(what), labels, a.attributions);
            completeness_->setText(tr("Σ attributions = %1, metric(input) − metric(baseline) = %2 − %3 = %4, error %5%6")
                                       .arg(a.sum, 0, 'g', 6)
                                       .arg(a.metricInput, 0, 'g', 6)
                                       .arg(a.metricBaseline, 0, 'g', 6)
                                       .arg(a.metricInput - a.metricBaseline, 0, 'g', 6)
                                       .arg(a.completenessError, 0, 'g', 3)
                                       .arg(ig ? tr(" (relative; more steps make it smaller)")
                                               : tr(" (relative; gradient × input is complete only for a linear model)")));
            tool_.setStatus(tr("Done: %1 tokens.").arg(a.attributions.size()));
        };
    });
}

} // namespace attnscope
