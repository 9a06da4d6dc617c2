// Why a head attends, in features (issue 46), offscreen on the demo model with its bundled transcoders. The Graph tab:
// clicking a head in an edge's routes table traces its cell, and the pairs and marginal tables equal QkTracer::trace
// (attributions exactly, node labels as the graph labels its nodes or, for sources it does not draw, as built from
// their columns), the check line shows its checkError; pinning a pair whose node pruning left out appends it to the
// plot's nodes marked QK-only and pinned (written to qk_only_nodes in the saved file); ablating a source shows
// QkTracer::ablate's score and pattern cell before → after. The Circuits tab's Attend view: without a transcoder set it
// keeps the component split and says what the feature-level trace needs; with the set it traces the chosen cell and
// its numbers equal the library's.

#include "model/analysis/graphs/edge_routes.h"
#include "model/analysis/graphs/qk_trace.h"
#include "model/features/dictionary_set.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/transformer/prompt.h"
#include "support/test_paths.h"
#include "views/circuits/attend_view.h"
#include "views/circuits/circuits_panel.h"
#include "views/graphs/graph_panel.h"
#include "views/graphs/graph_plot.h"
#include "views/graphs/qk_trace_view.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonArray>
#include <QJsonObject>
#include <QLabel>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {
const QString kTranscoders = attnscope::test::sourceFile(QStringLiteral("resources/demo-features/transcoders"));
/// The window's first prompt: long enough that pruning leaves some of a head's QK contributors out of the graph.
const QString kPrompt = QStringLiteral("In the beginning God created the heaven and the earth. In the beginning God created the heaven and the earth.");
} // namespace

class TestGuiQkTrace : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void headRowShowsItsTrace();
    void pinningAddsQkOnlyNodes();
    void ablationShowsTheLibrarysNumbers();
    void circuitsTabTracesOnlyWithASet();

private:
    /// The expected label of a trace's column: the document's node label, or built from the column.
    QString expectedLabel(int column) const {
        const GraphDocument* doc = panel_->document();
        const int g = tracer_->graphNode(graph_, column);
        for (size_t i = 0; g >= 0 && i < doc->nodes.size(); ++i)
            if (doc->nodes[i].graphIndex == g) return doc->nodeLabel(int(i));
        return qkSourceLabel(tracer_->columns()[size_t(column)], doc->promptTokens);
    }
    bool drawn(int column) const {
        const int g = tracer_->graphNode(graph_, column);
        for (const GraphDocumentNode& n : panel_->document()->nodes)
            if (g >= 0 && n.graphIndex == g) return true;
        return false;
    }

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    std::shared_ptr<const DictionarySet> set_;
    ReplacementModel rm_;
    AttributionGraph graph_;
    std::unique_ptr<QkTracer> tracer_; ///< reads rm_
    std::unique_ptr<GraphPanel> panel_;
    int layer_ = 0, head_ = 0, query_ = 0, key_ = 0; ///< the traced cell
    QkTrace want_;
    QTemporaryDir tmp_;
};

void TestGuiQkTrace::initTestCase() {
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    QSKIP("the demo's transcoder set is a circuit-tracer config.yaml: this build has no yaml-cpp (the arm64 sysroot)");
#endif
    model_ = loadModel(demoDir());
    ForwardOptions o;
    o.allLogits = false; // as the window runs a prompt
    cache_ = std::make_shared<const ActivationCache>(
        runForward(*model_, tokenizePrompt(model_->tokenizer(), kPrompt, true), o));
    set_ = std::make_shared<const DictionarySet>(openDictionaries(kTranscoders));
    rm_ = buildReplacementModel(*model_, *set_, cache_->tokens);
    graph_ = attributeGraph(rm_);
    tracer_ = std::make_unique<QkTracer>(rm_);
    panel_ = std::make_unique<GraphPanel>();
    panel_->resize(1280, 760);
    panel_->show();
    panel_->setContext(model_, cache_, tokenLabels(model_->tokenizer(), cache_->tokens));
    panel_->setTranscoders(set_, kTranscoders); // builds
    panel_->waitForIdle();
    QVERIFY(panel_->built());
}

void TestGuiQkTrace::headRowShowsItsTrace() {
    // the strongest link into a feature from an earlier position (it crosses attention) whose strongest head's trace
    // lists a contributor the pruned graph does not draw
    const GraphDocument* doc = panel_->document();
    std::vector<int> crossing;
    for (size_t i = 0; i < doc->links.size(); ++i)
        if (doc->nodes[size_t(doc->links[i].target)].kind == GraphNodeKind::Feature &&
            doc->nodes[size_t(doc->links[i].target)].ctxIdx > doc->nodes[size_t(doc->links[i].source)].ctxIdx)
            crossing.push_back(int(i));
    std::stable_sort(crossing.begin(), crossing.end(), [&](int a, int b) { return std::abs(doc->links[size_t(a)].weight) > std::abs(doc->links[size_t(b)].weight); });
    int link = -1;
    for (int i : crossing) {
        const GraphDocumentLink& c = doc->links[size_t(i)];
        const EdgeRoutes r = edgeRoutes(rm_, graph_, doc->nodes[size_t(c.target)].graphIndex, doc->nodes[size_t(c.source)].graphIndex);
        if (r.heads.empty() || r.heads[0].query < 0) continue;
        const QkTrace t = tracer_->trace(r.heads[0].layer, r.heads[0].head, r.heads[0].query, doc->nodes[size_t(c.source)].ctxIdx, 50);
        if (std::any_of(t.pairs.begin(), t.pairs.end(), [&](const QkPair& p) { return !drawn(p.q) || !drawn(p.k); })) {
            link = i;
            break;
        }
    }
    QVERIFY2(link >= 0, "the demo's pruned graph leaves some head's QK contributors out");
    panel_->selectLink(link);
    panel_->waitForIdle();
    const GraphDocumentLink& l = doc->links[size_t(link)];
    const EdgeRoutes r = edgeRoutes(rm_, graph_, doc->nodes[size_t(l.target)].graphIndex, doc->nodes[size_t(l.source)].graphIndex);
    QVERIFY(!r.heads.empty() && r.heads[0].query >= 0);
    // the strongest head's row (after "no hop" and a skip row when there is one): a click traces its cell
    QTableWidget* routes = panel_->routesTable();
    const int row = r.skip != 0 ? 2 : 1;
    QCOMPARE(routes->item(row, 0)->text(), QStringLiteral("L%1H%2").arg(r.heads[0].layer).arg(r.heads[0].head));
    routes->setCurrentCell(row, 0);
    panel_->waitForIdle();
    layer_ = r.heads[0].layer;
    head_ = r.heads[0].head;
    query_ = r.heads[0].query;
    key_ = doc->nodes[size_t(l.source)].ctxIdx;
    want_ = tracer_->trace(layer_, head_, query_, key_, 50);
    QkTraceView* view = panel_->qkTrace();
    QVERIFY(view->isVisible()); // the tab switched to it
    QVERIFY(view->lastTrace());
    const QkTrace& got = *view->lastTrace();
    QCOMPARE(got.layer, layer_);
    QCOMPARE(got.query, query_);
    QCOMPARE(got.key, key_);
    // the pairs: each row's q and k labels, exact attribution and share of the score
    QTableWidget* pairs = view->tables().pairs;
    QCOMPARE(pairs->rowCount(), int(want_.pairs.size()));
    QVERIFY(pairs->rowCount() > 0);
    int undrawn = 0;
    for (int i = 0; i < pairs->rowCount(); ++i) {
        const QkPair& p = want_.pairs[size_t(i)];
        QCOMPARE(pairs->item(i, 0)->text(), expectedLabel(p.q));
        QCOMPARE(pairs->item(i, 1)->text(), expectedLabel(p.k));
        QCOMPARE(pairs->item(i, 2)->data(Qt::UserRole).toDouble(), p.attribution);
        QCOMPARE(pairs->item(i, 3)->text(), QString::number(100 * p.attribution / want_.score, 'f', 1) + QLatin1Char('%'));
        QCOMPARE(pairs->item(i, 0)->font().italic(), !drawn(p.q)); // a source the graph does not draw: italic
        undrawn += !drawn(p.q) || !drawn(p.k);
        QVERIFY(pairs->item(i, 0)->toolTip().contains(tracer_->columns()[size_t(p.q)].kind == GraphNodeKind::Feature ? QStringLiteral("Feature") : QStringLiteral("position")));
    }
    QVERIFY2(undrawn > 0, "the demo's pruned graph leaves some contributors out");
    // the marginals
    for (auto [table, list] : {std::pair{view->tables().qMarginals, &want_.qMarginals}, std::pair{view->tables().kMarginals, &want_.kMarginals}}) {
        QCOMPARE(table->rowCount(), int(list->size()));
        for (int i = 0; i < table->rowCount(); ++i) {
            QCOMPARE(table->item(i, 0)->text(), expectedLabel((*list)[size_t(i)].column));
            QCOMPARE(table->item(i, 1)->data(Qt::UserRole).toDouble(), (*list)[size_t(i)].attribution);
        }
    }
    // the check line: score = Σ pairs + constants, and the library's check error
    const QString check = view->checkText();
    QVERIFY2(check.contains(QStringLiteral("Score %1 = Σ pairs %2").arg(want_.score, 0, 'g', 6).arg(want_.pairsTotal, 0, 'g', 6)), qPrintable(check));
    QVERIFY2(check.contains(QStringLiteral("check error %1.").arg(want_.checkError, 0, 'g', 3)), qPrintable(check));
    QVERIFY(check.contains(QStringLiteral("constant %1;").arg(want_.constant, 0, 'g', 4)));
    QVERIFY(want_.checkError <= 1e-5 * std::max(1.0, std::abs(want_.score)));
    // the tables' columns fit the pane at this size (the k-side marginals are the hidden tab)
    for (QTableWidget* t : {pairs, view->tables().qMarginals}) {
        int width = 0;
        for (int c = 0; c < t->columnCount(); ++c) width += t->columnWidth(c);
        QVERIFY2(width <= t->viewport()->width() + 1, qPrintable(QStringLiteral("%1 of %2").arg(width).arg(t->viewport()->width())));
    }
}

void TestGuiQkTrace::pinningAddsQkOnlyNodes() {
    QkTraceView* view = panel_->qkTrace();
    QTableWidget* pairs = view->tables().pairs;
    int row = -1;
    for (int i = 0; i < pairs->rowCount() && row < 0; ++i)
        if (!drawn(want_.pairs[size_t(i)].q) || !drawn(want_.pairs[size_t(i)].k)) row = i;
    QVERIFY(row >= 0);
    const QkPair p = want_.pairs[size_t(row)];
    const size_t before = panel_->document()->nodes.size();
    const int undrawn = int(!drawn(p.q)) + int(p.k != p.q && !drawn(p.k));
    pairs->setCurrentCell(row, 0);
    view->pinSelected();
    const GraphDocument* doc = panel_->plot()->document();
    QCOMPARE(doc->nodes.size(), before + size_t(undrawn));
    for (int column : {p.q, p.k}) {
        const int i = view->documentIndex(column);
        QVERIFY(i >= 0);
        const GraphDocumentNode& n = doc->nodes[size_t(i)];
        QVERIFY(doc->pinnedIds.contains(n.nodeId));
        QVERIFY(panel_->plot()->isNodeShown(i));
        const GraphNode& c = tracer_->columns()[size_t(column)];
        QCOMPARE(n.layer, c.kind == GraphNodeKind::Token ? -1 : c.layer);
        QCOMPARE(n.ctxIdx, c.position);
        if (size_t(i) >= before) QVERIFY(n.qkOnly); // appended: QK-only
        else QVERIFY(!n.qkOnly);
    }
    QCOMPARE(pairs->item(row, 0)->font().italic(), false); // drawn now
    QCOMPARE(pairs->item(row, 0)->text(), expectedLabel(p.q));
    // the pinned subgraph draws them
    panel_->plot()->setPinnedOnly(true);
    QVERIFY(panel_->plot()->shownNodeCount() >= undrawn);
    panel_->plot()->setPinnedOnly(false);
    // saved: QK-only nodes in qk_only_nodes, not in nodes or pins
    const QString path = tmp_.filePath(QStringLiteral("qk.json"));
    QCOMPARE(panel_->saveGraphFile(path), QString());
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject json = QJsonDocument::fromJson(f.readAll()).object();
    const QJsonObject qkOnly = json.value(QStringLiteral("qk_only_nodes")).toObject();
    QCOMPARE(qkOnly.size(), undrawn);
    QCOMPARE(json.value(QStringLiteral("nodes")).toArray().size(), int(before));
    for (const QString& id : qkOnly.keys()) QVERIFY(!json.value(QStringLiteral("qParams")).toObject().value(QStringLiteral("pinnedIds")).toArray().contains(id));
}

void TestGuiQkTrace::ablationShowsTheLibrarysNumbers() {
    QkTraceView* view = panel_->qkTrace();
    for (const bool querySide : {true, false}) {
        // the largest q-side (k-side) marginal's source
        QTableWidget* table = querySide ? view->tables().qMarginals : view->tables().kMarginals;
        const int column = (querySide ? want_.qMarginals : want_.kMarginals).front().column;
        table->setCurrentCell(0, 0);
        view->ablateSelected(querySide);
        panel_->waitForIdle();
        QVERIFY(view->lastAblation());
        const QkTracer::Ablation want = tracer_->ablate(layer_, head_, query_, key_, {column});
        const QkTracer::Ablation& got = *view->lastAblation();
        QCOMPARE(got.scoreBefore, want.scoreBefore);
        QCOMPARE(got.scoreAfter, want.scoreAfter);
        QCOMPARE(got.patternBefore, want.patternBefore);
        QCOMPARE(got.patternAfter, want.patternAfter);
        QVERIFY(want.scoreAfter != want.scoreBefore);
        const QString text = view->ablationText();
        QVERIFY2(text.contains(QStringLiteral("score %1 → %2").arg(want.scoreBefore, 0, 'g', 5).arg(want.scoreAfter, 0, 'g', 5)), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("P[%1, %2] %3 → %4").arg(query_).arg(key_).arg(want.patternBefore, 0, 'f', 4).arg(want.patternAfter, 0, 'f', 4)),
                 qPrintable(text));
        QVERIFY(text.contains(expectedLabel(column)));
    }
    // a pair row: its k side
    view->tables().pairs->setCurrentCell(0, 1);
    view->ablateSelected(false);
    panel_->waitForIdle();
    const QkTracer::Ablation want = tracer_->ablate(layer_, head_, query_, key_, {want_.pairs[0].k});
    QCOMPARE(view->lastAblation()->scoreAfter, want.scoreAfter);
}

void TestGuiQkTrace::circuitsTabTracesOnlyWithASet() {
    CircuitsPanel circuits;
    circuits.resize(1280, 760);
    circuits.show();
    circuits.setContext(model_, cache_, tokenLabels(model_->tokenizer(), cache_->tokens));
    circuits.subTabs()->setCurrentWidget(circuits.attend());
    AttendView* attend = circuits.attend();
    attend->setQuery(layer_, head_, query_, key_);
    // without a set: the component split only, and a line saying what enables the trace
    attend->run();
    circuits.waitForIdle();
    QVERIFY(attend->split());
    QVERIFY(!attend->trace());
    QVERIFY(!attend->tracePane()->isVisible());
    QVERIFY(attend->traceHint()->isVisible());
    QVERIFY(attend->traceHint()->text().contains(QStringLiteral("transcoder set")));
    // with the Graph tab's set: the trace beside the split, equal to the library's
    circuits.setTranscoders(set_, kTranscoders);
    QVERIFY(attend->tracePane()->isVisible());
    QVERIFY(!attend->traceHint()->isVisible());
    attend->run();
    circuits.waitForIdle();
    QVERIFY(attend->split());
    QVERIFY(attend->trace());
    QTableWidget* pairs = attend->traceTables().pairs;
    const QStringList labels = tokenLabels(model_->tokenizer(), cache_->tokens);
    QCOMPARE(pairs->rowCount(), int(want_.pairs.size()));
    for (int i = 0; i < pairs->rowCount(); ++i) {
        const QkPair& p = want_.pairs[size_t(i)];
        QCOMPARE(pairs->item(i, 2)->data(Qt::UserRole).toDouble(), p.attribution);
        QCOMPARE(pairs->item(i, 0)->text(), qkSourceLabel(tracer_->columns()[size_t(p.q)], labels));
        QCOMPARE(pairs->item(i, 1)->text(), qkSourceLabel(tracer_->columns()[size_t(p.k)], labels));
    }
    QCOMPARE(attend->traceTables().qMarginals->item(0, 1)->data(Qt::UserRole).toDouble(), want_.qMarginals[0].attribution);
    QVERIFY2(attend->traceCheckText().contains(QStringLiteral("check error %1.").arg(want_.checkError, 0, 'g', 3)), qPrintable(attend->traceCheckText()));
    // the component split beside it is the same cell's
    QVERIFY(std::abs(attend->split()->score - want_.score) <= 1e-4 * std::max(1.0, std::abs(want_.score))); // the same cell's score
}

QTEST_MAIN(TestGuiQkTrace)
#include "tst_gui_qk_trace.moc"
