// Head loadings (model/analysis/graphs/head_loadings.h; circuit-tracer PR #114): an attribution-graph edge split at one
// attention layer into a bypass and one part per head. On the demo model with its bundled transcoders (as
// tst_attribution_graph), the demo cross-layer transcoder, and the Gemma 2 test model (post-attention norms, grouped
// heads, a skip transcoder): the parts sum to the edge at every layer; a one-hop edge's heads equal the source pushed
// through each head by hand and edgeRoutes' first-hop heads; edges that cannot cross the layer are all bypass; refusals.

#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/edge_routes.h"
#include "model/analysis/graphs/head_loadings.h"
#include "model/analysis/graphs/replacement_model.h"
#include "model/features/dictionary_set.h"
#include "support/error_capture.h"
#include "support/head_by_hand.h"
#include "support/random_transcoders.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

double worstRelative = 0; // the worst |sum − edge| / |edge| of every check, printed at the end

/// The `n` strongest edges of `g` (|A[t, s]|, every source kind) and each logit's five strongest.
std::vector<std::pair<int, int>> strongEdges(const AttributionGraph& g, size_t n) {
    std::vector<std::pair<double, std::pair<int, int>>> all;
    for (int t = 0; t < g.nNodes(); ++t)
        for (int s = 0; s < g.logitOffset; ++s)
            if (g.adjacency(t, s) != 0.0f) all.push_back({std::abs(g.adjacency(t, s)), {t, s}});
    std::sort(all.begin(), all.end(), std::greater<>());
    std::vector<std::pair<int, int>> out;
    for (size_t i = 0; i < std::min(n, all.size()); ++i) out.push_back(all[i].second);
    for (int t = g.logitOffset; t < g.nNodes(); ++t) {
        std::vector<std::pair<double, int>> into;
        for (int s = 0; s < g.logitOffset; ++s) into.push_back({std::abs(g.adjacency(t, s)), s});
        std::partial_sort(into.begin(), into.begin() + 5, into.end(), std::greater<>());
        for (int i = 0; i < 5; ++i) out.push_back({t, into[size_t(i)].second});
    }
    return out;
}

/// For every edge and every layer: bypass + Σ heads = the edge (≤ 1e-4 of it), one loading per head, the heads 0 when
/// the edge cannot cross the layer. *split: how many (edge, layer) pairs had a head carrying ≥ 1 % of the edge.
void checkSums(const ReplacementModel& rm, const AttributionGraph& g, const std::vector<std::pair<int, int>>& edges, int* split) {
    const int H = rm.model->config().n_heads;
    *split = 0;
    for (const auto& [t, s] : edges)
        for (int L = 0; L < g.nLayers; ++L) {
            const HeadLoadings h = headLoadings(rm, g, t, s, L);
            const QString what = QStringLiteral("%1 ← %2 at layer %3: bypass %4 + heads = %5 against %6").arg(t).arg(s).arg(L)
                                     .arg(h.bypass).arg(h.sum()).arg(h.edge);
            QVERIFY2(h.target == t && h.source == s && h.layer == L && int(h.heads.size()) == H && h.edge == double(g.adjacency(t, s)),
                     qPrintable(what));
            QVERIFY2(h.edge != 0.0, qPrintable(what));
            const double rel = std::abs(h.sum() - h.edge) / std::abs(h.edge);
            worstRelative = std::max(worstRelative, rel);
            QVERIFY2(rel <= 1e-4, qPrintable(what));
            if (!crossesAttentionLayer(g, t, s, L))
                for (double v : h.heads) QVERIFY2(v == 0.0, qPrintable(what));
            *split += std::any_of(h.heads.begin(), h.heads.end(), [&](double v) { return std::abs(v) >= 0.01 * std::abs(h.edge); });
        }
}

/// For every edge from a feature or error node of layer 0 into layer 1 or a logit, split at layer 1: no path from such a
/// source meets a head of layer 1 after another hop, so head h's loading is edgeRoutes' part whose first hop is head
/// (1, h) (computed there per pattern cell), and the bypass its residual + skip. *compared: how many edges were compared.
void compareWithFirstHops(const ReplacementModel& rm, const AttributionGraph& g, const std::vector<std::pair<int, int>>& edges, int* compared) {
    *compared = 0;
    for (const auto& [t, s] : edges) {
        const GraphNode& sn = g.nodes[size_t(s)];
        if (sn.kind == GraphNodeKind::Token || sn.layer != 0 || g.nodes[size_t(t)].layer < 1) continue;
        const HeadLoadings h = headLoadings(rm, g, t, s, 1);
        const EdgeRoutes r = edgeRoutes(rm, g, t, s);
        const double tol = 1e-5 * std::max(1.0, std::abs(h.edge));
        QVERIFY2(std::abs(h.bypass - r.residual - r.skip) <= tol,
                 qPrintable(QStringLiteral("%1 ← %2: bypass %3 against %4 + %5").arg(t).arg(s).arg(h.bypass).arg(r.residual).arg(r.skip)));
        QCOMPARE(int(r.heads.size()), rm.model->config().n_heads); // layer 1's heads only: layer 0's are below the source
        for (const HeadRoute& hr : r.heads) {
            QCOMPARE(hr.layer, 1);
            QVERIFY2(std::abs(h.heads[size_t(hr.head)] - hr.value) <= tol,
                     qPrintable(QStringLiteral("%1 ← %2 head %3: %4 against %5").arg(t).arg(s).arg(hr.head).arg(h.heads[size_t(hr.head)]).arg(hr.value)));
        }
        ++*compared;
    }
}

/// The `n` strongest edges of g (strongEdges) through checkSums and compareWithFirstHops: at least minSplit (edge, layer)
/// pairs with a head carrying 1 % of the edge, and minCompared edges compared with their first hops.
void checkStrongEdges(const ReplacementModel& rm, const AttributionGraph& g, size_t n, int minSplit, int minCompared) {
    const std::vector<std::pair<int, int>> edges = strongEdges(g, n);
    int split = 0, compared = 0;
    checkSums(rm, g, edges, &split);
    QVERIFY2(split > minSplit, qPrintable(QString::number(split)));
    compareWithFirstHops(rm, g, edges, &compared);
    QVERIFY2(compared > minCompared, qPrintable(QString::number(compared)));
}

} // namespace

class TestHeadLoadings : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void partsSumToTheEdgeAtEveryLayer();
    void oneHopHeadsEqualAForwardThroughEachHead();
    void headsMatchFirstHopRoutes();
    void edgesThatCannotCrossTheLayerAreBypass();
    void gemma2PostNormsAndSkipTranscoder();
    void crossLayerTranscoder();
    void refusals();
    void cleanupTestCase();

private:
    std::shared_ptr<const Model> model_;
    DictionarySet set_;
    std::vector<int> tokens_;
    ReplacementModel rm_;
    AttributionGraph graph_;
};

void TestHeadLoadings::initTestCase() {
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    QSKIP("the demo's transcoder set is a circuit-tracer config.yaml: this build has no yaml-cpp (the arm64 sysroot)");
#endif
    model_ = loadModel(demoDir());
    set_ = openDictionaries(sourceFile(QStringLiteral("resources/demo-features/transcoders")));
    const QJsonObject ref = readJsonObject(sourceFile(QStringLiteral("tests/data/graphs/demo_graph_reference.json")));
    for (const QJsonValue& v : ref["token_ids"].toArray()) tokens_.push_back(v.toInt());
    QCOMPARE(int(tokens_.size()), 7);
    rm_ = buildReplacementModel(*model_, set_, tokens_);
    graph_ = attributeGraph(rm_);
    QCOMPARE(graph_.nLayers, 2);
}

void TestHeadLoadings::partsSumToTheEdgeAtEveryLayer() {
    // 300 strongest edges (features, errors and tokens into features and logits) and each logit's five, at layers 0 and 1
    const std::vector<std::pair<int, int>> edges = strongEdges(graph_, 300);
    int crossing = 0, acrossPositions = 0, fromTokens = 0;
    for (const auto& [t, s] : edges) {
        crossing += crossesAttentionLayer(graph_, t, s, 0) + crossesAttentionLayer(graph_, t, s, 1);
        acrossPositions += graph_.nodes[size_t(t)].position != graph_.nodes[size_t(s)].position;
        fromTokens += graph_.nodes[size_t(s)].kind == GraphNodeKind::Token;
    }
    QVERIFY(crossing > 200);
    QVERIFY(acrossPositions > 50);
    QVERIFY(fromTokens > 5);
    int split = 0;
    checkSums(rm_, graph_, edges, &split);
    QVERIFY(split > 100); // the heads carry real parts of the edges
}

void TestHeadLoadings::oneHopHeadsEqualAForwardThroughEachHead() {
    // a layer-0 feature into a layer-1 feature at a later position, split at layer 1: every path goes through one head
    // of layer 1 (the residual stays at the source's position), so the bypass is 0 and each head's loading is the source
    // pushed through that head alone, by hand
    const auto [t, s] = strongestOneHopEdge(graph_);
    QVERIFY(t >= 0);
    const HeadLoadings h = headLoadings(rm_, graph_, t, s, 1);
    QVERIFY(std::abs(h.edge) > 0.05);
    QVERIFY2(std::abs(h.bypass) <= 1e-7 * std::abs(h.edge), qPrintable(QString::number(h.bypass)));
    double largest = 0;
    for (int head = 0; head < model_->config().n_heads; ++head) {
        const double want = headPartByHand(*model_, rm_.clean, set_, graph_.nodes[size_t(t)], graph_.nodes[size_t(s)], head);
        QVERIFY2(std::abs(h.heads[size_t(head)] - want) <= 1e-5 * std::max(1.0, std::abs(want)),
                 qPrintable(QStringLiteral("head %1: %2 against %3").arg(head).arg(h.heads[size_t(head)]).arg(want)));
        largest = std::max(largest, std::abs(want));
    }
    QVERIFY(largest > 0.01);
    QVERIFY(std::abs(h.sum() - h.edge) <= 1e-4 * std::abs(h.edge));
}

void TestHeadLoadings::headsMatchFirstHopRoutes() {
    int compared = 0;
    compareWithFirstHops(rm_, graph_, strongEdges(graph_, 300), &compared);
    QVERIFY(compared > 30);
}

void TestHeadLoadings::edgesThatCannotCrossTheLayerAreBypass() {
    // the one-hop edge at layer 0: its source writes at layer 0, above layer 0's attention
    const auto [t, s] = strongestOneHopEdge(graph_);
    const HeadLoadings at0 = headLoadings(rm_, graph_, t, s, 0);
    QVERIFY(!crossesAttentionLayer(graph_, t, s, 0));
    QVERIFY(at0.heads == std::vector<double>(size_t(model_->config().n_heads), 0.0));
    QVERIFY(std::abs(at0.bypass - at0.edge) <= 1e-4 * std::abs(at0.edge));
    // a token into a layer-0 feature at layer 1: the target's gradient never reaches layer 1's attention
    int t0 = -1, tok = -1;
    for (int i = 0; i < graph_.nFeatures() && t0 < 0; ++i)
        for (int p = 0; p < graph_.nPositions(); ++p)
            if (graph_.nodes[size_t(i)].layer == 0 && graph_.nodes[size_t(i)].position > p &&
                std::abs(graph_.adjacency(i, graph_.tokenOffset + p)) > 0.01) {
                t0 = i;
                tok = graph_.tokenOffset + p;
                break;
            }
    QVERIFY(t0 >= 0);
    const HeadLoadings below = headLoadings(rm_, graph_, t0, tok, 1);
    QVERIFY(below.heads == std::vector<double>(size_t(model_->config().n_heads), 0.0));
    QVERIFY(std::abs(below.bypass - below.edge) <= 1e-4 * std::abs(below.edge));
    // … while at layer 0 the same edge, across positions, is all heads
    const HeadLoadings at0Token = headLoadings(rm_, graph_, t0, tok, 0);
    QVERIFY(std::abs(at0Token.bypass) <= 1e-7);
    QVERIFY(std::abs(at0Token.sum() - at0Token.edge) <= 1e-4 * std::abs(at0Token.edge));
    // nothing flows down: a layer-1 feature is no source of a layer-0 feature
    const HeadLoadings none = headLoadings(rm_, graph_, 0, graph_.nFeatures() - 1, 0);
    QCOMPARE(none.edge, 0.0);
    QCOMPARE(none.sum(), 0.0);
}

void TestHeadLoadings::gemma2PostNormsAndSkipTranscoder() {
    // RMSNorm, post-attention and post-MLP norms, grouped-query heads, soft-caps, and layer 1's transcoder with a W_skip
    const std::shared_ptr<const Model> gemma = loadModel(sourceFile(QStringLiteral("tests/data/gradients/gemma2-softcap")));
    const ModelConfig& cfg = gemma->config();
    QVERIFY(cfg.postNorms);
    QVERIFY(cfg.groupSize() > 1);
    const DictionarySet set = randomTranscoders(cfg, 48, 7, 1);
    QVERIFY(!set.coders[1].W_skip.empty());
    const std::vector<int> tokens{cfg.bos_token_id, 17, 5, 42, 9, 33, 17};
    const ReplacementModel rm = buildReplacementModel(*gemma, set, tokens);
    // the first-hop comparison sees the skip: bypass = residual + skip for the layer-0 sources into logits
    checkStrongEdges(rm, attributeGraph(rm), 200, 50, 20);
}

void TestHeadLoadings::crossLayerTranscoder() {
    // the demo cross-layer transcoder: a layer-0 feature also writes at layer 1; into a logit, split at layer 1, the write
    // at layer 0 is split across the heads and the one at layer 1 is bypass
    const DictionarySet clt = openDictionaries(sourceFile(QStringLiteral("resources/demo-features/clt")));
    QCOMPARE(clt.kind, QStringLiteral("cross_layer_transcoder"));
    const ReplacementModel rm = buildReplacementModel(*model_, clt, tokens_);
    QVERIFY(rm.crossLayer());
    const AttributionGraph g = attributeGraph(rm);
    checkStrongEdges(rm, g, 300, 100, 30);
    int intoLogits = 0;
    for (const auto& [t, s] : strongEdges(g, 300))
        intoLogits += g.nodes[size_t(t)].kind == GraphNodeKind::Logit && g.nodes[size_t(s)].kind == GraphNodeKind::Feature &&
                      g.nodes[size_t(s)].layer == 0;
    QVERIFY(intoLogits > 3); // layer-0 features with both writes below a logit
}

void TestHeadLoadings::refusals() {
    const int n = graph_.nNodes(), logit = graph_.logitOffset, token = graph_.tokenOffset;
    QCOMPARE(inputErrorOf([&] { headLoadings(rm_, graph_, n, 0, 1); }),
             QStringLiteral("head loadings: target node %1 is outside the graph (nodes 0 … %2)").arg(n).arg(n - 1));
    QCOMPARE(inputErrorOf([&] { headLoadings(rm_, graph_, logit, -1, 1); }),
             QStringLiteral("head loadings: source node -1 is outside the graph (nodes 0 … %1)").arg(n - 1));
    QCOMPARE(inputErrorOf([&] { headLoadings(rm_, graph_, logit, 0, 2); }),
             QStringLiteral("head loadings: layer 2 is out of range: the model has 2 layers (0 … 1)"));
    QCOMPARE(inputErrorOf([&] { headLoadings(rm_, graph_, logit, 0, -1); }),
             QStringLiteral("head loadings: layer -1 is out of range: the model has 2 layers (0 … 1)"));
    QCOMPARE(inputErrorOf([&] { headLoadings(rm_, graph_, logit, logit + 1, 1); }),
             QStringLiteral("node %1 is a logit: it is no edge's source").arg(logit + 1));
    QCOMPARE(inputErrorOf([&] { headLoadings(rm_, graph_, token, 0, 1); }),
             QStringLiteral("node %1 is not a target: only feature and logit nodes have incoming edges").arg(token));
}

void TestHeadLoadings::cleanupTestCase() {
    qInfo("worst relative |bypass + Σ heads − edge| / |edge|: %.3g", worstRelative);
}

QTEST_GUILESS_MAIN(TestHeadLoadings)
#include "tst_head_loadings.moc"
