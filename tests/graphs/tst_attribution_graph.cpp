// The attribution graph of the demo model with its bundled transcoders (resources/demo-features/transcoders) on
// "In the beginning God created the", against tools/graph_reference.py's float64 PyTorch reference
// (tests/data/graphs: circuit-tracer's gradient injection, checked there against per-node knock-out): the replacement
// model's logits, every node, every edge of the 561 × 561 adjacency, each node's completeness constant, the pruning
// masks and the replacement and completeness scores; and the hostile cases.

#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/edge_routes.h"
#include "model/analysis/graphs/feature_intervention.h"
#include "model/analysis/graphs/graph_pruning.h"
#include "model/analysis/graphs/replacement_model.h"
#include "model/features/dictionary_set.h"
#include "model/features/npz_archive.h"
#include "model/features/sparse_coder.h"
#include "model/formats/model_loader.h"
#include "model/transformer/generate.h"
#include "support/error_capture.h"
#include "support/gemma_scope2_files.h"
#include "support/head_by_hand.h"
#include "support/hf_llama_folder.h"
#include "support/made_tokenizer.h"
#include "support/random_transcoders.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QTemporaryDir>
#include <numeric>
#include <random>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

/// Checks the columns of up to `maxSources` feature and error sources (the most influential, then every layer's
/// error at the last position) by knock-out: the frozen replacement model run forward with the source removed moves
/// each feature target's pre-activation by W_enc[f]·Δx and each logit node's value (logit − mean logit, before the
/// soft-cap) by exactly −A[t, s]. An independent check of the backward: forward passes only.
void checkEdgesByKnockOut(const ReplacementModel& rm, const AttributionGraph& g, int maxSources) {
    const PrunedGraph p = pruneGraph(g);
    std::vector<int> sources(size_t(g.nFeatures()));
    std::iota(sources.begin(), sources.end(), 0);
    std::stable_sort(sources.begin(), sources.end(), [&](int a, int b) { return p.influence[size_t(a)] > p.influence[size_t(b)]; });
    sources.resize(std::min<size_t>(sources.size(), size_t(maxSources)));
    for (int l = 0; l < g.nLayers; ++l) sources.push_back(g.errorIndex(l, g.nPositions() - 1));
    std::vector<Matrix> xFull;
    const Matrix full = replacementLogits(rm, rm.activations, rm.errors, &xFull);
    const Eigen::Index last = full.rows() - 1;
    double scale = 0;
    for (int t = 0; t < g.nNodes(); ++t)
        for (int s : sources) scale = std::max(scale, double(std::abs(g.adjacency(t, s))));
    QVERIFY(scale > 0);
    int checked = 0;
    for (int s : sources) {
        std::vector<Matrix> acts = rm.activations, errs = rm.errors, x;
        const GraphNode& sn = g.nodes[size_t(s)];
        if (sn.kind == GraphNodeKind::Feature) acts[size_t(sn.layer)](sn.position, sn.id) = 0;
        else errs[size_t(sn.layer)].row(sn.position).setZero();
        const Matrix knocked = replacementLogits(rm, acts, errs, &x);
        const double meanShift = (full.row(last) - knocked.row(last)).cast<double>().mean();
        for (int t = 0; t < g.nNodes(); ++t) {
            const GraphNode& tn = g.nodes[size_t(t)];
            double moved;
            if (tn.kind == GraphNodeKind::Feature)
                moved = encoderDirection(rm.transcoders->coders[size_t(tn.layer)], tn.id).cast<double>()
                            .dot((xFull[size_t(tn.layer)].row(tn.position) - x[size_t(tn.layer)].row(tn.position)).cast<double>());
            else if (tn.kind == GraphNodeKind::Logit)
                moved = double(full(last, tn.id) - knocked(last, tn.id)) - meanShift;
            else
                continue;
            QVERIFY2(std::abs(moved - g.adjacency(t, s)) <= 2e-4 * scale,
                     qPrintable(QStringLiteral("edge %1 ← %2: knock-out %3, backward %4 (scale %5)").arg(t).arg(s).arg(moved)
                                    .arg(g.adjacency(t, s)).arg(scale)));
            checked += std::abs(g.adjacency(t, s)) > 1e-3 * scale;
        }
    }
    QVERIFY(checked > 20); // the check saw real edges
}

/// The routes of up to `count` edges into features from at least `distance` positions back with |A| > `threshold`:
/// residual + skip + heads = the edge; and an empty intervention is the clean run.
void checkRoutesSumToEdges(const ReplacementModel& rm, const AttributionGraph& g, int distance, double threshold, int count) {
    int routes = 0;
    for (int t = 0; t < g.nFeatures(); ++t)
        for (int s = 0; s < g.nFeatures() && routes < count; ++s)
            if (g.nodes[size_t(s)].position + distance <= g.nodes[size_t(t)].position && std::abs(g.adjacency(t, s)) > threshold) {
                const EdgeRoutes r = edgeRoutes(rm, g, t, s);
                QVERIFY2(std::abs(r.sum() - r.edge) <= 1e-4 * std::max(1.0, std::abs(r.edge)), qPrintable(QStringLiteral("%1 ← %2").arg(t).arg(s)));
                ++routes;
            }
    QVERIFY(routes > 0);
    QVERIFY((interveneOnFeatures(rm, {}).logits - rm.clean.logits).cwiseAbs().maxCoeff() <= 1e-5);
}

const QString kGraphData = attnscope::test::sourceFile(QStringLiteral("tests/data/graphs/"));
const QString kTranscoders = attnscope::test::sourceFile(QStringLiteral("resources/demo-features/transcoders"));

} // namespace

class TestAttributionGraph : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void replacementModelReproducesTheCleanLogits();
    void replacementModelIsAffineInTheFeatures();
    void nodesMatchTheReference();
    void everyEdgeMatchesTheReference();
    void edgesPlusConstantSumToEachTarget();
    void pruningMatchesTheReference();
    void scoresMatchTheReference();
    void edgeRoutesSumToTheEdge();
    void headRouteEqualsAForwardThroughThatHead();
    void refusesSetsItCannotUse();
    void refusesAGraphOverTheMemoryBudget();
    void interventionsMatchTheReference();
    void anEmptyInterventionIsTheCleanRun();
    void frozenAblationMovesEachLogitByItsEdge();
    void continuationCarriesTheIntervention();
    void refusesInterventionsOutsideTheModel();
    void edgesMatchKnockOut();
    void gemma2PostNormsAndSoftcap();
    void gemma3PerLayerWindowsAndRope();
    void gemmaScope2OnGemma3_data();
    void gemmaScope2OnGemma3();
    void crossLayerTranscoderMatchesTheReference();

private:
    std::shared_ptr<const Model> model_;
    DictionarySet set_;
    QJsonObject ref_;
    std::vector<int> tokens_;
    ReplacementModel rm_;
    AttributionGraph graph_;
    Eigen::MatrixXd refAdjacency_;
};

void TestAttributionGraph::initTestCase() {
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    QSKIP("the demo's transcoder set is a circuit-tracer config.yaml: this build has no yaml-cpp (the arm64 sysroot)");
#endif
    model_ = loadModel(demoDir());
    set_ = openDictionaries(kTranscoders);
    ref_ = readJsonObject(kGraphData + QStringLiteral("demo_graph_reference.json"));
    for (const QJsonValue& v : ref_["token_ids"].toArray()) tokens_.push_back(v.toInt());
    QCOMPARE(int(tokens_.size()), 7);
    rm_ = buildReplacementModel(*model_, set_, tokens_);
    graph_ = attributeGraph(rm_);

    QFile f(kGraphData + QStringLiteral("demo_graph_adjacency.npy"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray bytes = f.readAll();
    const NpyHeader h = parseNpyHeader(bytes, f.fileName(), QStringLiteral("adjacency"));
    QCOMPARE(h.dtype, DType::F32);
    QCOMPARE(int(h.shape.size()), 2);
    const int n = ref_["n_nodes"].toInt();
    QCOMPARE(h.shape[0], std::int64_t(n));
    refAdjacency_.resize(n, n);
    const float* p = reinterpret_cast<const float*>(bytes.constData() + h.dataOffset);
    for (int t = 0; t < n; ++t)
        for (int s = 0; s < n; ++s) refAdjacency_(t, s) = p[size_t(t) * size_t(n) + size_t(s)];
}

void TestAttributionGraph::replacementModelReproducesTheCleanLogits() {
    const Matrix logits = replacementLogits(rm_, rm_.activations, rm_.errors);
    QCOMPARE(logits.rows(), rm_.clean.logits.rows());
    const double diff = (logits - rm_.clean.logits).cwiseAbs().maxCoeff();
    QVERIFY2(diff <= 1e-4, qPrintable(QString::number(diff)));
    // without the error nodes it is a different model: the check above can fail
    std::vector<Matrix> noErrors;
    for (const Matrix& e : rm_.errors) noErrors.push_back(Matrix::Zero(e.rows(), e.cols()));
    QVERIFY((replacementLogits(rm_, rm_.activations, noErrors) - rm_.clean.logits).cwiseAbs().maxCoeff() > 1e-2);
    // against the reference's clean run
    const QJsonArray top = ref_["clean"].toObject()["top_logits_last"].toArray();
    for (const QJsonValue& v : top)
        QVERIFY(std::abs(logits(6, v["token_id"].toInt()) - v["logit"].toDouble()) < 1e-4);
}

void TestAttributionGraph::replacementModelIsAffineInTheFeatures() {
    std::vector<Matrix> twice, zero;
    for (const Matrix& a : rm_.activations) {
        twice.push_back(2 * a);
        zero.push_back(Matrix::Zero(a.rows(), a.cols()));
    }
    const Matrix l1 = replacementLogits(rm_, rm_.activations, rm_.errors);
    const Matrix l2 = replacementLogits(rm_, twice, rm_.errors);
    const Matrix l0 = replacementLogits(rm_, zero, rm_.errors);
    QVERIFY((l2 - (2 * l1 - l0)).cwiseAbs().maxCoeff() < 1e-4);
    QVERIFY((l2 - l1).cwiseAbs().maxCoeff() > 0.1); // the features do move the logits
}

void TestAttributionGraph::nodesMatchTheReference() {
    const QJsonArray nodes = ref_["nodes"].toArray();
    QCOMPARE(graph_.nNodes(), nodes.size());
    QCOMPARE(graph_.nFeatures(), ref_["n_features"].toInt());
    QCOMPARE(graph_.errorOffset, ref_["offsets"].toObject()["error"].toInt());
    QCOMPARE(graph_.tokenOffset, ref_["offsets"].toObject()["token"].toInt());
    QCOMPARE(graph_.logitOffset, ref_["offsets"].toObject()["logit"].toInt());
    for (int i = 0; i < graph_.nNodes(); ++i) {
        const QJsonObject r = nodes[i].toObject();
        const GraphNode& g = graph_.nodes[size_t(i)];
        const QString type = r["type"].toString();
        const QString where = QStringLiteral("node %1 (%2)").arg(i).arg(type);
        QCOMPARE(g.position, r["pos"].toInt());
        if (type == QLatin1String("feature")) {
            QCOMPARE(g.kind, GraphNodeKind::Feature);
            QCOMPARE(g.layer, r["layer"].toInt());
            QCOMPARE(g.id, r["feature"].toInt());
            QVERIFY2(std::abs(g.activation - r["activation"].toDouble()) < 1e-5, qPrintable(where));
        } else if (type == QLatin1String("error")) {
            QCOMPARE(g.kind, GraphNodeKind::Error);
            QCOMPARE(g.layer, r["layer"].toInt());
            const double norm = rm_.errors[size_t(g.layer)].row(g.position).norm();
            QVERIFY2(std::abs(norm - r["error_norm"].toDouble()) < 1e-4, qPrintable(where));
        } else if (type == QLatin1String("token")) {
            QCOMPARE(g.kind, GraphNodeKind::Token);
            QCOMPARE(g.id, r["token_id"].toInt());
        } else {
            QCOMPARE(g.kind, GraphNodeKind::Logit);
            QCOMPARE(g.id, r["token_id"].toInt());
            QVERIFY2(std::abs(g.activation - r["prob"].toDouble()) < 1e-6, qPrintable(where));
        }
    }
}

void TestAttributionGraph::everyEdgeMatchesTheReference() {
    const int n = graph_.nNodes();
    const double scale = ref_["adjacency_stats"].toObject()["max_abs"].toDouble();
    double worst = 0;
    int wt = 0, ws = 0, nonzero = 0;
    for (int t = 0; t < n; ++t)
        for (int s = 0; s < n; ++s) {
            const double d = std::abs(double(graph_.adjacency(t, s)) - refAdjacency_(t, s));
            if (d > worst) {
                worst = d;
                wt = t;
                ws = s;
            }
            nonzero += graph_.adjacency(t, s) != 0.0f;
        }
    QVERIFY2(worst <= 1e-4 * scale, qPrintable(QStringLiteral("edge %1 ← %2: %3 against %4").arg(wt).arg(ws)
                                                  .arg(graph_.adjacency(wt, ws)).arg(refAdjacency_(wt, ws))));
    QVERIFY(std::abs(nonzero - ref_["adjacency_stats"].toObject()["nonzero"].toInt()) <= n); // structural zeros agree (BOS errors may round)
}

void TestAttributionGraph::edgesPlusConstantSumToEachTarget() {
    // completeness: a target's value is the sum of its incoming edges plus the constant the reference computed
    // independently (the frozen model with every node vector zero)
    const QJsonArray nodes = ref_["nodes"].toArray();
    for (int t = 0; t < graph_.nNodes(); ++t) {
        const QJsonObject r = nodes[t].toObject();
        if (!r.contains(QStringLiteral("constant"))) continue;
        const double incoming = graph_.adjacency.row(t).cast<double>().sum();
        const double value = graph_.values[size_t(t)];
        QVERIFY2(std::abs(value - r["value"].toDouble()) <= 1e-4 * std::max(1.0, std::abs(value)), qPrintable(QString::number(t)));
        QVERIFY2(std::abs(value - incoming - r["constant"].toDouble()) <= 1e-4 * std::max(1.0, std::abs(value)),
                 qPrintable(QStringLiteral("node %1: %2 − %3 against %4").arg(t).arg(value).arg(incoming).arg(r["constant"].toDouble())));
    }
}

void TestAttributionGraph::pruningMatchesTheReference() {
    const PrunedGraph p = pruneGraph(graph_);
    const QJsonObject r = ref_["pruning"].toObject();
    const QJsonArray mask = r["node_mask"].toArray();
    for (int i = 0; i < graph_.nNodes(); ++i) QCOMPARE(int(p.nodeMask[size_t(i)]), mask[i].toInt());
    QCOMPARE(p.keptNodes(), r["n_kept_nodes"].toInt());
    const QJsonArray kept = r["kept_edges"].toArray();
    QCOMPARE(int(p.edges.size()), kept.size());
    for (int i = 0; i < kept.size(); ++i) {
        QCOMPARE(p.edges[size_t(i)].first, kept[i][0].toInt());
        QCOMPARE(p.edges[size_t(i)].second, kept[i][1].toInt());
    }
    QVERIFY(std::abs(p.nodeThresholdValue - r["node_threshold_value"].toDouble()) < 1e-4 * r["node_threshold_value"].toDouble());
    QVERIFY(std::abs(p.edgeThresholdValue - r["edge_threshold_value"].toDouble()) < 1e-4 * r["edge_threshold_value"].toDouble());
    const QJsonArray nodes = ref_["nodes"].toArray();
    for (int i = 0; i < graph_.nNodes(); ++i) {
        const double want = nodes[i]["influence"].toDouble();
        QVERIFY2(std::abs(p.influence[size_t(i)] - want) <= 1e-5 * std::max(1e-3, want), qPrintable(QString::number(i)));
        QVERIFY2(std::abs(p.cumulative[size_t(i)] - nodes[i]["cumulative_influence"].toDouble()) <= 1e-6, qPrintable(QString::number(i)));
    }
    // a looser node threshold keeps more
    QVERIFY(pruneGraph(graph_, {0.95, 0.98}).keptNodes() > p.keptNodes());
}

void TestAttributionGraph::scoresMatchTheReference() {
    const GraphScores s = graphScores(graph_);
    QVERIFY(std::abs(s.replacement - ref_["scores"].toObject()["replacement_score"].toDouble()) < 1e-5);
    QVERIFY(std::abs(s.completeness - ref_["scores"].toObject()["completeness_score"].toDouble()) < 1e-5);
}

void TestAttributionGraph::edgeRoutesSumToTheEdge() {
    // the strongest edges into features and into logits, across positions and at the same position, from features,
    // errors and tokens: residual + skip + Σ heads = A[t, s]
    std::vector<std::pair<double, std::pair<int, int>>> strongest;
    for (int t = 0; t < graph_.nNodes(); ++t)
        for (int s = 0; s < graph_.tokenOffset + graph_.nPositions(); ++s)
            if (graph_.adjacency(t, s) != 0.0f) strongest.push_back({std::abs(graph_.adjacency(t, s)), {t, s}});
    std::sort(strongest.begin(), strongest.end(), std::greater<>());
    int acrossPositions = 0, fromTokens = 0, intoLogits = 0, checked = 0;
    for (int t = graph_.logitOffset; t < graph_.nNodes(); ++t) { // and each logit's five strongest sources
        std::vector<std::pair<double, std::pair<int, int>>> into;
        for (int s = 0; s < graph_.logitOffset; ++s) into.push_back({std::abs(graph_.adjacency(t, s)), {t, s}});
        std::partial_sort(into.begin(), into.begin() + 5, into.end(), std::greater<>());
        strongest.insert(strongest.begin(), into.begin(), into.begin() + 5);
    }
    for (const auto& [w, e] : strongest) {
        const auto [t, s] = e;
        const EdgeRoutes r = edgeRoutes(rm_, graph_, t, s);
        QCOMPARE(r.edge, double(graph_.adjacency(t, s)));
        QVERIFY2(std::abs(r.sum() - r.edge) <= 1e-5 * std::max(1.0, std::abs(r.edge)),
                 qPrintable(QStringLiteral("%1 ← %2: %3 against %4").arg(t).arg(s).arg(r.sum()).arg(r.edge)));
        const bool across = graph_.nodes[size_t(t)].position != graph_.nodes[size_t(s)].position;
        if (across) QCOMPARE(r.residual, 0.0);
        acrossPositions += across;
        fromTokens += graph_.nodes[size_t(s)].kind == GraphNodeKind::Token;
        intoLogits += graph_.nodes[size_t(t)].kind == GraphNodeKind::Logit;
        if (++checked == 350) break;
    }
    QVERIFY(acrossPositions > 20);
    QVERIFY(fromTokens > 5);
    QVERIFY(intoLogits > 5);
    // nothing flows down: a layer-1 feature is no source of a layer-0 feature
    const EdgeRoutes none = edgeRoutes(rm_, graph_, 0, graph_.nFeatures() - 1);
    QCOMPARE(none.sum(), 0.0);
    QVERIFY(none.heads.empty());
}

void TestAttributionGraph::headRouteEqualsAForwardThroughThatHead() {
    // the strongest edge from a layer-0 feature into a layer-1 feature at a later position has one hop (layer 1's
    // attention): each head's part equals the source vector pushed forward through that head alone, by hand
    const auto [bestT, bestS] = strongestOneHopEdge(graph_);
    QVERIFY(bestT >= 0);
    const GraphNode &tn = graph_.nodes[size_t(bestT)], &sn = graph_.nodes[size_t(bestS)];
    const ModelConfig& cfg = model_->config();
    const EdgeRoutes r = edgeRoutes(rm_, graph_, bestT, bestS);
    QCOMPARE(int(r.heads.size()), cfg.n_heads);
    QVERIFY(std::abs(r.edge) > 0.05);
    double total = 0;
    for (int h = 0; h < cfg.n_heads; ++h) {
        const double want = headPartByHand(*model_, rm_.clean, set_, tn, sn, h);
        const auto it = std::find_if(r.heads.begin(), r.heads.end(), [&](const HeadRoute& hr) { return hr.head == h; });
        QVERIFY(it != r.heads.end());
        QVERIFY2(std::abs(it->value - want) <= 1e-5 * std::max(1.0, std::abs(want)), qPrintable(QStringLiteral("head %1: %2 against %3").arg(h).arg(it->value).arg(want)));
        QCOMPARE(it->query, tn.position); // a feature target reads one position
        total += want;
    }
    QVERIFY(std::abs(total - r.edge) <= 1e-4 * std::max(1.0, std::abs(r.edge))); // across positions: heads only
}

void TestAttributionGraph::refusesSetsItCannotUse() {
    // an SAE is not a transcoder set
    const DictionarySet sae = openDictionaries(attnscope::test::sourceFile(QStringLiteral("resources/demo-features/resid-topk")));
    QCOMPARE(inputErrorOf([&] { buildReplacementModel(*model_, sae, tokens_); }),
             QStringLiteral("%1: an attribution graph needs one transcoder per layer: the set has 1 but the model has 2 layers")
                 .arg(QDir::toNativeSeparators(sae.path)));
    // a set with a layer's transcoder reading another layer
    DictionarySet swapped = set_;
    std::swap(swapped.coders[0], swapped.coders[1]);
    QCOMPARE(inputErrorOf([&] { buildReplacementModel(*model_, swapped, tokens_); }),
             QStringLiteral("%1: transcoder 0 reads blocks.1.ln2.hook_normalized, but an attribution graph needs layer 0's MLP "
                            "input (blocks.0.ln2.hook_normalized or blocks.0.hook_resid_mid)")
                 .arg(QDir::toNativeSeparators(set_.path)));
}

void TestAttributionGraph::refusesAGraphOverTheMemoryBudget() {
    qputenv("ATTNSCOPE_MEMORY_BUDGET", "1000000");
    const QString message = inputErrorOf([&] { attributeGraph(rm_); });
    qunsetenv("ATTNSCOPE_MEMORY_BUDGET");
    QCOMPARE(message, QStringLiteral("The attribution graph of 7 positions (530 active features, 530 of them as nodes) needs 11.1 MB (rows "
                                     "1.2 MB, pruning 3.5 MB), but the memory budget is 976.6 kB (set by ATTNSCOPE_MEMORY_BUDGET). Use "
                                     "fewer feature nodes (--max-feature-nodes) or a shorter prompt."));
}

void TestAttributionGraph::interventionsMatchTheReference() {
    // circuit-tracer's feature_intervention defaults on the three most influential features: ablated, and doubled;
    // the last position's logits of the graph's logit tokens and the active features afterwards, against the float64
    // reference (patterns frozen, norms and real MLPs live)
    const QJsonObject iv = ref_["intervention"].toObject();
    const QJsonArray logitTokens = iv["graph_logit_tokens"].toArray();
    const QJsonArray results = iv["results"].toArray();
    QCOMPARE(results.size(), 2);
    for (const QJsonValue& rv : results) {
        const QJsonObject r = rv.toObject();
        std::vector<FeatureIntervention> edits;
        for (const QJsonValue& e : r["interventions"].toArray()) {
            const QJsonObject o = e.toObject();
            edits.push_back({o["layer"].toInt(), o["pos"].toInt(), o["feature"].toInt(), float(o["value"].toDouble())});
            // the reference's edits are the graph's nodes scaled: scaleFeatureNodes gives the same
            const int node = o["node_index"].toInt();
            const float factor = r["name"].toString() == QStringLiteral("ablate") ? 0.0f : 2.0f;
            const std::vector<FeatureIntervention> scaled = scaleFeatureNodes(graph_, std::span<const int>(&node, 1), factor);
            QCOMPARE(int(scaled.size()), 1);
            QCOMPARE(scaled[0].feature, o["feature"].toInt());
            QVERIFY(std::abs(scaled[0].value - o["value"].toDouble()) <= 1e-5 * std::max(1.0, o["value"].toDouble()));
        }
        const InterventionResult out = interveneOnFeatures(rm_, edits);
        const QJsonArray want = r["logits_last_for_graph_logit_tokens"].toArray();
        QCOMPARE(want.size(), logitTokens.size());
        for (int i = 0; i < want.size(); ++i) {
            const double got = out.logits(6, logitTokens[i].toInt());
            QVERIFY2(std::abs(got - want[i].toDouble()) <= 1e-4 * std::max(1.0, std::abs(want[i].toDouble())),
                     qPrintable(QStringLiteral("%1, token %2: %3 against %4").arg(r["name"].toString()).arg(logitTokens[i].toInt())
                                    .arg(got).arg(want[i].toDouble())));
        }
        QCOMPARE(out.activeFeatures, r["n_active_features_after"].toInt());
        // the edited features hold their values in the activations returned
        for (const FeatureIntervention& e : edits) QCOMPARE(out.activations[size_t(e.layer)](e.position, e.feature), e.value);
    }
}

void TestAttributionGraph::anEmptyInterventionIsTheCleanRun() {
    // frozen clean patterns are the patterns: no edit, the clean logits and the clean features
    const InterventionResult out = interveneOnFeatures(rm_, {});
    QVERIFY((out.logits - rm_.clean.logits).cwiseAbs().maxCoeff() <= 1e-5);
    QCOMPARE(out.activeFeatures, graph_.nFeatures());
    for (int l = 0; l < rm_.nLayers(); ++l) QVERIFY((out.activations[size_t(l)] - rm_.activations[size_t(l)]).cwiseAbs().maxCoeff() <= 1e-5);
}

void TestAttributionGraph::frozenAblationMovesEachLogitByItsEdge() {
    // direct effects: with patterns, norm divisors and every other feature frozen, ablating feature j moves each logit
    // node's value (the logit minus the mean logit) by exactly −A[logit, j], the graph's edge
    const PrunedGraph p = pruneGraph(graph_);
    int j = 0;
    for (int i = 1; i < graph_.nFeatures(); ++i)
        if (p.influence[size_t(i)] > p.influence[size_t(j)]) j = i;
    InterventionOptions frozen;
    frozen.mode = InterventionMode::Frozen;
    const Matrix before = interveneOnFeatures(rm_, {}, frozen).logits;
    const std::vector<FeatureIntervention> ablate = scaleFeatureNodes(graph_, std::span<const int>(&j, 1), 0.0f);
    const InterventionResult after = interveneOnFeatures(rm_, ablate, frozen);
    QCOMPARE(after.activeFeatures, graph_.nFeatures() - 1);
    const Eigen::Index last = before.rows() - 1;
    const double meanShift = (after.logits.row(last) - before.row(last)).cast<double>().mean();
    double largest = 0;
    for (int t = graph_.logitOffset; t < graph_.nNodes(); ++t) {
        const int token = graph_.nodes[size_t(t)].id;
        const double moved = double(after.logits(last, token) - before(last, token)) - meanShift;
        const double edge = graph_.adjacency(t, j);
        largest = std::max(largest, std::abs(edge));
        QVERIFY2(std::abs(moved + edge) <= 1e-4 * std::max(1.0, std::abs(edge)),
                 qPrintable(QStringLiteral("logit %1: moved %2, edge %3").arg(token).arg(moved).arg(edge)));
    }
    QVERIFY(largest > 1e-2); // the feature does reach the logits directly
}

void TestAttributionGraph::continuationCarriesTheIntervention() {
    InterventionOptions o;
    o.continuationTokens = 4;
    // no edit: the model's own greedy continuation
    QCOMPARE(interveneOnFeatures(rm_, {}, o).continuation, greedyContinuation(*model_, tokens_, 4));
    // with an edit: the first token written is the intervened prediction
    const QJsonArray edits = ref_["intervention"].toObject()["results"].toArray()[1].toObject()["interventions"].toArray();
    std::vector<FeatureIntervention> scale;
    for (const QJsonValue& e : edits)
        scale.push_back({e["layer"].toInt(), e["pos"].toInt(), e["feature"].toInt(), float(10 * e["value"].toDouble())});
    const InterventionResult out = interveneOnFeatures(rm_, scale, o);
    QCOMPARE(int(out.continuation.size()), 4);
    Eigen::Index best = 0;
    out.logits.row(out.logits.rows() - 1).maxCoeff(&best);
    QCOMPARE(out.continuation[0], int(best));
}

void TestAttributionGraph::refusesInterventionsOutsideTheModel() {
    const QString label = QDir::toNativeSeparators(set_.path);
    const std::vector<FeatureIntervention> layer{{2, 1, 0, 0.0f}}, position{{0, 7, 0, 0.0f}}, feature{{1, 1, 999999, 0.0f}},
        value{{0, 1, 0, std::numeric_limits<float>::quiet_NaN()}};
    QCOMPARE(inputErrorOf([&] { interveneOnFeatures(rm_, layer); }),
             QStringLiteral("%1: an intervention names layer 2, but the model has 2 layers").arg(label));
    QCOMPARE(inputErrorOf([&] { interveneOnFeatures(rm_, position); }),
             QStringLiteral("%1: an intervention names position 7, but the prompt has 7 tokens").arg(label));
    QCOMPARE(inputErrorOf([&] { interveneOnFeatures(rm_, feature); }),
             QStringLiteral("%1: an intervention names feature 999999 of layer 1, but its transcoder has d_sae %2")
                 .arg(label).arg(set_.coders[1].d_sae));
    QCOMPARE(inputErrorOf([&] { interveneOnFeatures(rm_, value); }),
             QStringLiteral("%1: an intervention sets feature 0 of layer 0 to nan").arg(label));
}

void TestAttributionGraph::edgesMatchKnockOut() {
    checkEdgesByKnockOut(rm_, graph_, 40);
}

void TestAttributionGraph::gemma2PostNormsAndSoftcap() {
    // a post-norm model (Gemma 2: RMSNorm, post-attention and post-MLP norms, grouped-query heads, a sliding window,
    // attention and final soft-caps) with random transcoders, one of them a skip transcoder: the replacement model
    // reproduces the clean logits, every checked edge equals its knock-out, routes sum to their edges, and an empty
    // intervention is the clean run
    const std::shared_ptr<const Model> gemma = loadModel(attnscope::test::sourceFile(QStringLiteral("tests/data/gradients/gemma2-softcap")));
    const ModelConfig& cfg = gemma->config();
    QVERIFY(cfg.postNorms);
    QVERIFY(cfg.final_logit_softcap > 0);
    const DictionarySet set = randomTranscoders(cfg, 48, 7, 1);
    const std::vector<int> tokens{cfg.bos_token_id, 17, 5, 42, 9, 33, 17};
    const ReplacementModel rm = buildReplacementModel(*gemma, set, tokens);
    const Matrix logits = replacementLogits(rm, rm.activations, rm.errors);
    const float cap = float(cfg.final_logit_softcap);
    const Matrix capped = (logits / cap).array().tanh() * cap;
    QVERIFY2((capped - rm.clean.logits).cwiseAbs().maxCoeff() <= 1e-4, qPrintable(QString::number((capped - rm.clean.logits).cwiseAbs().maxCoeff())));
    const AttributionGraph g = attributeGraph(rm);
    QVERIFY(g.nFeatures() > 40);
    checkEdgesByKnockOut(rm, g, 60);
    // the strongest cross-position edges into features: residual + skip + heads = the edge
    checkRoutesSumToEdges(rm, g, 1, 0.05, 12);
}

void TestAttributionGraph::gemma3PerLayerWindowsAndRope() {
    // a random Gemma 3 (six layers: five sliding with window 3 and RoPE base 1e4, a global one with base 1e6 scaled by 8;
    // (1 + w) q/k norms, whose divisors the frozen pattern makes moot; post-norms, no soft-caps) with random transcoders,
    // one a skip transcoder, on 10 tokens: the replacement model's logits are the clean ones, every checked edge equals
    // its knock-out, and the routes of edges from three positions back (outside the window) sum to their edges
    QTemporaryDir dir;
    writeHfLlamaFolder(randomLlama(smallGemma3Spec(), 41), dir.path(), Storage::F32, madeTokenizer512(), "tokenizer.bin");
    const std::shared_ptr<const Model> gemma = loadModel(dir.path());
    const ModelConfig& cfg = gemma->config();
    QVERIFY(cfg.postNorms && cfg.qkNorm && cfg.final_logit_softcap == 0);
    const DictionarySet set = randomTranscoders(cfg, 40, 11, 2);
    const std::vector<int> tokens{cfg.bos_token_id, 17, 5, 42, 9, 33, 17, 5, 200, 42};
    const ReplacementModel rm = buildReplacementModel(*gemma, set, tokens);
    const Matrix logits = replacementLogits(rm, rm.activations, rm.errors);
    QVERIFY2((logits - rm.clean.logits).cwiseAbs().maxCoeff() <= 1e-4, qPrintable(QString::number((logits - rm.clean.logits).cwiseAbs().maxCoeff())));
    const AttributionGraph g = attributeGraph(rm);
    QVERIFY(g.nFeatures() > 40);
    checkEdgesByKnockOut(rm, g, 60);
    checkRoutesSumToEdges(rm, g, 3, 1e-3, 16); // three positions back: outside the window of 3
}

void TestAttributionGraph::gemmaScope2OnGemma3_data() {
    QTest::addColumn<bool>("clt");
    QTest::newRow("transcoder_all/width_1k_l0_small_affine") << false;
    QTest::newRow("clt/width_6k_l0_medium_affine") << true;
}

void TestAttributionGraph::gemmaScope2OnGemma3() {
    // a random Gemma 3 (q/k norms, five sliding layers and a global one with their own RoPE) with random Gemma Scope 2
    // dictionaries written in the repositories' layout: per-layer transcoders with an affine skip, opened as a set from their
    // site folder, and a cross-layer transcoder with an affine skip (params_layer_{i}.safetensors); 48 features of each
    // layer's 1024 can fire. The replacement model reproduces the clean logits and every checked edge equals its knock-out.
    QFETCH(bool, clt);
    QTemporaryDir tmp;
    writeHfLlamaFolder(randomLlama(smallGemma3Spec(), 4800u), tmp.filePath(QStringLiteral("gemma3")), Storage::F32, madeTokenizer512(), "tokenizer.bin");
    const std::shared_ptr<const Model> gemma = loadModel(tmp.filePath(QStringLiteral("gemma3")));
    const ModelConfig& cfg = gemma->config();
    QVERIFY(cfg.qkNorm && cfg.postNorms);
    QString path;
    if (clt) {
        std::vector<MultiLayerParams> p = randomMultiLayer(cfg.n_layers, cfg.d_model, 1024, 17, true, true);
        for (MultiLayerParams& l : p) {
            l.own.W_enc *= 2.0;
            for (int f = 48; f < 1024; ++f) l.own.threshold(f) = 1e6;
        }
        path = tmp.filePath(QStringLiteral("gs2/clt/width_6k_l0_medium_affine"));
        writeGemmaScope2MultiLayer(path, p);
    } else {
        path = tmp.filePath(QStringLiteral("gs2/transcoder_all"));
        writeRandomGemmaScope2Transcoders(path, cfg.n_layers, cfg.d_model, 31, 48, true);
    }
    const DictionarySet set = openDictionaries(path);
    QCOMPARE(set.kind, clt ? QStringLiteral("cross_layer_transcoder") : QStringLiteral("transcoder_set"));
    const std::vector<int> tokens{cfg.bos_token_id, 17, 5, 42, 9, 33, 17};
    const ReplacementModel rm = buildReplacementModel(*gemma, set, tokens);
    const double e = (replacementLogits(rm, rm.activations, rm.errors) - rm.clean.logits).cwiseAbs().maxCoeff();
    QVERIFY2(e <= 1e-4, qPrintable(QString::number(e)));
    const AttributionGraph g = attributeGraph(rm);
    QVERIFY(g.nFeatures() > 40);
    checkEdgesByKnockOut(rm, g, 60);
}

void TestAttributionGraph::crossLayerTranscoderMatchesTheReference() {
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    QSKIP("the demo's cross-layer transcoder is a circuit-tracer config.yaml: this build has no yaml-cpp");
#endif
    // the bundled demo cross-layer transcoder (layer 0's features write into layers 0 and 1) against
    // tools/graph_reference.py --set clt: the replacement model, every node and edge, completeness, pruning, scores,
    // and an intervention whose edit reaches both layers
    const DictionarySet clt = openDictionaries(attnscope::test::sourceFile(QStringLiteral("resources/demo-features/clt")));
    QCOMPARE(clt.kind, QStringLiteral("cross_layer_transcoder"));
    const QJsonObject ref = readJsonObject(kGraphData + QStringLiteral("demo_clt_graph_reference.json"));
    const ReplacementModel rm = buildReplacementModel(*model_, clt, tokens_);
    QVERIFY(rm.crossLayer());
    QVERIFY((replacementLogits(rm, rm.activations, rm.errors) - rm.clean.logits).cwiseAbs().maxCoeff() <= 1e-4);
    const AttributionGraph g = attributeGraph(rm);
    const QJsonArray nodes = ref["nodes"].toArray();
    QCOMPARE(g.nNodes(), nodes.size());
    QCOMPARE(g.nFeatures(), ref["n_features"].toInt());
    QCOMPARE(g.logitOffset, ref["offsets"].toObject()["logit"].toInt());
    for (int i = 0; i < g.nNodes(); ++i) {
        const QJsonObject r = nodes[i].toObject();
        const GraphNode& n = g.nodes[size_t(i)];
        QCOMPARE(n.position, r["pos"].toInt());
        if (n.kind == GraphNodeKind::Feature) {
            QCOMPARE(n.layer, r["layer"].toInt());
            QCOMPARE(n.id, r["feature"].toInt());
            QVERIFY(std::abs(n.activation - r["activation"].toDouble()) <= 1e-4 * std::max(1.0, r["activation"].toDouble()));
        }
        if (n.kind == GraphNodeKind::Logit) QCOMPARE(n.id, r["token_id"].toInt());
        if (r.contains(QStringLiteral("constant"))) { // each target: its incoming edges plus its constant are its value
            const double value = g.values[size_t(i)], incoming = g.adjacency.row(i).cast<double>().sum();
            QVERIFY2(std::abs(value - incoming - r["constant"].toDouble()) <= 1e-4 * std::max(1.0, std::abs(value)), qPrintable(QString::number(i)));
        }
    }
    QFile f(kGraphData + QStringLiteral("demo_clt_graph_adjacency.npy"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray bytes = f.readAll();
    const NpyHeader h = parseNpyHeader(bytes, f.fileName(), QStringLiteral("adjacency"));
    QCOMPARE(h.shape[0], std::int64_t(g.nNodes()));
    const float* a = reinterpret_cast<const float*>(bytes.constData() + h.dataOffset);
    const double scale = ref["adjacency_stats"].toObject()["max_abs"].toDouble();
    double worst = 0;
    for (int t = 0; t < g.nNodes(); ++t)
        for (int s = 0; s < g.nNodes(); ++s) worst = std::max(worst, std::abs(double(g.adjacency(t, s)) - a[size_t(t) * size_t(g.nNodes()) + size_t(s)]));
    QVERIFY2(worst <= 1e-4 * scale, qPrintable(QString::number(worst)));
    const PrunedGraph p = pruneGraph(g);
    const QJsonObject pr = ref["pruning"].toObject();
    QCOMPARE(p.keptNodes(), pr["n_kept_nodes"].toInt());
    QCOMPARE(int(p.edges.size()), pr["n_kept_edges"].toInt());
    const QJsonArray mask = pr["node_mask"].toArray();
    for (int i = 0; i < g.nNodes(); ++i) QCOMPARE(int(p.nodeMask[size_t(i)]), mask[i].toInt());
    const GraphScores sc = graphScores(g);
    QVERIFY(std::abs(sc.replacement - ref["scores"].toObject()["replacement_score"].toDouble()) < 1e-5);
    QVERIFY(std::abs(sc.completeness - ref["scores"].toObject()["completeness_score"].toDouble()) < 1e-5);
    // a layer-0 feature's edges into layer-1 features sum both of its writes: the knock-out agrees
    checkEdgesByKnockOut(rm, g, 40);
    // routes of cross-position edges sum to the edge with the writes below each head
    int routes = 0;
    for (const auto& [t, s] : p.edges)
        if (g.nodes[size_t(s)].kind == GraphNodeKind::Feature && g.nodes[size_t(s)].position != g.nodes[size_t(t)].position && routes < 20) {
            const EdgeRoutes r = edgeRoutes(rm, g, t, s);
            QVERIFY2(std::abs(r.sum() - r.edge) <= 1e-4 * std::max(1.0, std::abs(r.edge)), qPrintable(QStringLiteral("%1 ← %2").arg(t).arg(s)));
            ++routes;
        }
    QVERIFY(routes > 0);
    // the reference's interventions (a layer-0 edit steers layer 1's MLP output too)
    const QJsonObject iv = ref["intervention"].toObject();
    const QJsonArray logitTokens = iv["graph_logit_tokens"].toArray();
    for (const QJsonValue& rv : iv["results"].toArray()) {
        std::vector<FeatureIntervention> edits;
        for (const QJsonValue& e : rv.toObject()["interventions"].toArray())
            edits.push_back({e["layer"].toInt(), e["pos"].toInt(), e["feature"].toInt(), float(e["value"].toDouble())});
        const InterventionResult out = interveneOnFeatures(rm, edits);
        const QJsonArray want = rv.toObject()["logits_last_for_graph_logit_tokens"].toArray();
        for (int i = 0; i < want.size(); ++i)
            QVERIFY2(std::abs(out.logits(6, logitTokens[i].toInt()) - want[i].toDouble()) <= 1e-4 * std::max(1.0, std::abs(want[i].toDouble())),
                     qPrintable(rv.toObject()["name"].toString()));
        QCOMPARE(out.activeFeatures, rv.toObject()["n_active_features_after"].toInt());
    }
}

QTEST_GUILESS_MAIN(TestAttributionGraph)
#include "tst_attribution_graph.moc"
