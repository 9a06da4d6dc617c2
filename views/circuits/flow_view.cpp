#include "views/circuits/flow_view.h"

#include "model/analysis/circuits/circuits_json.h"
#include "model/analysis/embedding_space/logit_lens.h"
#include "model/analysis/common/top_tokens.h"
#include "views/circuits/flow_graph_plot.h"
#include "views/common/score_tables.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace attnscope {

FlowView::FlowView(QWidget* parent) : QWidget(parent), tool_(tr("Build graph"), tr("Run a prompt, then Build graph.")) {
    auto* layout = new QVBoxLayout(this);
    norm_ = new QComboBox;
    norm_->addItem(tr("L1 proximity"), int(FlowNorm::L1));
    norm_->addItem(tr("L2 proximity"), int(FlowNorm::L2));
    norm_->setToolTip(tr("c = max(0, ‖y‖ − ‖y − z‖), normalised over the parts of y (Ferrando & Voita 2024 use L1)"));
    threshold_ = new QDoubleSpinBox;
    threshold_->setRange(0, 1);
    threshold_->setDecimals(3);
    threshold_->setSingleStep(0.01);
    threshold_->setValue(0.04);
    threshold_->setPrefix(tr("τ = "));
    threshold_->setToolTip(tr("Edges at or below τ are dropped; 0 keeps every edge, unpruned and not renormalised"));
    renormalise_ = new QCheckBox(tr("renormalise"));
    renormalise_->setChecked(true);
    position_ = new QSpinBox;
    position_->setRange(-1, 0);
    position_->setValue(-1);
    position_->setSpecialValueText(tr("last position"));
    position_->setPrefix(tr("from position "));
    auto* jsonButton = new QPushButton(tr("Export JSON…"));
    layout->addLayout(tool_.controlRow({norm_, threshold_, renormalise_, position_}, {jsonButton}));
    layout->addWidget(tool_.statusLabel());
    plot_ = new FlowGraphPlot;
    auto* side = new QWidget;
    auto* sideLayout = new QVBoxLayout(side);
    sideLayout->setContentsMargins(0, 0, 0, 0);
    detailsTitle_ = textLine(tr("Click an edge for its per-head split, a node for its logit lens."));
    sideLayout->addWidget(detailsTitle_);
    details_ = makeScoreTable({tr("#"), tr("part"), tr("value")}, QStringLiteral("flow_details"), tr("Nothing selected."));
    sideLayout->addWidget(details_, 1);
    layout->addWidget(splitPanes(Qt::Horizontal, {{plot_, 3}, {side, 1}}), 1);

    connect(&tool_, &BackgroundTool::runRequested, this, &FlowView::build);
    connect(threshold_, &QDoubleSpinBox::valueChanged, this, &FlowView::prune);
    connect(renormalise_, &QCheckBox::toggled, this, &FlowView::prune);
    connect(position_, &QSpinBox::valueChanged, this, &FlowView::prune);
    connect(norm_, &QComboBox::currentIndexChanged, this, [this] {
        contributions_.reset();
        if (graph_) build();
    });
    connect(plot_, &FlowGraphPlot::edgeClicked, this, &FlowView::showEdge);
    connect(plot_, &FlowGraphPlot::nodeClicked, this, &FlowView::showNode);
    connect(jsonButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export flow graph"), QStringLiteral("flow.json"), tr("JSON (*.json)"));
        if (!path.isEmpty())
            if (QString e = exportJson(path); !e.isEmpty()) tool_.setStatus(e);
    });
}

void FlowView::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache, const QStringList& labels) {
    if (model == model_ && cache == cache_) return;
    tool_.newContext();
    model_ = std::move(model);
    cache_ = std::move(cache);
    labels_ = labels;
    contributions_.reset();
    graph_.reset();
    plot_->clear();
    details_->setRowCount(0);
    position_->setRange(-1, cache_ ? cache_->nPositions() - 1 : 0);
    tool_.runButton()->setEnabled(model_ && cache_);
    tool_.setStatus(cache_ ? tr("Build graph to trace the last run.") : tr("Run a prompt, then Build graph."));
}

void FlowView::setThreshold(double tau) { threshold_->setValue(tau); }
void FlowView::setPosition(int position) { position_->setValue(position); }
void FlowView::setNorm(FlowNorm norm) { norm_->setCurrentIndex(norm_->findData(int(norm))); }
QString FlowView::detailsTitle() const { return detailsTitle_->text(); }

void FlowView::build() {
    if (!model_ || !cache_) return;
    if (contributions_) {
        prune();
        return;
    }
    const FlowNorm norm = FlowNorm(norm_->currentData().toInt());
    tool_.start(tr("Computing contributions…"), [this, model = model_, cache = cache_, norm](const BackgroundTask::Context& ctx) -> std::function<void()> {
        auto c = std::make_shared<const FlowContributions>(flowContributions(*model, *cache, norm, ctx.progress));
        return [this, c] {
            contributions_ = c;
            prune();
        };
    });
}

void FlowView::prune() {
    if (!contributions_ || !model_) return;
    try {
        graph_ = flowGraph(*contributions_, {threshold_->value(), renormalise_->isChecked(), position_->value()});
    } catch (const InputError& e) {
        tool_.setStatus(e.message());
        return;
    }
    QStringList boundaries;
    for (int b = 0; b < lensBoundaryCount(model_->config()); ++b) boundaries << lensBoundaryName(model_->config(), b);
    plot_->setGraph(*graph_, labels_, boundaries);
    tool_.setStatus(tr("%1 edges with weight above τ = %2 on paths to position %3 (%4 proximity%5).")
                         .arg(graph_->edges.size())
                         .arg(graph_->options.threshold)
                         .arg(graph_->options.position)
                         .arg(flowNormName(graph_->norm).toUpper(), graph_->options.renormalise ? tr(", renormalised") : QString()));
}

void FlowView::showEdge(int index) {
    if (!graph_ || index < 0 || index >= int(graph_->edges.size())) return;
    const FlowEdge& e = graph_->edges[size_t(index)];
    detailsTitle_->setText(plot_->describeEdge(index));
    details_->setHorizontalHeaderLabels({tr("#"), tr("head"), tr("proximity")});
    details_->setRowCount(0);
    const int layer = (e.toBoundary - 1) / 2;
    for (size_t h = 0; h < e.heads.size(); ++h) {
        const int r = details_->rowCount();
        details_->insertRow(r);
        details_->setItem(r, 0, rankCell(r + 1));
        details_->setItem(r, 1, componentCell(QStringLiteral("L%1H%2").arg(layer).arg(h), layer, int(h)));
        details_->setItem(r, 2, scoreCell(e.heads[h]));
    }
    if (e.heads.empty()) {
        details_->insertRow(0);
        details_->setItem(0, 0, rankCell(1));
        details_->setItem(0, 1, new QTableWidgetItem(e.kind == FlowEdge::Kind::Mlp ? tr("MLP") : tr("residual")));
        details_->setItem(0, 2, scoreCell(e.weight));
    }
}

void FlowView::showNode(int boundary, int position) {
    if (!model_ || !cache_) return;
    const RowVector logits = lensLogits(*model_, *cache_, boundary, position);
    const std::vector<TokenScore> top = topTokens(logits, 10);
    detailsTitle_->setText(tr("Logit lens at %1, position %2 %3: ln_final(resid)·W_U + b_U, top 10 by probability")
                               .arg(lensBoundaryName(model_->config(), boundary))
                               .arg(position)
                               .arg(labels_.value(position)));
    details_->setHorizontalHeaderLabels({tr("#"), tr("token"), tr("probability")});
    details_->setRowCount(int(top.size()));
    for (int r = 0; r < int(top.size()); ++r) {
        details_->setItem(r, 0, rankCell(r + 1));
        details_->setItem(r, 1, tokenCell(model_->tokenizer(), top[size_t(r)].id));
        details_->setItem(r, 2, scoreCell(top[size_t(r)].prob));
    }
}

QString FlowView::exportJson(const QString& path) const {
    if (!graph_ || !model_) return tr("%1: nothing to export, build the graph first").arg(path);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return tr("%1: %2").arg(path, f.errorString());
    f.write(QJsonDocument(QJsonObject{{"flow", flowGraphToJson(*graph_, model_->config())}}).toJson());
    return {};
}

} // namespace attnscope
