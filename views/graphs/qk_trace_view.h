#pragma once
// "Why this head attends here": the Graph tab's pane for one attention cell — head h of layer L, query position q, key
// position k — of a graph built here, in the graph's own nodes (QkTracer, model/analysis/graphs/qk_trace.h). It shows
// the trace's largest (q-side, k-side) pairs, each node labelled as the graph labels it (a contributor pruning left out
// in italics, labelled from its column), with its attribution and share of the score; the q-side and k-side marginals
// (Neuronpedia's top_q/top_k_marginal_contributors); the constants and the check (score = Σ pairs + constants, with
// checkError). The selected row's nodes can be pinned into the graph (pinRequested: the tab draws those pruning left
// out as QK-only nodes) and its q-side or k-side source ablated (QkTracer::ablate: the pre-softmax score and the pattern
// cell before → after). The tracer (every active feature's writes) is made once per graph, in the background with the
// first trace; traces and ablations run off the GUI thread with progress and Cancel.

#include "model/analysis/graphs/graph_document.h"
#include "model/analysis/graphs/qk_trace.h"
#include "views/common/background_tool.h"
#include "views/graphs/built_graph.h"
#include "views/graphs/qk_trace_tables.h"

#include <QHash>
#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

class QLabel;
class QPushButton;
class QTableWidgetItem;

namespace attnscope {

struct QkTracerOfGraph;

class QkTraceView : public QWidget {
    Q_OBJECT
public:
    explicit QkTraceView(QWidget* parent = nullptr);
    ~QkTraceView() override;

    /// The graph to trace (null: none, or a graph opened from a file) and its document, whose labels the tables use
    /// (the tab appends QK-only nodes to it). Drops the shown trace when the graph changes.
    void setGraph(std::shared_ptr<const BuiltGraph> built, std::shared_ptr<const GraphDocument> doc);
    /// Traces head `head` of `layer` at (query, key), the `top` largest pairs and marginals, in the background.
    void trace(int layer, int head, int query, int key, int top = 50);
    /// Ablates the shown trace's sources `columns` (QkTracer::columns() indices) in the background; `what` names them.
    void ablate(const std::vector<int>& columns, const QString& what);
    /// Pins the selected row's nodes (a pair's two, a marginal's one): emits pinRequested.
    void pinSelected();
    /// Ablates the selected row's q-side (or k-side) source: a pair's, or the selected q (k) marginal's.
    void ablateSelected(bool querySide);

    /// The label of a column: its document node's label when the document has it, else one built from the column
    /// (documentNodeLabel of qkOnlyDocumentNode). Needs a trace shown.
    QString columnLabel(int column) const;
    /// The column as a document node: the document's own, or a QK-only node made from the graph (not yet added).
    GraphDocumentNode columnNode(int column) const;
    /// The column's index in the document's nodes, or −1 when the document does not draw it.
    int documentIndex(int column) const;
    /// Relabels the tables after the document changed (QK-only nodes pinned in).
    void refreshLabels();

    const std::optional<QkTrace>& lastTrace() const { return trace_; }
    const std::optional<QkTracer::Ablation>& lastAblation() const { return ablation_; }
    /// The pairs table (q side, k side, attribution, share), the q- and k-marginal tables (node, attribution, share).
    const QkTraceTables& tables() const { return tables_; }
    /// The check line: the cell, its score = Σ pairs + constants, and the check error.
    QString checkText() const;
    /// The last ablation's line: score and pattern cell before → after.
    QString ablationText() const;
    void waitForIdle();

signals:
    /// Pin these sources (QkTracer::columns() indices) into the graph.
    void pinRequested(const std::vector<int>& columns);

private:
    void showTrace();
    void updateButtons();
    /// A node cell's text (the graph's label, italic when the graph does not draw it) and card (its tooltip).
    void labelCell(QTableWidgetItem* item, int column) const;
    /// The columns the selected row names on the q side and the k side (−1: none).
    std::pair<int, int> selectedColumns() const;

    std::shared_ptr<const BuiltGraph> built_;
    std::shared_ptr<const GraphDocument> doc_;
    std::shared_ptr<const QkTracerOfGraph> tracer_; ///< made with the first trace of built_
    std::optional<QkTrace> trace_;
    std::optional<QkTracer::Ablation> ablation_;
    QHash<int, int> docByGraphIndex_; ///< graph node → document node
    QHash<QString, int> docById_;    ///< node id → document node (QK-only nodes beyond the bound)

    BackgroundTool tool_;
    QkTraceTables tables_;
    QPushButton* pin_ = nullptr;
    QPushButton* ablateQ_ = nullptr;
    QPushButton* ablateK_ = nullptr;
    QLabel* ablationLine_ = nullptr;
};

} // namespace attnscope
