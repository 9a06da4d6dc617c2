// The Graph tab offscreen on the demo model with its bundled transcoders: the graph it builds is the one
// attributeGraph + pruneGraph give (counts, scores); a feature node's card names its layer, feature and decoder
// readings; hovering a node shows its card; an edge's head routes are edgeRoutes'; pin + supernode + ablate shows the
// logits and continuation interveneOnFeatures gives; the pinned subgraph shows only the pinned nodes; the exported PNG
// has the plot's size and drawn content; a saved graph opens offline with the same nodes, pins and supernode, and
// refuses interventions; a bad file shows its error.

#include "app/main_window.h"
#include "app/session_controller.h"
#include "model/analysis/circuits/attention_score_split.h"
#include "model/analysis/common/top_tokens.h"
#include "model/analysis/features/feature_readout.h"
#include "model/analysis/graphs/attribution_targets.h"
#include "model/analysis/graphs/edge_routes.h"
#include "model/analysis/graphs/feature_intervention.h"
#include "model/features/dictionary_set.h"
#include "model/features/feature_labels.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/transformer/prompt.h"
#include "support/test_paths.h"
#include "views/figures/figure_actions.h"
#include "views/figures/value_table.h"
#include "views/graphs/graph_panel.h"
#include "views/graphs/graph_plot.h"

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {
const QString kTranscoders = attnscope::test::sourceFile(QStringLiteral("resources/demo-features/transcoders"));
} // namespace

class TestGuiGraphs : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void buildsTheGraph();
    void featureCard();
    void labelsOnFeatureNodes();
    void hoverShowsTheCard();
    void edgeRoutesOfASelectedEdge();
    void supernodeAblation();
    void pinnedSubgraph();
    void exportsThePng();
    void scaleAndThresholdsAndState();
    void featureNodesAndTargetsFromASession();
    void anotherModelSaysTheSetDoesNotFit();
    void savedGraphOpensOffline();
    void aPromptRunWhileAFileIsReadLeavesTheFile();
    void windowOpensAGraphFileAfterTheRestore();
    void aLargeFileOpensAndDraws();
    void badFileSaysWhy();

private:
    /// The document's feature nodes, most influential (smallest cumulative influence) first.
    std::vector<int> featuresByInfluence() const {
        const GraphDocument* doc = panel_->document();
        std::vector<int> out;
        for (size_t i = 0; i < doc->nodes.size(); ++i)
            if (doc->nodes[i].kind == GraphNodeKind::Feature) out.push_back(int(i));
        std::stable_sort(out.begin(), out.end(), [&](int a, int b) { return doc->nodes[size_t(a)].influence < doc->nodes[size_t(b)].influence; });
        return out;
    }
    QLabel* labelContaining(const QString& text) const {
        for (QLabel* l : panel_->findChildren<QLabel*>())
            if (l->text().contains(text)) return l;
        return nullptr;
    }

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    std::shared_ptr<const DictionarySet> set_;
    ReplacementModel rm_;
    AttributionGraph graph_;
    PrunedGraph pruned_;
    std::unique_ptr<GraphPanel> panel_;
    QTemporaryDir tmp_;
};

void TestGuiGraphs::initTestCase() {
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    QSKIP("the demo's transcoder set is a circuit-tracer config.yaml: this build has no yaml-cpp (the arm64 sysroot)");
#endif
    model_ = loadModel(demoDir());
    ForwardOptions o;
    o.allLogits = false; // as the window runs a prompt
    cache_ = std::make_shared<const ActivationCache>(
        runForward(*model_, tokenizePrompt(model_->tokenizer(), QStringLiteral("In the beginning God created the"), true), o));
    set_ = std::make_shared<const DictionarySet>(openDictionaries(kTranscoders));
    rm_ = buildReplacementModel(*model_, *set_, cache_->tokens);
    graph_ = attributeGraph(rm_);
    pruned_ = pruneGraph(graph_);
    panel_ = std::make_unique<GraphPanel>();
    panel_->resize(1500, 900);
    panel_->show();
    panel_->setContext(model_, cache_, tokenLabels(model_->tokenizer(), cache_->tokens));
    panel_->setTranscoders(set_, kTranscoders); // builds
    panel_->waitForIdle();
    QCoreApplication::processEvents();
}

void TestGuiGraphs::buildsTheGraph() {
    QVERIFY(panel_->built());
    const GraphDocument* doc = panel_->document();
    QVERIFY(doc);
    QCOMPARE(int(doc->nodes.size()), pruned_.keptNodes());
    QCOMPARE(int(doc->links.size()), int(pruned_.edges.size()));
    QCOMPARE(panel_->built()->graph.nNodes(), graph_.nNodes());
    QCOMPARE(panel_->plot()->shownNodeCount(), pruned_.keptNodes());
    const GraphScores s = graphScores(graph_);
    QVERIFY2(panel_->summaryText().contains(QStringLiteral("Replacement score %1, completeness %2").arg(s.replacement, 0, 'f', 3).arg(s.completeness, 0, 'f', 3)),
             qPrintable(panel_->summaryText()));
    QVERIFY(panel_->summaryText().contains(QStringLiteral("kept %1 nodes and %2 edges").arg(pruned_.keptNodes()).arg(pruned_.edges.size())));
    // the layout: layers up (embeddings lowest, logits highest), positions left to right, size by influence
    GraphPlot* plot = panel_->plot();
    for (size_t a = 0; a < doc->nodes.size(); ++a)
        for (size_t b = 0; b < doc->nodes.size(); ++b) {
            const GraphDocumentNode &na = doc->nodes[a], &nb = doc->nodes[b];
            if (na.layer < nb.layer) QVERIFY(plot->nodeCenter(int(a)).y() > plot->nodeCenter(int(b)).y());
            if (na.ctxIdx < nb.ctxIdx) QVERIFY(plot->nodeCenter(int(a)).x() < plot->nodeCenter(int(b)).x());
            if (na.layer == nb.layer && na.ctxIdx == nb.ctxIdx && na.kind == nb.kind && doc->sizeWeight(int(a)) > doc->sizeWeight(int(b)))
                QVERIFY(plot->nodeRadius(int(a)) >= plot->nodeRadius(int(b)));
        }
}

void TestGuiGraphs::labelsOnFeatureNodes() {
    // a label for the most influential feature at its layer (and one for the same index a layer up, which must not
    // land): the node's clerp at every position, the card's label line, the figure's hover text; a pin stays
    const int node = featuresByInfluence().front();
    const GraphDocumentNode n = panel_->document()->nodes[size_t(node)];
    panel_->setPinned(node, true);
    auto labels = std::make_shared<FeatureLabels>();
    labels->labels = {{{n.layer, int(n.feature)}, QStringLiteral("begins a <clause>")}, {{n.layer + 1, int(n.feature)}, QStringLiteral("wrong layer")}};
    panel_->setFeatureLabels(labels);
    int labelled = 0;
    for (const GraphDocumentNode& m : panel_->document()->nodes) {
        if (m.kind == GraphNodeKind::Logit) continue; // their own "Output …"
        const bool same = m.kind == GraphNodeKind::Feature && m.layer == n.layer && m.feature == n.feature;
        QCOMPARE(m.clerp, same ? QStringLiteral("begins a <clause>") : QString());
        labelled += same;
    }
    QVERIFY(labelled >= 1);
    panel_->selectNode(node);
    QVERIFY2(panel_->cardText().contains(QStringLiteral("label: begins a &lt;clause&gt;")), qPrintable(panel_->cardText()));
    QCOMPARE(panel_->plot()->toolTipAt(panel_->plot()->nodeCenter(node)), panel_->document()->nodeLabel(node) + QStringLiteral(": begins a <clause>"));
    QVERIFY(panel_->document()->pinnedIds.contains(n.nodeId));
    panel_->setPinned(node, false);
    panel_->setFeatureLabels(nullptr);
}

void TestGuiGraphs::featureCard() {
    const int node = featuresByInfluence().front();
    const GraphDocumentNode& n = panel_->document()->nodes[size_t(node)];
    panel_->selectNode(node);
    const QString card = panel_->cardText();
    QVERIFY2(card.contains(QStringLiteral("layer %1").arg(n.layer)) && card.contains(QStringLiteral("feature %1").arg(n.feature)), qPrintable(card));
    QVERIFY(card.contains(QStringLiteral("position %1").arg(n.ctxIdx)));
    QVERIFY(card.contains(QStringLiteral("activation %1").arg(n.activation, 0, 'f', 4)));
    const FeatureReadout r = readFeature(*model_, set_->coders[size_t(n.layer)], n.feature, 6);
    QVERIFY2(card.contains(tokenLabels(model_->tokenizer(), {r.decoderTop[0].id}).value(0).toHtmlEscaped()), qPrintable(card));
    QVERIFY(card.contains(QStringLiteral("No corpus contexts"))); // the bundled set has none, and says so
    for (size_t i = 0; i < panel_->document()->nodes.size(); ++i) // a logit's card: its probability
        if (const GraphDocumentNode& l = panel_->document()->nodes[i]; l.kind == GraphNodeKind::Logit) {
            panel_->selectNode(int(i));
            QVERIFY2(panel_->cardText().contains(QStringLiteral("probability %1").arg(l.tokenProb, 0, 'f', 4)), qPrintable(panel_->cardText()));
            break;
        }
    panel_->selectNode(node);
    // the edge list: up to 8 strongest incoming, then up to 8 outgoing
    auto* edges = panel_->findChildren<QTableWidget*>().at(0);
    for (QTableWidget* t : panel_->findChildren<QTableWidget*>())
        if (t->horizontalHeaderItem(0) && t->horizontalHeaderItem(0)->text() == QStringLiteral("edge")) edges = t;
    const int in = int(panel_->document()->strongestLinks(node, true, 8).size()), out = int(panel_->document()->strongestLinks(node, false, 8).size());
    QVERIFY(in + out > 0);
    QCOMPARE(edges->rowCount(), in + out);
}

void TestGuiGraphs::hoverShowsTheCard() {
    panel_->selectNode(-1);
    GraphPlot* plot = panel_->plot();
    const int node = featuresByInfluence().at(1);
    const QPoint at = plot->nodeCenter(node).toPoint();
    QCOMPARE(plot->nodeAt(at), node);
    QTest::mouseMove(plot, at);
    QCoreApplication::processEvents();
    QVERIFY2(panel_->cardText().contains(panel_->document()->nodes[size_t(node)].nodeId), qPrintable(panel_->cardText()));
    QTest::mouseClick(plot, Qt::LeftButton, {}, at);
    QCOMPARE(plot->selectedNode(), node);
    // a double click pins the node, another unpins it
    const QString id = panel_->document()->nodes[size_t(node)].nodeId;
    QTest::mouseDClick(plot, Qt::LeftButton, {}, at);
    QVERIFY(panel_->document()->pinnedIds.contains(id));
    QTest::mouseDClick(plot, Qt::LeftButton, {}, at);
    QVERIFY(!panel_->document()->pinnedIds.contains(id));
}

void TestGuiGraphs::edgeRoutesOfASelectedEdge() {
    // the strongest link into a feature from a node at an earlier position: it crosses attention
    const GraphDocument* doc = panel_->document();
    int link = -1;
    for (size_t i = 0; i < doc->links.size(); ++i) {
        const GraphDocumentNode &s = doc->nodes[size_t(doc->links[i].source)], &t = doc->nodes[size_t(doc->links[i].target)];
        if (t.kind == GraphNodeKind::Feature && t.ctxIdx > s.ctxIdx &&
            (link < 0 || std::abs(doc->links[i].weight) > std::abs(doc->links[size_t(link)].weight)))
            link = int(i);
    }
    QVERIFY(link >= 0);
    panel_->selectLink(link);
    panel_->waitForIdle();
    const EdgeRoutes r = edgeRoutes(rm_, graph_, doc->nodes[size_t(doc->links[size_t(link)].target)].graphIndex,
                                    doc->nodes[size_t(doc->links[size_t(link)].source)].graphIndex);
    QTableWidget* routes = panel_->routesTable();
    QVERIFY(routes->rowCount() >= 2);
    QCOMPARE(routes->item(0, 1)->text(), QString::number(r.residual, 'g', 4));
    QCOMPARE(routes->item(1, 0)->text(), QStringLiteral("L%1H%2").arg(r.heads[0].layer).arg(r.heads[0].head));
    QCOMPARE(routes->item(1, 1)->text(), QString::number(r.heads[0].value, 'g', 4));
    QCOMPARE(routes->item(1, 3)->text().section(QLatin1Char(' '), 0, 0).toInt(), r.heads[0].query);
    QCOMPARE(routes->item(1, 4)->text(), QString::number(double(r.heads[0].pattern), 'f', 3));
    QVERIFY(std::abs(r.sum() - r.edge) <= 1e-4 * std::max(1.0, std::abs(r.edge)));
    // why the strongest head attends there: the QK split of its score at (query, source position)
    const int key = doc->nodes[size_t(doc->links[size_t(link)].source)].ctxIdx;
    const AttentionScoreSplit split = splitAttentionScore(*model_, rm_.clean, r.heads[0].layer, r.heads[0].head, r.heads[0].query, key);
    QVERIFY2(labelContaining(QStringLiteral("L%1H%2 attends %3 → %4 (pattern %5): its score %6, largest terms")
                                 .arg(r.heads[0].layer).arg(r.heads[0].head).arg(r.heads[0].query).arg(key)
                                 .arg(split.pattern, 0, 'f', 3).arg(split.score, 0, 'f', 2)),
             qPrintable(panel_->findChild<QLabel*>()->text()));
    QCOMPARE(split.pattern, double(r.heads[0].pattern));
    // a click on the widest link in the figure, halfway along it, selects it and splits it by heads
    int widest = 0;
    for (size_t i = 0; i < doc->links.size(); ++i)
        if (std::abs(doc->links[i].weight) > std::abs(doc->links[size_t(widest)].weight)) widest = int(i);
    GraphPlot* plot = panel_->plot();
    const QPoint mid = plot->linkMidpoint(widest).toPoint();
    QCOMPARE(plot->nodeAt(mid), -1);
    QCOMPARE(plot->linkAt(mid), widest);
    QTest::mouseClick(plot, Qt::LeftButton, {}, mid);
    panel_->waitForIdle();
    const GraphDocumentLink& w = doc->links[size_t(widest)];
    const EdgeRoutes rw = edgeRoutes(rm_, graph_, doc->nodes[size_t(w.target)].graphIndex, doc->nodes[size_t(w.source)].graphIndex);
    QCOMPARE(routes->item(0, 1)->text(), QString::number(rw.residual, 'g', 4));
    QVERIFY(labelContaining(QStringLiteral("%1 → %2: %3 = ").arg(doc->nodeLabel(w.source), doc->nodeLabel(w.target)).arg(rw.edge, 0, 'g', 4)));
}

void TestGuiGraphs::supernodeAblation() {
    const std::vector<int> top = featuresByInfluence();
    QVERIFY(top.size() >= 3);
    std::vector<int> graphNodes;
    for (int i = 0; i < 3; ++i) {
        panel_->setPinned(top[size_t(i)], true);
        graphNodes.push_back(panel_->document()->nodes[size_t(top[size_t(i)])].graphIndex);
    }
    QCOMPARE(panel_->document()->pinnedIds.size(), 3);
    QCOMPARE(panel_->groupPinned(QStringLiteral("top three")), 0);
    QCOMPARE(panel_->document()->supernodes.size(), size_t(1));
    QCOMPARE(panel_->document()->supernodes[0].size(), 4); // the name and three ids
    panel_->intervene(0, 0.0);
    panel_->waitForIdle();
    InterventionOptions o;
    o.mode = InterventionMode::Live;
    o.continuationTokens = 8;
    const std::vector<FeatureIntervention> edits = scaleFeatureNodes(graph_, graphNodes, 0.0f);
    QCOMPARE(int(edits.size()), 3);
    const InterventionResult after = interveneOnFeatures(rm_, edits, o);
    const InterventionResult clean = interveneOnFeatures(rm_, {}, o);
    const std::vector<TokenScore> want = topTokens(after.logits.row(after.logits.rows() - 1), 10);
    const std::vector<TokenScore> wantClean = topTokens(clean.logits.row(clean.logits.rows() - 1), 10);
    const GraphInterventionView& v = panel_->lastIntervention();
    QCOMPARE(v.after.size(), want.size());
    bool changed = false;
    for (size_t i = 0; i < want.size(); ++i) {
        QCOMPARE(v.after[i].id, want[i].id);
        QCOMPARE(v.after[i].prob, want[i].prob);
        QCOMPARE(v.clean[i].id, wantClean[i].id);
        changed |= v.after[i].id != v.clean[i].id || v.after[i].prob != v.clean[i].prob;
    }
    QVERIFY(changed); // ablating the three most influential features moves the prediction
    QCOMPARE(v.afterText, model_->tokenizer().decode(after.continuation));
    QCOMPARE(v.cleanText, model_->tokenizer().decode(clean.continuation));
    QVERIFY(labelContaining(QStringLiteral("<b>top three × 0</b>: …%1").arg(v.afterText.toHtmlEscaped())));
}

void TestGuiGraphs::pinnedSubgraph() {
    GraphPlot* plot = panel_->plot();
    const GraphDocument* doc = panel_->document();
    std::vector<char> pinned(doc->nodes.size(), 0);
    for (const QString& id : doc->pinnedIds) pinned[size_t(doc->indexOf(id))] = 1;
    int among = 0;
    for (const GraphDocumentLink& l : doc->links) among += pinned[size_t(l.source)] && pinned[size_t(l.target)];
    plot->setPinnedOnly(true);
    QCOMPARE(plot->shownNodeCount(), 3);
    QCOMPARE(plot->shownLinkCount(), among);
    QCOMPARE(plot->figureValues().cells.size(), size_t(among));
    plot->setPinnedOnly(false);
    QCOMPARE(plot->shownNodeCount(), int(doc->nodes.size()));
    QCOMPARE(plot->shownLinkCount(), int(doc->links.size()));
}

void TestGuiGraphs::exportsThePng() {
    GraphPlot* plot = panel_->plot();
    const QString path = tmp_.filePath(QStringLiteral("graph.png"));
    QCOMPARE(plot->actions()->exportTo(path, 1.0), QString());
    const QImage image(path);
    QCOMPARE(image.size(), plot->size());
    // drawn content: the background is the corner's colour; nodes (orange features, green embeddings) and red edges
    const QRgb background = image.pixel(0, 0);
    int other = 0, orange = 0, green = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) {
            const QColor c = image.pixelColor(x, y);
            other += image.pixel(x, y) != background;
            orange += c.red() > 220 && c.green() > 140 && c.green() < 180 && c.blue() < 80;
            green += c.green() > 170 && c.red() < 120 && c.blue() < 120;
        }
    QVERIFY2(other > image.width() * image.height() / 50, qPrintable(QString::number(other)));
    QVERIFY2(orange > 200 && green > 200, qPrintable(QStringLiteral("%1 %2").arg(orange).arg(green)));
    // vector formats: the edges as paths, the token labels as text; the edges as CSV, exactly
    const QString svg = tmp_.filePath(QStringLiteral("graph.svg")), pdf = tmp_.filePath(QStringLiteral("graph.pdf")),
                  csv = tmp_.filePath(QStringLiteral("graph.csv"));
    QCOMPARE(plot->actions()->exportTo(svg), QString());
    QCOMPARE(plot->actions()->exportTo(pdf), QString());
    QCOMPARE(plot->actions()->exportTo(csv), QString());
    QFile s(svg), c(csv);
    QVERIFY(s.open(QIODevice::ReadOnly) && c.open(QIODevice::ReadOnly));
    const QByteArray svgText = s.readAll();
    QVERIFY(svgText.count("<path") >= int(panel_->document()->links.size()));
    QVERIFY(svgText.contains("beginning"));
    QVERIFY(QFileInfo(pdf).size() > 1000);
    const QStringList rows = QString::fromUtf8(c.readAll()).trimmed().split(QLatin1Char('\n'));
    QCOMPARE(rows.size(), int(panel_->document()->links.size()) + 1); // header + one row per edge
    const GraphDocumentLink& first = panel_->document()->links[0];
    QCOMPARE(rows[1].trimmed(), QStringLiteral("%1,%2,%3").arg(panel_->document()->nodes[size_t(first.source)].nodeId,
                                                               panel_->document()->nodes[size_t(first.target)].nodeId, exactNumber(first.weight)));
}

void TestGuiGraphs::scaleAndThresholdsAndState() {
    // Scale ×3 on the supernode: interveneOnFeatures with each feature at 3 × its activation
    std::vector<int> graphNodes;
    for (int k = 1; k < panel_->document()->supernodes[0].size(); ++k)
        graphNodes.push_back(panel_->document()->nodes[size_t(panel_->document()->indexOf(panel_->document()->supernodes[0][k]))].graphIndex);
    panel_->intervene(0, 3.0);
    panel_->waitForIdle();
    InterventionOptions o;
    o.continuationTokens = 8;
    const InterventionResult after = interveneOnFeatures(rm_, scaleFeatureNodes(graph_, graphNodes, 3.0f), o);
    const std::vector<TokenScore> want = topTokens(after.logits.row(after.logits.rows() - 1), 10);
    QCOMPARE(panel_->lastIntervention().factor, 3.0f);
    for (size_t i = 0; i < want.size(); ++i) {
        QCOMPARE(panel_->lastIntervention().after[i].id, want[i].id);
        QCOMPARE(panel_->lastIntervention().after[i].prob, want[i].prob);
    }
    // other thresholds from a session, and the selected node: the rebuilt graph is pruneGraph's with them
    const QString id = panel_->document()->nodes[size_t(featuresByInfluence().front())].nodeId;
    panel_->restoreState(QJsonObject{{"node_threshold", 0.6}, {"edge_threshold", 0.9}, {"selected", id}}, nullptr);
    panel_->build();
    panel_->waitForIdle();
    const PrunedGraph tighter = pruneGraph(graph_, {0.6, 0.9});
    QCOMPARE(int(panel_->document()->nodes.size()), tighter.keptNodes());
    QVERIFY(tighter.keptNodes() < pruned_.keptNodes());
    QCOMPARE(int(panel_->document()->links.size()), int(tighter.edges.size()));
    QCOMPARE(panel_->plot()->selectedNode(), panel_->document()->indexOf(id));
    const QJsonObject saved = panel_->saveState();
    QCOMPARE(saved.value("node_threshold").toDouble(), 0.6);
    QCOMPARE(saved.value("edge_threshold").toDouble(), 0.9);
    QCOMPARE(saved.value("selected").toString(), id);
    QCOMPARE(saved.value("transcoders").toString(), kTranscoders);
    // back to the defaults for the tests below
    panel_->restoreState(QJsonObject{{"node_threshold", 0.8}, {"edge_threshold", 0.98}}, nullptr);
    panel_->build();
    panel_->waitForIdle();
    QCOMPARE(int(panel_->document()->nodes.size()), pruned_.keptNodes());
    QCOMPARE(panel_->document()->supernodes.size(), size_t(1)); // kept through the rebuilds
    // the same prompt run again: the same graph, supernodes included; another prompt: a new graph
    const BuiltGraph* before = panel_->built();
    panel_->setContext(model_, std::make_shared<const ActivationCache>(*cache_), tokenLabels(model_->tokenizer(), cache_->tokens));
    panel_->waitForIdle();
    QCOMPARE(panel_->built(), before);
    QCOMPARE(panel_->document()->supernodes.size(), size_t(1));
    ForwardOptions o2;
    o2.allLogits = false;
    const auto other = std::make_shared<const ActivationCache>(
        runForward(*model_, tokenizePrompt(model_->tokenizer(), QStringLiteral("And God said, Let there be light"), true), o2));
    panel_->setContext(model_, other, tokenLabels(model_->tokenizer(), other->tokens));
    panel_->waitForIdle();
    QVERIFY(panel_->built()); // (a new object: the old one may be freed and its address reused)
    QCOMPARE(panel_->built()->rm.tokens, other->tokens);
    QCOMPARE(int(panel_->document()->nodes.size()), pruneGraph(attributeGraph(buildReplacementModel(*model_, *set_, other->tokens))).keptNodes());
    QVERIFY(panel_->document()->supernodes.empty());
    // back to the test's prompt
    panel_->setContext(model_, cache_, tokenLabels(model_->tokenizer(), cache_->tokens));
    panel_->waitForIdle();
    QCOMPARE(int(panel_->document()->nodes.size()), pruned_.keptNodes());
}

void TestGuiGraphs::featureNodesAndTargetsFromASession() {
    // a session's feature-node bound and targets rebuild the graph already built: the library's graph with them
    panel_->restoreState(QJsonObject{{"max_feature_nodes", 100}, {"targets", "diff: word, beginning"}}, nullptr);
    panel_->waitForIdle();
    AttributionOptions o;
    o.maxFeatureNodes = 100;
    o.targets = parseAttributionTargets(QStringLiteral("diff: word, beginning"), rm_);
    const AttributionGraph want = attributeGraph(rm_, o);
    QVERIFY(panel_->built());
    QCOMPARE(panel_->built()->graph.nFeatures(), 100);
    QCOMPARE(panel_->built()->graph.nActiveFeatures, graph_.nFeatures());
    QCOMPARE(int(panel_->document()->nodes.size()), pruneGraph(want).keptNodes());
    QVERIFY2(panel_->summaryText().contains(QStringLiteral("%1 active features, the 100 most influential as nodes").arg(graph_.nFeatures())),
             qPrintable(panel_->summaryText()));
    int logits = 0;
    for (size_t i = 0; i < panel_->document()->nodes.size(); ++i)
        if (const GraphDocumentNode& n = panel_->document()->nodes[i]; n.kind == GraphNodeKind::Logit) {
            ++logits;
            QCOMPARE(n.clerp, QStringLiteral("logit( word) − logit( beginning) (w=1.000)"));
            // its card gives the target's weight, not a probability
            panel_->selectNode(int(i));
            QVERIFY2(panel_->cardText().contains(QStringLiteral("custom target, weight 1.0000")) &&
                         !panel_->cardText().contains(QStringLiteral("probability")),
                     qPrintable(panel_->cardText()));
        }
    QCOMPARE(logits, 1);
    QCOMPARE(panel_->saveState().value("max_feature_nodes").toInt(), 100);
    QCOMPARE(panel_->saveState().value("targets").toString(), QStringLiteral("diff: word, beginning"));
    // back to the defaults: the full graph again
    panel_->restoreState(QJsonObject{{"max_feature_nodes", 7500}, {"targets", ""}}, nullptr);
    panel_->waitForIdle();
    QCOMPARE(panel_->built()->graph.nFeatures(), graph_.nFeatures());
    QCOMPARE(int(panel_->document()->nodes.size()), pruned_.keptNodes());
}

void TestGuiGraphs::anotherModelSaysTheSetDoesNotFit() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    // tiny-gpt2 (d_model 2) with the demo's transcoders (d_model 128): no build, and the summary says why
    const auto tiny = std::shared_ptr<const Model>(loadModel(testdata("tiny-gpt2")));
    const auto cache = std::make_shared<const ActivationCache>(runForward(*tiny, tokenizePrompt(tiny->tokenizer(), QStringLiteral("hello world"), false)));
    panel_->setContext(tiny, cache, tokenLabels(tiny->tokenizer(), cache->tokens));
    panel_->waitForIdle();
    QVERIFY(!panel_->built());
    QVERIFY(!panel_->document());
    QString expected;
    try {
        requireFitsModel(*set_, tiny->config());
    } catch (const InputError& e) {
        expected = e.message();
    }
    QVERIFY(!expected.isEmpty());
    QCOMPARE(panel_->summaryText(), QStringLiteral("The transcoder set %1 does not fit this model (%2). Open a set made for it.").arg(kTranscoders, expected));
    // back to the demo: built again
    panel_->setContext(model_, cache_, tokenLabels(model_->tokenizer(), cache_->tokens));
    panel_->waitForIdle();
    QVERIFY(panel_->built());
    QCOMPARE(int(panel_->document()->nodes.size()), pruned_.keptNodes());
}

void TestGuiGraphs::savedGraphOpensOffline() {
    const std::vector<int> top = featuresByInfluence();
    panel_->setPinned(top[0], true);
    panel_->setPinned(top[1], true);
    QCOMPARE(panel_->groupPinned(QStringLiteral("saved pair")), 0);
    const QStringList group = panel_->document()->supernodes[0];
    const QString path = tmp_.filePath(QStringLiteral("saved.json"));
    QCOMPARE(panel_->saveGraphFile(path), QString());
    const size_t nodes = panel_->document()->nodes.size(), links = panel_->document()->links.size();
    const QStringList pins = panel_->document()->pinnedIds;
    panel_->openGraphFile(path);
    panel_->waitForIdle();
    QVERIFY(!panel_->built());
    QVERIFY(panel_->document()->isOffline());
    QCOMPARE(panel_->document()->nodes.size(), nodes);
    QCOMPARE(panel_->document()->links.size(), links);
    QCOMPARE(panel_->document()->pinnedIds, pins);
    QCOMPARE(pins.size(), 2);
    QCOMPARE(panel_->document()->supernodes.size(), size_t(1));
    QCOMPARE(panel_->document()->supernodes[0], group);
    QCOMPARE(panel_->plot()->shownNodeCount(), int(nodes));
    panel_->plot()->setPinnedOnly(true); // the file's pins drawn as such
    QCOMPARE(panel_->plot()->shownNodeCount(), 2);
    panel_->plot()->setPinnedOnly(false);
    QCOMPARE(panel_->plot()->shownNodeCount(), int(nodes));
    QVERIFY2(panel_->summaryText().startsWith(QStringLiteral("Offline: saved.json — %1 nodes, %2 edges").arg(nodes).arg(links)), qPrintable(panel_->summaryText()));
    // the card from the file's data; no interventions
    const int node = featuresByInfluence().front();
    panel_->selectNode(node);
    QVERIFY(panel_->cardText().contains(QStringLiteral("feature %1").arg(panel_->document()->nodes[size_t(node)].feature)));
    QVERIFY(panel_->cardText().contains(QStringLiteral("Opened from a file")));
    panel_->intervene(0, 0.0);
    QVERIFY(labelContaining(QStringLiteral("Interventions need a graph built here")));
    // a new prompt run leaves the opened file shown
    panel_->setContext(model_, cache_, tokenLabels(model_->tokenizer(), cache_->tokens));
    panel_->waitForIdle();
    QVERIFY(panel_->document() && panel_->document()->isOffline());
    // removing the supernode, and unpinning all
    panel_->removeSupernode(0);
    QVERIFY(panel_->document()->supernodes.empty());
    for (QPushButton* b : panel_->findChildren<QPushButton*>())
        if (b->text() == QStringLiteral("Unpin all")) b->click();
    QVERIFY(panel_->document()->pinnedIds.isEmpty());
    panel_->plot()->setPinnedOnly(true);
    QCOMPARE(panel_->plot()->shownNodeCount(), 0);
    panel_->plot()->setPinnedOnly(false);
}

void TestGuiGraphs::aPromptRunWhileAFileIsReadLeavesTheFile() {
    // the window's startup: the file's read starts, then the model's first prompt run and its transcoder set arrive
    // before the read is done; the file is what is shown, not a graph built on that prompt
    const QString path = tmp_.filePath(QStringLiteral("saved.json")); // savedGraphOpensOffline's file
    const GraphDocument file = readGraphFile(path);
    panel_->build();
    panel_->waitForIdle();
    QVERIFY(panel_->built());
    panel_->openGraphFile(path);
    ForwardOptions o;
    o.allLogits = false;
    const auto other = std::make_shared<const ActivationCache>(runForward(*model_, tokenizePrompt(model_->tokenizer(), QStringLiteral("And the earth was"), true), o));
    panel_->setContext(model_, other, tokenLabels(model_->tokenizer(), other->tokens));
    panel_->setTranscoders(set_, kTranscoders);
    panel_->waitForIdle();
    QVERIFY(!panel_->built());
    QVERIFY(panel_->document() && panel_->document()->isOffline());
    QCOMPARE(panel_->document()->nodes.size(), file.nodes.size());
    QCOMPARE(panel_->document()->links.size(), file.links.size());
    // once read, Build graph builds on the prompt now run
    panel_->build();
    panel_->waitForIdle();
    QVERIFY(panel_->built());
    QVERIFY(!panel_->document()->isOffline());
    QCOMPARE(panel_->document()->promptTokens.size(), other->tokens.size());
    panel_->setContext(model_, cache_, tokenLabels(model_->tokenizer(), cache_->tokens)); // the suite's prompt again
    panel_->waitForIdle();
}

void TestGuiGraphs::windowOpensAGraphFileAfterTheRestore() {
    // attnscope --open-graph FILE: the window shows the file in the Graph tab, also when a session restore (here to the
    // Attention tab) is still running when it is asked: the file is opened once the restore is done
    const QString path = tmp_.filePath(QStringLiteral("saved.json")); // savedGraphOpensOffline's file
    QVERIFY(QFileInfo::exists(path));
    const GraphDocument file = readGraphFile(path);
    qputenv("HOME", tmp_.path().toUtf8()); // the window's settings and stores stay inside the test
    qunsetenv("XDG_CONFIG_HOME");
    QCoreApplication::setOrganizationName(QStringLiteral("AttnScopeTest"));
    MainWindow w;
    w.show();
    SessionState state;
    state.model = demoDir();
    state.prompt = QStringLiteral("In the beginning God created the");
    state.tab = QStringLiteral("attention");
    QSignalSpy restored(&w.sessions(), &SessionController::restored);
    w.sessions().restore(state, {});
    QVERIFY(w.sessions().isRestoring());
    w.openGraphFile(path);
    QVERIFY(restored.wait(30000));
    w.waitForIdle();
    QCOMPARE(w.currentViewId(), QStringLiteral("graphs"));
    const auto* graph = qobject_cast<GraphPanel*>(w.panel(QStringLiteral("graphs")));
    QVERIFY(graph && graph->document());
    QVERIFY(graph->document()->isOffline());
    QCOMPARE(graph->document()->nodes.size(), file.nodes.size());
    QCOMPARE(graph->document()->links.size(), file.links.size());
    QCOMPARE(graph->document()->pinnedIds, file.pinnedIds);
    QVERIFY2(graph->summaryText().startsWith(QStringLiteral("Offline: saved.json — %1 nodes").arg(file.nodes.size())), qPrintable(graph->summaryText()));
    // a file that is not a graph says why in the tab
    const QString bad = tmp_.filePath(QStringLiteral("not-a-graph.json"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"nodes\": 3}");
    f.close();
    w.openGraphFile(bad);
    w.waitForIdle();
    QVERIFY2(graph->summaryText().startsWith(QStringLiteral("Cannot open the graph: ")) && graph->summaryText().contains(QStringLiteral("not-a-graph.json")),
             qPrintable(graph->summaryText()));
}

void TestGuiGraphs::aLargeFileOpensAndDraws() {
    // a Gemma-2-2B-sized graph: 26 layers, 40 positions, 4 000 features and 40 000 links (times printed, not asserted)
    const int layers = 26, positions = 40, features = 4000, links = 40000;
    QJsonArray tokens, nodes, linkArray;
    for (int p = 0; p < positions; ++p) {
        tokens.append(QStringLiteral(" t%1").arg(p));
        nodes.append(QJsonObject{{"node_id", QStringLiteral("E_%1_%2").arg(100 + p).arg(p)}, {"feature", p}, {"layer", "E"}, {"ctx_idx", p},
                                 {"feature_type", "embedding"}, {"influence", 0.5}});
    }
    for (int i = 0; i < features; ++i) {
        const int layer = i % layers, pos = (i * 7) % positions;
        nodes.append(QJsonObject{{"node_id", QStringLiteral("%1_%2_%3").arg(layer).arg(i).arg(pos)}, {"feature", i}, {"layer", QString::number(layer)},
                                 {"ctx_idx", pos}, {"feature_type", "cross layer transcoder"}, {"influence", (i % 100) / 100.0}, {"activation", 1.0}});
    }
    nodes.append(QJsonObject{{"node_id", QStringLiteral("%1_42_%2").arg(layers + 1).arg(positions - 1)}, {"feature", 42}, {"layer", QString::number(layers + 1)},
                             {"ctx_idx", positions - 1}, {"feature_type", "logit"}, {"token_prob", 0.5}});
    for (int k = 0; k < links; ++k) {
        const int a = positions + (k * 13) % features, b = positions + (k * 31 + 5) % features;
        linkArray.append(QJsonObject{{"source", nodes[std::min(a, b)].toObject().value("node_id")},
                                     {"target", nodes[std::max(a, b) == std::min(a, b) ? nodes.size() - 1 : std::max(a, b)].toObject().value("node_id")},
                                     {"weight", (k % 2 ? 1.0 : -1.0) * (k % 97) / 97.0}});
    }
    const QString path = tmp_.filePath(QStringLiteral("large.json"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(QJsonObject{{"metadata", QJsonObject{{"prompt_tokens", tokens}}}, {"nodes", nodes}, {"links", linkArray}}).toJson());
    f.close();
    QElapsedTimer t;
    t.start();
    QCOMPARE(int(readGraphFile(path).nodes.size()), positions + features + 1);
    const qint64 parse = t.restart();
    panel_->openGraphFile(path);
    panel_->waitForIdle();
    const qint64 read = t.restart();
    QCOMPARE(int(panel_->document()->nodes.size()), positions + features + 1);
    QCOMPARE(int(panel_->document()->links.size()), links);
    QCOMPARE(panel_->document()->nLayers(), layers);
    const QImage image = panel_->plot()->grab().toImage();
    const qint64 draw = t.restart();
    QTest::mouseMove(panel_->plot(), panel_->plot()->nodeCenter(positions + 3).toPoint());
    (void)panel_->plot()->grab();
    const qint64 hover = t.restart();
    const QPointF middle(panel_->plot()->width() / 2.0, panel_->plot()->height() / 2.0);
    const int link = panel_->plot()->linkAt(middle);
    const qint64 pick = t.elapsed();
    qInfo("large graph (%d nodes, %d links, %.1f MB): parse %lld ms, open and show %lld ms, draw %lld ms, hover redraw %lld ms, "
          "edge under the mouse %lld ms", positions + features + 1, links, double(QFileInfo(path).size()) / 1e6, parse, read, draw, hover, pick);
    // an edge of a graph opened from a file: no routes, and the tab says why
    if (link >= 0) {
        panel_->selectLink(link);
        QVERIFY(labelContaining(QStringLiteral("Head routes need a graph built here")));
    }
    QVERIFY(panel_->cardText().contains(panel_->document()->nodes[size_t(positions + 3)].nodeId));
    int drawn = 0;
    for (int y = 0; y < image.height(); y += 3)
        for (int x = 0; x < image.width(); x += 3) drawn += image.pixel(x, y) != image.pixel(0, 0);
    QVERIFY(drawn > image.width() * image.height() / 9 / 20);
}

void TestGuiGraphs::badFileSaysWhy() {

    const QString path = tmp_.filePath(QStringLiteral("bad.json"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"metadata": {"prompt_tokens": ["a"]}, "nodes": {}, "links": []})");
    f.close();
    panel_->openGraphFile(path);
    panel_->waitForIdle();
    QCOMPARE(panel_->summaryText(), QStringLiteral("Cannot open the graph: ") + path + QStringLiteral(": nodes is not an array"));
    QVERIFY(panel_->document()); // the graph shown before stays
}

QTEST_MAIN(TestGuiGraphs)
#include "tst_gui_graphs.moc"
