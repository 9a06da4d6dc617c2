#include "views/circuits/patching_view.h"

#include "model/transformer/prompt.h"
#include "views/circuits/circuit_inputs.h"
#include "views/figures/matrix_heatmap.h"

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
    layout->addLayout(tool_.controlRow({hookCombo_, byPosition_, ablationCombo_, references_, normalised_}));
    endpoints_ = textLine();
    layout->addWidget(endpoints_);
    layout->addWidget(tool_.statusLabel());
    heatmap_ = new MatrixHeatmap;
    heatmap_->setEmptyText(tr("Run a sweep: every cell is the metric after one activation was patched."));
    layout->addWidget(heatmap_, 1);

    QStringList hooks, ablations;
    for (int i = 0; i < hookCombo_->count(); ++i) hooks << patchHookName(PatchHook(hookCombo_->itemData(i).toInt()));
    for (int i = 0; i < ablationCombo_->count(); ++i) ablations << ablationKindName(AblationKind(ablationCombo_->itemData(i).toInt()));
    tool_.settings().add(QStringLiteral("activation"), hookCombo_, hooks);
    tool_.settings().add(QStringLiteral("by_position"), byPosition_);
    tool_.settings().add(QStringLiteral("ablation"), ablationCombo_, ablations);

    connect(&tool_, &BackgroundTool::runRequested, this, &PatchingView::run);
    connect(ablationCombo_, &QComboBox::currentIndexChanged, this,
            [this] { references_->setEnabled(ablation() == AblationKind::ReferenceMean); });
    connect(normalised_, &QCheckBox::toggled, this, &PatchingView::redraw);
    tool_.setCancelledHandler([this] {
        tool_.setStatus(tr("Cancelled after %1 of %2 cells.").arg(cellsShown()).arg(sweep_ ? int(sweep_->cells.size()) : 0));
    });
    tool_.setProgressInStatus(true);
}

void PatchingView::setContext(std::shared_ptr<const Model> model) {
    if (model == model_) return;
    tool_.newContext();
    model_ = std::move(model);
    sweep_.reset();
    redraw();
}

void PatchingView::restoreSettings(const PanelStateReader& reader) {
    tool_.settings().restore(reader);
    references_->setEnabled(ablation() == AblationKind::ReferenceMean);
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

void PatchingView::run() {
    if (!model_) return;
    PatchingOptions o;
    o.hook = hook();
    o.byPosition = byPosition();
    o.ablation = ablation();
    CircuitRunSpec spec;
    std::vector<std::vector<int>> reference;
    try {
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
    // the empty grid at once, then the cells as they come
    PatchingSweep empty;
    empty.options = o;
    empty.cells = patchingCells(model_->config(), int(spec.clean.size()), o);
    sweep_ = empty;
    endpoints_->setText(tr("Running the clean and corrupted prompts…"));
    redraw();
    tool_.start(tr("Running…"), [this, model = model_, spec, o, reference](const BackgroundTask::Context& ctx) -> std::function<void()> {
        const PatchingRuns runs = preparePatchingRuns(*model, spec.clean, spec.corrupt, reference, ctx.progress);
        PatchingSweep sweep = runPatchingSweep(*model, runs, o, ctx.progress, [&](const PatchingSweep& s, size_t, size_t) {
            ctx.post([this, s] {
                sweep_ = s;
                redraw();
            });
        });
        return [this, sweep = std::move(sweep)] {
            sweep_ = sweep;
            redraw();
            tool_.setStatus(tr("Done: %1 cells.").arg(sweep.cells.size()));
            emit statusMessage(tr("Patching sweep of %1 done.").arg(patchHookName(sweep.options.hook)));
        };
    });
}

void PatchingView::redraw() {
    if (!model_ || !sweep_) {
        heatmap_->setFigure({});
        endpoints_->clear();
        return;
    }
    const PatchingSweep& s = *sweep_;
    const ModelConfig& cfg = model_->config();
    const bool norm = normalised_->isChecked();
    const PatchingAxes axes = patchingAxes(cfg, s.options, positionLabels_);
    MatrixFigure f;
    f.values = patchingGrid(cfg, int(positionLabels_.size()), s, norm);
    f.rowLabels = axes.rows;
    f.colLabels = axes.cols;
    f.rowTitle = axes.rowTitle;
    f.colTitle = axes.colTitle;
    const QString what = s.options.ablation == AblationKind::None
                             ? tr("%1 patching (%2)").arg(patchHookName(s.options.hook), patchDirectionName(s.options.direction))
                             : tr("%1 %2 ablation").arg(patchHookName(s.options.hook), ablationKindName(s.options.ablation));
    f.title = what + QStringLiteral(": ") + metricDescription_;
    f.valueTitle = norm ? tr("normalised metric") : metricDescription_;
    f.scale = MatrixFigure::Scale::Signed;
    heatmap_->setFigure(f);
    emit cellsShownChanged(s.cellsDone);
    if (s.cellsDone > 0 || !std::isnan(s.corrupt) || s.clean != 0)
        endpoints_->setText(tr("%1 at position %2 — clean run: %3, corrupted run: %4. Normalised = (m − corrupted) / (clean − "
                               "corrupted): 0 = as the corrupted run, 1 = as the clean run.")
                                .arg(metricDescription_)
                                .arg(s.position)
                                .arg(s.clean, 0, 'g', 6)
                                .arg(std::isnan(s.corrupt) ? tr("none") : QString::number(s.corrupt, 'g', 6)));
}

} // namespace attnscope
