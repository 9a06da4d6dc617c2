#include "views/graphs/qk_trace_view.h"

#include "model/analysis/graphs/graph_document_from_graph.h"
#include "views/graphs/node_card.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

namespace attnscope {

/// A QkTracer and the graph whose replacement model it reads (QkTracer holds a reference to it).
struct QkTracerOfGraph {
    explicit QkTracerOfGraph(std::shared_ptr<const BuiltGraph> b) : built(std::move(b)), tracer(built->rm) {}
    std::shared_ptr<const BuiltGraph> built;
    QkTracer tracer;
};


QkTraceView::QkTraceView(QWidget* parent)
    : QWidget(parent),
      tool_(QString(), tr("Click an edge, then one of its heads in the Node tab's routes table: this shows why that head attends "
                          "from its query position to the source's position, in the graph's features.")) {
    tables_ = makeQkTraceTables(QStringLiteral("qk_trace"));
    tables_.pairs->setToolTip(tables_.pairs->toolTip() + tr(". Italic: not drawn in the graph (pruned, or beyond its feature-node "
                                                            "bound); Pin into graph draws it"));
    pin_ = new QPushButton(tr("Pin into graph"));
    pin_->setToolTip(tr("Pin the selected row's nodes; those pruning left out are drawn as QK-only nodes (dashed)"));
    ablateQ_ = new QPushButton(tr("Ablate q side"));
    ablateQ_->setToolTip(tr("Remove the selected row's q-side source from the frozen replacement model and recompute the cell"));
    ablateK_ = new QPushButton(tr("Ablate k side"));
    ablateK_->setToolTip(tr("Remove the selected row's k-side source from the frozen replacement model and recompute the cell"));
    ablationLine_ = textLine();

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(tool_.statusLabel());
    layout->addWidget(tables_.widget, 1);
    layout->addLayout(tool_.controlRow({pin_, ablateQ_, ablateK_}));
    layout->addWidget(ablationLine_);
    tool_.setProgressInStatus(true);

    connect(pin_, &QPushButton::clicked, this, &QkTraceView::pinSelected);
    connect(ablateQ_, &QPushButton::clicked, this, [this] { ablateSelected(true); });
    connect(ablateK_, &QPushButton::clicked, this, [this] { ablateSelected(false); });
    for (QTableWidget* t : {tables_.pairs, tables_.qMarginals, tables_.kMarginals})
        connect(t, &QTableWidget::currentCellChanged, this, [this] { updateButtons(); });
    updateButtons();
}

QkTraceView::~QkTraceView() = default;

void QkTraceView::setGraph(std::shared_ptr<const BuiltGraph> built, std::shared_ptr<const GraphDocument> doc) {
    const bool same = built && built == built_;
    doc_ = std::move(doc);
    if (same) {
        refreshLabels();
        return;
    }
    built_ = std::move(built);
    tool_.newContext();
    tracer_.reset();
    trace_.reset();
    ablation_.reset();
    ablationLine_->clear();
    showTrace();
}

void QkTraceView::trace(int layer, int head, int query, int key, int top) {
    if (!built_) {
        tool_.reject(tr("Why a head attends needs a graph built here: this one was opened from a file."));
        return;
    }
    std::shared_ptr<const QkTracerOfGraph> cached = tracer_ && tracer_->built == built_ ? tracer_ : nullptr;
    const QString cell = tr("L%1H%2 at query %3, key %4").arg(layer).arg(head).arg(query).arg(key);
    tool_.start(cached ? tr("Tracing %1…").arg(cell) : tr("Reading the active features' writes, then tracing %1…").arg(cell),
                [this, b = built_, cached, layer, head, query, key, top](const BackgroundTask::Context& ctx) {
                    const auto tracer = cached ? cached : std::make_shared<const QkTracerOfGraph>(b);
                    QkTrace t = tracer->tracer.trace(layer, head, query, key, top, ctx.progress);
                    return std::function<void()>([this, tracer, t = std::move(t)] {
                        tracer_ = tracer;
                        trace_ = t;
                        ablation_.reset();
                        ablationLine_->clear();
                        showTrace();
                    });
                });
}

void QkTraceView::ablate(const std::vector<int>& columns, const QString& what) {
    if (!trace_ || !tracer_ || columns.empty()) {
        tool_.reject(tr("Trace a head first, then select a row."));
        return;
    }
    const QkTrace& t = *trace_;
    const int layer = t.layer, head = t.head, query = t.query, key = t.key;
    tool_.start(tr("Running the cell without %1…").arg(what), [this, tracer = tracer_, layer, head, query, key, columns, what](const BackgroundTask::Context&) {
        const QkTracer::Ablation a = tracer->tracer.ablate(layer, head, query, key, columns);
        return std::function<void()>([this, a, what, query, key] {
            ablation_ = a;
            ablationLine_->setText(tr("Without %1: score %2 → %3 (pre-softmax), pattern P[%4, %5] %6 → %7.")
                                       .arg(what)
                                       .arg(a.scoreBefore, 0, 'g', 5).arg(a.scoreAfter, 0, 'g', 5)
                                       .arg(query).arg(key)
                                       .arg(a.patternBefore, 0, 'f', 4).arg(a.patternAfter, 0, 'f', 4));
            tool_.setStatus(checkText()); // the check line again
        });
    });
}

std::pair<int, int> QkTraceView::selectedColumns() const {
    const auto column = [](QTableWidget* t, int cell) {
        const int row = t->currentRow();
        if (row < 0 || !t->item(row, cell)) return -1;
        return t->item(row, cell)->data(kQkColumnRole).toInt();
    };
    if (const int q = column(tables_.pairs, 0); q >= 0) return {q, column(tables_.pairs, 1)};
    if (const int q = column(tables_.qMarginals, 0); q >= 0) return {q, -1};
    return {-1, column(tables_.kMarginals, 0)};
}

void QkTraceView::updateButtons() {
    const auto [q, k] = selectedColumns();
    pin_->setEnabled(q >= 0 || k >= 0);
    ablateQ_->setEnabled(q >= 0);
    ablateK_->setEnabled(k >= 0);
}

void QkTraceView::pinSelected() {
    const auto [q, k] = selectedColumns();
    std::vector<int> columns;
    for (int c : {q, k})
        if (c >= 0 && std::find(columns.begin(), columns.end(), c) == columns.end()) columns.push_back(c);
    if (columns.empty()) {
        tool_.reject(tr("Select a pair or a marginal to pin."));
        return;
    }
    emit pinRequested(columns);
}

void QkTraceView::ablateSelected(bool querySide) {
    const auto [q, k] = selectedColumns();
    const int c = querySide ? q : k;
    if (c < 0) {
        tool_.reject(querySide ? tr("Select a pair or a q-side marginal to ablate its q-side source.")
                               : tr("Select a pair or a k-side marginal to ablate its k-side source."));
        return;
    }
    ablate({c}, tr("%1 (%2 side)").arg(columnLabel(c), querySide ? QStringLiteral("q") : QStringLiteral("k")));
}

GraphDocumentNode QkTraceView::columnNode(int column) const {
    if (const int i = documentIndex(column); i >= 0) return doc_->nodes[size_t(i)];
    const QkTracer& t = tracer_->tracer;
    return qkOnlyDocumentNode(built_->graph, built_->pruned, built_->model->tokenizer(), t.columns()[size_t(column)],
                              t.graphNode(built_->graph, column));
}

int QkTraceView::documentIndex(int column) const {
    if (!tracer_ || !doc_ || column < 0 || size_t(column) >= tracer_->tracer.columns().size()) return -1;
    const int g = tracer_->tracer.graphNode(built_->graph, column);
    if (g >= 0) return docByGraphIndex_.value(g, -1);
    const GraphNode& n = tracer_->tracer.columns()[size_t(column)]; // a feature beyond the bound, pinned in as QK-only
    return docById_.value(QStringLiteral("%1_%2_%3").arg(n.layer).arg(n.id).arg(n.position), -1);
}

QString QkTraceView::columnLabel(int column) const {
    const int i = documentIndex(column);
    return i >= 0 ? doc_->nodeLabel(i) : qkSourceLabel(tracer_->tracer.columns()[size_t(column)], doc_ ? doc_->promptTokens : QStringList());
}

void QkTraceView::refreshLabels() {
    docByGraphIndex_.clear();
    docById_.clear();
    if (doc_)
        for (size_t i = 0; i < doc_->nodes.size(); ++i) {
            if (doc_->nodes[i].graphIndex >= 0) docByGraphIndex_.insert(doc_->nodes[i].graphIndex, int(i));
            else docById_.insert(doc_->nodes[i].nodeId, int(i));
        }
    if (trace_ && tracer_) labelQkTraceTables(tables_, [this](QTableWidgetItem* item, int column) { labelCell(item, column); });
}

void QkTraceView::labelCell(QTableWidgetItem* item, int column) const {
    const bool drawn = documentIndex(column) >= 0;
    item->setText(columnLabel(column));
    QFont f = item->font();
    f.setItalic(!drawn);
    item->setFont(f);
    // the node's card, as the graph's hover shows it
    item->setToolTip(nodeCardFacts(columnNode(column), doc_ ? doc_->promptTokens : QStringList()) +
                     (drawn ? QString() : tr("<i>Not drawn in the graph: Pin into graph draws it as a QK-only node.</i>")));
}

void QkTraceView::showTrace() {
    for (QTableWidget* t : {tables_.pairs, tables_.qMarginals, tables_.kMarginals}) {
        const QSignalBlocker quiet(t);
        t->setRowCount(0);
    }
    if (trace_ && tracer_) {
        refreshLabels(); // the document's index first
        fillQkTraceTables(tables_, *trace_, [this](QTableWidgetItem* item, int column) { labelCell(item, column); });
        tool_.setStatus(checkText());
    }
    updateButtons();
}

QString QkTraceView::checkText() const { return trace_ ? qkTraceCheckText(*trace_, doc_ ? doc_->promptTokens : QStringList()) : QString(); }

QString QkTraceView::ablationText() const { return ablationLine_->text(); }

void QkTraceView::waitForIdle() { tool_.waitForIdle(); }

} // namespace attnscope
