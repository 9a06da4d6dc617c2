#include "views/circuits/patching_view.h"

#include "model/analysis/gradients/attribution_patching.h"
#include "model/transformer/prompt.h"
#include "views/circuits/circuit_inputs.h"
#include "views/circuits/estimate_scatter.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QVBoxLayout>
#include <cmath>

namespace attnscope {

PatchingAxes patchingAxes(const ModelConfig& cfg, const PatchingOptions& options, const QStringList& positions) {
    PatchingAxes a;
    const bool heads = isHeadHook(options.hook);
    if (heads && options.byPosition) {
        for (int l = 0; l < cfg.n_layers; ++l)
            for (int h = 0; h < cfg.n_heads; ++h) a.rows << QStringLiteral("L%1H%2").arg(l).arg(h);
        a.rowTitle = QObject::tr("head");
    } else {
        for (int l = 0; l < cfg.n_layers; ++l) a.rows << QStringLiteral("L%1").arg(l);
        a.rowTitle = QObject::tr("layer");
    }
    if (heads && !options.byPosition) {
        for (int h = 0; h < cfg.n_heads; ++h) a.cols << QStringLiteral("H%1").arg(h);
        a.colTitle = QObject::tr("head");
    } else {
        for (int p = 0; p < positions.size(); ++p) a.cols << QStringLiteral("%1 %2").arg(p).arg(positions[p]);
        a.colTitle = QObject::tr("position");
    }
    return a;
}

namespace {
/// The method as the view names it: "attribution patching", "AtP*".
QString methodTitle(PatchingMethod m) {
    return m == PatchingMethod::AtpStar ? QObject::tr("AtP*") : m == PatchingMethod::Attribution ? QObject::tr("attribution patching")
                                                                                                  : QObject::tr("activation patching");
}
} // namespace

PatchingView::PatchingView(CircuitInputs* inputs, QWidget* parent)
    : QWidget(parent), inputs_(inputs), tool_(tr("Run sweep"), tr("Enter a corrupted prompt and a metric, then Run sweep.")) {
    auto* layout = new QVBoxLayout(this);
    hookCombo_ = new QComboBox;
    for (PatchHook h : {PatchHook::ResidPre, PatchHook::AttnOut, PatchHook::MlpOut, PatchHook::Z, PatchHook::Q, PatchHook::K,
                        PatchHook::V, PatchHook::Pattern})
        hookCombo_->addItem(patchHookName(h), int(h));
    hookCombo_->setCurrentIndex(hookCombo_->findData(int(PatchHook::Z)));
    hookCombo_->setToolTip(tr("The activation replaced: resid_pre/attn_out/mlp_out per layer and position; z, q, k, v, pattern per head"));
    byPosition_ = new QCheckBox(tr("by position"));
    byPosition_->setToolTip(tr("Heads: one cell per (head, position) instead of one per head over every position"));
    ablationCombo_ = new QComboBox;
    for (AblationKind k : {AblationKind::None, AblationKind::Zero, AblationKind::Mean, AblationKind::ReferenceMean, AblationKind::Resample})
        ablationCombo_->addItem(k == AblationKind::None ? tr("patch (no ablation)") : ablationKindName(k) + tr(" ablation"), int(k));
    ablationCombo_->setItemData(1, tr("the activation := 0, in the clean run"), Qt::ToolTipRole);
    ablationCombo_->setItemData(2, tr("the activation := its mean over the clean prompt's positions, in the clean run"), Qt::ToolTipRole);
    ablationCombo_->setItemData(3, tr("the activation := its mean over the reference prompts, in the clean run"), Qt::ToolTipRole);
    ablationCombo_->setItemData(4, tr("the activation := the corrupted run's, in the clean run"), Qt::ToolTipRole);
    references_ = new QLineEdit;
    references_->setPlaceholderText(tr("reference prompts, separated by |"));
    references_->setEnabled(false);
    normalised_ = new QCheckBox(tr("normalised"));
    normalised_->setChecked(true);
    normalised_->setToolTip(tr("(m − m_corrupt) / (m_clean − m_corrupt): 0 = as the corrupted run, 1 = as the clean run"));
    methodCombo_ = new QComboBox;
    methodCombo_->addItem(tr("activation patching"), int(PatchingMethod::Activation));
    methodCombo_->addItem(tr("attribution patching (AtP)"), int(PatchingMethod::Attribution));
    methodCombo_->addItem(tr("AtP*"), int(PatchingMethod::AtpStar));
    methodCombo_->setItemData(0, tr("one patched forward pass per cell: the actual effect"), Qt::ToolTipRole);
    methodCombo_->setItemData(1, tr("every cell estimated to first order from one backward pass: (a_other − a_base)·∂metric/∂a"),
                              Qt::ToolTipRole);
    methodCombo_->setItemData(2, tr("attribution patching with q and k cells through the patched head's exact softmax (Kramár et al. 2024)"),
                              Qt::ToolTipRole);
    compare_ = new QCheckBox(tr("compare"));
    compare_->setToolTip(tr("Also run activation patching: both heatmaps on one colour scale and a scatter of estimate against actual"));
    compare_->setEnabled(false);
    layout->addLayout(tool_.controlRow({hookCombo_, byPosition_, ablationCombo_, references_, methodCombo_, compare_, normalised_}));
    endpoints_ = textLine();
    layout->addWidget(endpoints_);
    layout->addWidget(tool_.statusLabel());
    heatmap_ = new MatrixHeatmap;
    heatmap_->setEmptyText(tr("Run a sweep: every cell is the metric after one activation was patched."));
    estimateHeatmap_ = new MatrixHeatmap;
    estimateHeatmap_->setEmptyText(tr("Run a sweep: every cell is the metric estimated from one backward pass."));
    scatter_ = new EstimateScatter;
    pointInfo_ = textLine();
    comparison_ = new QWidget;
    auto* comparisonLayout = new QVBoxLayout(comparison_);
    comparisonLayout->setContentsMargins(0, 0, 0, 0);
    comparisonLayout->addWidget(scatter_, 1);
    comparisonLayout->addWidget(pointInfo_);
    layout->addWidget(splitPanes(Qt::Vertical, {{splitPanes(Qt::Horizontal, {{heatmap_, 1}, {estimateHeatmap_, 1}}), 3}, {comparison_, 2}}), 1);

    QStringList hooks, ablations;
    for (int i = 0; i < hookCombo_->count(); ++i) hooks << patchHookName(PatchHook(hookCombo_->itemData(i).toInt()));
    for (int i = 0; i < ablationCombo_->count(); ++i) ablations << ablationKindName(AblationKind(ablationCombo_->itemData(i).toInt()));
    tool_.settings().add(QStringLiteral("activation"), hookCombo_, hooks);
    tool_.settings().add(QStringLiteral("by_position"), byPosition_);
    tool_.settings().add(QStringLiteral("ablation"), ablationCombo_, ablations);
    QStringList methods;
    for (int i = 0; i < methodCombo_->count(); ++i) methods << patchingMethodName(PatchingMethod(methodCombo_->itemData(i).toInt()));
    tool_.settings().add(QStringLiteral("method"), methodCombo_, methods);
    tool_.settings().add(QStringLiteral("compare"), compare_);

    connect(&tool_, &BackgroundTool::runRequested, this, &PatchingView::run);
    connect(ablationCombo_, &QComboBox::currentIndexChanged, this,
            [this] { references_->setEnabled(ablation() == AblationKind::ReferenceMean); });
    connect(normalised_, &QCheckBox::toggled, this, &PatchingView::redraw);
    connect(methodCombo_, &QComboBox::currentIndexChanged, this, &PatchingView::methodChanged);
    connect(compare_, &QCheckBox::toggled, this, &PatchingView::redraw);
    connect(scatter_, &EstimateScatter::pointClicked, this, [this](int, const QString& text) { pointInfo_->setText(tr("Selected: ") + text); });
    tool_.setCancelledHandler([this] {
        if (!sweep_) tool_.setStatus(tr("Cancelled before the estimate was done.")); // attribution patching alone
        else tool_.setStatus(tr("Cancelled after %1 of %2 cells.").arg(cellsShown()).arg(sweep_->cells.size()));
    });
    tool_.setProgressInStatus(true);
    tool_.setFailedHandler([this](const QString& message) {
        tool_.setStatus(message);
        if (estimate_ && estimate_->cellsDone == 0) { // the estimate itself failed: its message in place of its heatmap
            estimateError_ = message;
            estimate_.reset();
            redraw();
        }
    });
    methodChanged();
}

void PatchingView::methodChanged() {
    const bool estimate = method() != PatchingMethod::Activation;
    if (estimate) setAblation(AblationKind::None);
    ablationCombo_->setEnabled(!estimate);
    ablationCombo_->setToolTip(estimate ? tr("Attribution patching and AtP* estimate patching from the other run only; choose "
                                             "activation patching for an ablation.")
                                        : QString());
    compare_->setEnabled(estimate);
    redraw();
}

void PatchingView::setContext(std::shared_ptr<const Model> model) {
    if (model == model_) return;
    tool_.newContext();
    model_ = std::move(model);
    sweep_.reset();
    estimate_.reset();
    estimateError_.clear();
    redraw();
}

void PatchingView::restoreSettings(const PanelStateReader& reader) {
    tool_.settings().restore(reader);
    references_->setEnabled(ablation() == AblationKind::ReferenceMean);
    methodChanged();
}

void PatchingView::setHook(PatchHook hook) { hookCombo_->setCurrentIndex(hookCombo_->findData(int(hook))); }
PatchHook PatchingView::hook() const { return PatchHook(hookCombo_->currentData().toInt()); }
void PatchingView::setByPosition(bool on) { byPosition_->setChecked(on); }
bool PatchingView::byPosition() const { return byPosition_->isChecked(); }
void PatchingView::setAblation(AblationKind kind) { ablationCombo_->setCurrentIndex(ablationCombo_->findData(int(kind))); }
AblationKind PatchingView::ablation() const { return AblationKind(ablationCombo_->currentData().toInt()); }
void PatchingView::setReferencePrompts(const QString& text) { references_->setText(text); }
void PatchingView::setNormalised(bool on) { normalised_->setChecked(on); }
QString PatchingView::endpointsText() const { return endpoints_->text(); }
void PatchingView::setMethod(PatchingMethod m) { methodCombo_->setCurrentIndex(methodCombo_->findData(int(m))); }
PatchingMethod PatchingView::method() const { return PatchingMethod(methodCombo_->currentData().toInt()); }
void PatchingView::setCompare(bool on) { compare_->setChecked(on); }
bool PatchingView::compare() const { return compare_->isEnabled() && compare_->isChecked(); }
QString PatchingView::selectedPointText() const { return pointInfo_->text(); }

void PatchingView::run() {
    if (!model_) return;
    PatchingOptions o;
    o.hook = hook();
    o.byPosition = byPosition();
    o.ablation = ablation();
    const PatchingMethod m = method();
    const bool activation = m == PatchingMethod::Activation || compare();
    CircuitRunSpec spec;
    std::vector<std::vector<int>> reference;
    try {
        if (m != PatchingMethod::Activation && o.ablation != AblationKind::None)
            throw InputError(tr("Attribution patching and AtP* estimate patching only; choose activation patching for a %1 ablation.")
                                 .arg(ablationKindName(o.ablation)));
        spec = inputs_->spec(o.ablation == AblationKind::None || o.ablation == AblationKind::Resample);
        if (o.ablation == AblationKind::ReferenceMean) {
            for (const QString& r : references_->text().split(QLatin1Char('|'), Qt::SkipEmptyParts))
                if (!r.trimmed().isEmpty()) reference.push_back(inputs_->tokenize(r.trimmed()));
            if (reference.empty()) throw InputError(tr("Reference-mean ablation: type reference prompts separated by |."));
        }
    } catch (const InputError& e) {
        tool_.reject(e.message());
        return;
    }
    o.direction = spec.direction;
    o.metric = spec.metric;
    positionLabels_ = tokenLabels(model_->tokenizer(), spec.clean);
    metricDescription_ = spec.metricDescription;
    pointInfo_->clear();
    // the empty grids at once, then the cells as they come
    PatchingSweep empty;
    empty.options = o;
    empty.cells = patchingCells(model_->config(), int(spec.clean.size()), o);
    sweep_.reset();
    estimate_.reset();
    estimateError_.clear();
    if (activation) sweep_ = empty;
    if (m != PatchingMethod::Activation) {
        estimate_ = empty;
        estimate_->method = m;
    }
    endpoints_->setText(tr("Running the clean and corrupted prompts…"));
    redraw();
    tool_.start(tr("Running…"), [this, model = model_, spec, o, reference, m, activation](const BackgroundTask::Context& ctx) -> std::function<void()> {
        const PatchingRuns runs = preparePatchingRuns(*model, spec.clean, spec.corrupt, reference, ctx.progress);
        // the estimate first (one backward pass), then the activation sweep filling in beside it
        std::optional<PatchingSweep> estimate;
        QString estimateError;
        if (m != PatchingMethod::Activation) {
            try {
                estimate = runAttributionPatching(*model, runs, o, m == PatchingMethod::AtpStar, ctx.progress);
            } catch (const InputError& e) { // a gradient that is not finite names its hook; the actual sweep can still run
                if (!activation) throw;
                estimateError = e.message();
            }
            ctx.post([this, estimate, estimateError] {
                estimate_ = estimate;
                estimateError_ = estimateError;
                redraw();
            });
        }
        std::optional<PatchingSweep> sweep;
        if (activation)
            sweep = runPatchingSweep(*model, runs, o, ctx.progress, [&](const PatchingSweep& s, size_t, size_t) {
                ctx.post([this, s] {
                    sweep_ = s;
                    redraw();
                });
            });
        return [this, sweep = std::move(sweep), estimate = std::move(estimate), estimateError, m] {
            sweep_ = sweep;
            estimate_ = estimate;
            estimateError_ = estimateError;
            redraw();
            const PatchingSweep& shown = sweep ? *sweep : *estimate;
            QString status = sweep ? tr("Done: %1 cells.").arg(sweep->cells.size())
                                   : tr("Done: %1 cells estimated by %2 from one backward pass.")
                                         .arg(shown.cells.size())
                                         .arg(methodTitle(m));
            if (sweep && estimate) status += tr(" The %1 estimate against activation patching: Pearson r = %2.")
                                                 .arg(methodTitle(m))
                                                 .arg(scatter_->correlation(), 0, 'f', 3);
            if (!estimateError.isEmpty()) status += tr(" The estimate failed: %1").arg(estimateError);
            tool_.setStatus(status);
            emit statusMessage(tr("Patching sweep of %1 done.").arg(patchHookName(shown.options.hook)));
        };
    });
}

MatrixFigure PatchingView::sweepFigure(const PatchingSweep& s, bool norm) const {
    const ModelConfig& cfg = model_->config();
    const PatchingAxes axes = patchingAxes(cfg, s.options, positionLabels_);
    MatrixFigure f;
    f.values = patchingGrid(cfg, int(positionLabels_.size()), s, norm);
    f.rowLabels = axes.rows;
    f.colLabels = axes.cols;
    f.rowTitle = axes.rowTitle;
    f.colTitle = axes.colTitle;
    QString what = s.options.ablation == AblationKind::None
                       ? tr("%1 patching (%2)").arg(patchHookName(s.options.hook), patchDirectionName(s.options.direction))
                       : tr("%1 %2 ablation").arg(patchHookName(s.options.hook), ablationKindName(s.options.ablation));
    if (s.method != PatchingMethod::Activation) // estimates patch only
        what = tr("%1 %2 (%3)").arg(patchHookName(s.options.hook), s.method == PatchingMethod::AtpStar ? tr("AtP*") : tr("AtP"),
                                    patchDirectionName(s.options.direction));
    f.title = what + QStringLiteral(": ") + metricDescription_;
    f.valueTitle = norm ? tr("normalised metric") : metricDescription_;
    f.scale = MatrixFigure::Scale::Signed;
    return f;
}

void PatchingView::redraw() {
    const bool estimating = method() != PatchingMethod::Activation;
    heatmap_->setVisible(!estimating || compare());
    estimateHeatmap_->setVisible(estimating);
    comparison_->setVisible(estimating && compare());
    estimateHeatmap_->setEmptyText(estimateError_.isEmpty()
                                       ? tr("Run a sweep: every cell is the metric estimated from one backward pass.")
                                       : tr("No estimate: %1").arg(estimateError_));
    if (!model_ || (!sweep_ && !estimate_)) {
        heatmap_->setFigure({});
        estimateHeatmap_->setFigure({});
        scatter_->clear();
        endpoints_->clear();
        return;
    }
    const bool norm = normalised_->isChecked();
    std::optional<MatrixFigure> actual, estimate;
    if (sweep_) actual = sweepFigure(*sweep_, norm);
    if (estimate_) estimate = sweepFigure(*estimate_, norm);
    if (actual && estimate) { // side by side: one colour scale, and titles short enough for half the width (the
                              // metric is named in the line above)
        actual->title = actual->title.section(QStringLiteral(": "), 0, 0);
        estimate->title = estimate->title.section(QStringLiteral(": "), 0, 0);
        double limit = 0;
        for (const MatrixFigure* f : {&*actual, &*estimate})
            for (Eigen::Index i = 0; i < f->values.size(); ++i)
                if (std::isfinite(f->values.data()[i])) limit = std::max(limit, double(std::abs(f->values.data()[i])));
        actual->signedLimit = estimate->signedLimit = limit;
    }
    heatmap_->setFigure(actual.value_or(MatrixFigure{}));
    estimateHeatmap_->setFigure(estimate.value_or(MatrixFigure{}));
    if (sweep_ && estimate_) scatter_->setSweeps(*sweep_, *estimate_, norm, positionLabels_);
    else scatter_->clear();
    const PatchingSweep& s = sweep_ ? *sweep_ : *estimate_;
    if (sweep_) emit cellsShownChanged(s.cellsDone);
    if (s.cellsDone > 0 || !std::isnan(s.corrupt) || s.clean != 0)
        endpoints_->setText(tr("%1 at position %2 — clean run: %3, corrupted run: %4. Normalised = (m − corrupted) / (clean − "
                               "corrupted): 0 = as the corrupted run, 1 = as the clean run.")
                                .arg(metricDescription_)
                                .arg(s.position)
                                .arg(s.clean, 0, 'g', 6)
                                .arg(std::isnan(s.corrupt) ? tr("none") : QString::number(s.corrupt, 'g', 6)));
}

} // namespace attnscope
