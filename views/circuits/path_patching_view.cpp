#include "views/circuits/path_patching_view.h"

#include "views/circuits/circuit_inputs.h"
#include "views/figures/matrix_heatmap.h"

#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace attnscope {

PathPatchingView::PathPatchingView(CircuitInputs* inputs, QWidget* parent) : QWidget(parent), inputs_(inputs) {
    auto* layout = new QVBoxLayout(this);
    senders_ = new QLineEdit;
    senders_->setPlaceholderText(tr("senders L.H,… (empty = every head)"));
    senders_->setToolTip(tr("Heads whose z is taken from the other run, e.g. 0.0,0.1"));
    receivers_ = new QLineEdit(QStringLiteral("logits"));
    receivers_->setToolTip(tr("Where the sender's effect may enter: L.H.q, L.H.k, L.H.v (that head's input) or logits (the direct path), "
                              "comma-separated. Every other head stays frozen at its base-run value."));
    runButton_ = new QPushButton(tr("Run path patching"));
    layout->addLayout(taskRow(task_, {senders_, receivers_, runButton_}));
    status_ = new QLabel(tr("Senders × receivers: the normalised metric when only that path carries the sender's change."));
    status_->setTextFormat(Qt::PlainText); // token texts such as "<s>" are not markup
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(status_);
    table_ = new MatrixHeatmap;
    table_->setEmptyText(tr("Run path patching to fill the sender × receiver table."));
    layout->addWidget(table_, 1);
    connect(runButton_, &QPushButton::clicked, this, &PathPatchingView::run);
    connect(&task_, &BackgroundTask::failed, this, [this](const QString& m) { status_->setText(m); });
    connect(&task_, &BackgroundTask::cancelled, this, [this] { status_->setText(tr("Cancelled.")); });
}

void PathPatchingView::setContext(std::shared_ptr<const Model> model) {
    if (model == model_) return;
    task_.cancel();
    model_ = std::move(model);
    result_.reset();
    redraw();
}

void PathPatchingView::setSenders(const QString& text) { senders_->setText(text); }
void PathPatchingView::setReceivers(const QString& text) { receivers_->setText(text); }
QString PathPatchingView::statusText() const { return status_->text(); }

void PathPatchingView::run() {
    if (!model_) return;
    PathPatchingOptions o;
    CircuitRunSpec spec;
    try {
        spec = inputs_->spec(true);
        if (!senders_->text().trimmed().isEmpty()) o.senders = parseHeadList(model_->config(), senders_->text());
        o.receivers = parseReceiverList(model_->config(), receivers_->text());
    } catch (const InputError& e) {
        status_->setText(e.message());
        return;
    }
    o.direction = spec.direction;
    o.metric = spec.metric;
    metricDescription_ = spec.metricDescription;
    status_->setText(tr("Running…"));
    task_.start([this, model = model_, spec, o](const BackgroundTask::Context& ctx) -> std::function<void()> {
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
    status_->setText(tr("%1 at position %2 — clean run: %3, corrupted run: %4. Cells: (m − corrupted) / (clean − corrupted); "
                        "empty where the receiver is not after the sender.")
                         .arg(metricDescription_)
                         .arg(r.position)
                         .arg(r.clean, 0, 'g', 6)
                         .arg(r.corrupt, 0, 'g', 6));
}

} // namespace attnscope
