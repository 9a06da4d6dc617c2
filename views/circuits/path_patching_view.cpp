#include "views/circuits/path_patching_view.h"

#include "views/circuits/circuit_inputs.h"
#include "views/figures/matrix_heatmap.h"

#include <QLineEdit>
#include <QVBoxLayout>

namespace attnscope {

PathPatchingView::PathPatchingView(CircuitInputs* inputs, QWidget* parent)
    : QWidget(parent), inputs_(inputs),
      tool_(tr("Run path patching"), tr("Senders × receivers: the normalised metric when only that path carries the sender's change.")) {
    senders_ = new QLineEdit;
    senders_->setPlaceholderText(tr("senders L.H,… (empty = every head)"));
    senders_->setToolTip(tr("Heads whose z is taken from the other run, e.g. 0.0,0.1"));
    receivers_ = new QLineEdit(QStringLiteral("logits"));
    receivers_->setToolTip(tr("Where the sender's effect may enter: L.H.q, L.H.k, L.H.v (that head's input) or logits (the direct path), "
                              "comma-separated. Every other head stays frozen at its base-run value."));
    table_ = new MatrixHeatmap;
    table_->setEmptyText(tr("Run path patching to fill the sender × receiver table."));
    tool_.addTo(new QVBoxLayout(this), {senders_, receivers_}, table_);
    connect(&tool_, &BackgroundTool::runRequested, this, &PathPatchingView::run);
}

void PathPatchingView::setContext(std::shared_ptr<const Model> model) {
    if (model == model_) return;
    tool_.newContext();
    model_ = std::move(model);
    result_.reset();
    redraw();
}

void PathPatchingView::setSenders(const QString& text) { senders_->setText(text); }
void PathPatchingView::setReceivers(const QString& text) { receivers_->setText(text); }

void PathPatchingView::run() {
    if (!model_) return;
    PathPatchingOptions o;
    CircuitRunSpec spec;
    try {
        spec = inputs_->spec(true);
        if (!senders_->text().trimmed().isEmpty()) o.senders = parseHeadList(model_->config(), senders_->text());
        o.receivers = parseReceiverList(model_->config(), receivers_->text());
    } catch (const InputError& e) {
        tool_.reject(e.message());
        return;
    }
    o.direction = spec.direction;
    o.metric = spec.metric;
    metricDescription_ = spec.metricDescription;
    tool_.start(tr("Running…"), [this, model = model_, spec, o](const BackgroundTask::Context& ctx) -> std::function<void()> {
        const PatchingRuns runs = preparePatchingRuns(*model, spec.clean, spec.corrupt, {}, ctx.progress);
        PathPatchingResult r = runPathPatching(*model, runs, o, ctx.progress);
        return [this, r = std::move(r)] {
            result_ = r;
            redraw();
        };
    });
}

void PathPatchingView::redraw() {
    if (!model_ || !result_) {
        table_->setFigure({});
        return;
    }
    const PathPatchingResult& r = *result_;
    MatrixFigure f;
    f.values = r.normalised.cast<float>();
    for (const HeadId& h : r.options.senders) f.rowLabels << headIdName(h); // filled in by runPathPatching
    f.colLabels = r.columns;
    f.rowTitle = tr("sender");
    f.colTitle = tr("receiver");
    f.title = tr("path patching (%1)").arg(patchDirectionName(r.options.direction)); // the metric: the line above
    f.valueTitle = tr("normalised metric");
    f.scale = MatrixFigure::Scale::Signed;
    table_->setFigure(f);
    tool_.setStatus(tr("%1 at position %2 — clean run: %3, corrupted run: %4. Cells: (m − corrupted) / (clean − corrupted); "
                        "empty where the receiver is not after the sender.")
                         .arg(metricDescription_)
                         .arg(r.position)
                         .arg(r.clean, 0, 'g', 6)
                         .arg(r.corrupt, 0, 'g', 6));
}

} // namespace attnscope
