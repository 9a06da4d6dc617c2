// Attribution graphs with a bound on the feature nodes (circuit-tracer's max_feature_nodes) and the graph's memory
// estimate, on the demo model:
// - a bound at or above the active features gives the full graph bit for bit (demo, its cross-layer transcoder, the
//   Gemma 2 test model);
// - pruning and the scores, which no longer copy the adjacency, equal the dense computation they replaced bit for bit;
// - a lower bound visits the features circuit-tracer's attribute visits: checked against a dense float64 replay of its
//   phases 3–5 (every row taken from the full graph) and against tools/graph_reference.py's (--max-feature-nodes);
//   its adjacency is the full graph's on the visited square;
// - progress names its phases, cancel stops within a batch, a build over the budget is refused with both sizes, and the
//   estimate bounds the measured peak RSS at two sizes.

#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/graph_pruning.h"
#include "model/analysis/graphs/replacement_model.h"
#include "model/core/process_memory.h"
#include "model/features/dictionary_set.h"
#include "model/formats/model_loader.h"
#include "model/transformer/cache_budget.h"
#include "support/error_capture.h"
#include "support/random_transcoders.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QFile>
#include <QJsonArray>
#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

const QString kGraphData = attnscope::test::sourceFile(QStringLiteral("tests/data/graphs/"));

bool sameFloats(const Matrix& a, const Matrix& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() && std::memcmp(a.data(), b.data(), size_t(a.size()) * sizeof(float)) == 0;
}

bool sameNode(const GraphNode& a, const GraphNode& b) {
    return a.kind == b.kind && a.layer == b.layer && a.position == b.position && a.id == b.id && std::memcmp(&a.activation, &b.activation, sizeof(float)) == 0;
}

/// The dense pruning the library used before it stopped copying the adjacency (graph.py's prune_graph and
/// compute_graph_scores with N materialised): influence, masks, edges and scores.
struct DensePruning {
    std::vector<double> influence;
    std::vector<char> mask;
    std::vector<std::pair<int, int>> edges;
    double replacement = 0, completeness = 0;
};

DensePruning densePruning(const AttributionGraph& g, const PruneOptions& o) {
    const int n = g.nNodes();
    const std::vector<double> w = logitWeights(g);
    DensePruning d;
    d.influence = influenceOf(normalizedAdjacency(g.adjacency), w);
    const double threshold = findThreshold(d.influence, o.nodeThreshold);
    d.mask.assign(size_t(n), 0);
    for (int i = 0; i < n; ++i) d.mask[size_t(i)] = char(i >= g.tokenOffset || d.influence[size_t(i)] >= threshold);
    Matrix pruned = g.adjacency;
    for (int i = 0; i < n; ++i)
        if (!d.mask[size_t(i)]) {
            pruned.row(i).setZero();
            pruned.col(i).setZero();
        }
    const Matrix Np = normalizedAdjacency(pruned);
    std::vector<double> out = influenceOf(Np, w), scores;
    for (int i = 0; i < n; ++i) out[size_t(i)] += w[size_t(i)];
    for (int t = 0; t < n; ++t)
        for (int s = 0; s < n; ++s)
            if (Np(t, s) != 0.0f) scores.push_back(double(Np(t, s)) * out[size_t(t)]);
    const double edgeThreshold = findThreshold(scores, o.edgeThreshold);
    for (int t = 0; t < n; ++t)
        for (int s = 0; s < n; ++s)
            if (Np(t, s) != 0.0f && double(Np(t, s)) * out[size_t(t)] >= edgeThreshold) d.edges.push_back({t, s});
    const Matrix N = normalizedAdjacency(g.adjacency);
    double tokens = 0, errors = 0, num = 0, den = 0;
    for (int i = g.errorOffset; i < g.tokenOffset; ++i) errors += d.influence[size_t(i)];
    for (int i = g.tokenOffset; i < g.logitOffset; ++i) tokens += d.influence[size_t(i)];
    for (int i = 0; i < n; ++i) {
        double share = 0;
        for (int s = g.errorOffset; s < g.tokenOffset; ++s) share += double(N(i, s));
        num += (1 - share) * (d.influence[size_t(i)] + w[size_t(i)]);
        den += d.influence[size_t(i)] + w[size_t(i)];
    }
    d.replacement = tokens / (tokens + errors);
    d.completeness = num / den;
    return d;
}

/// circuit-tracer's phases 3–5 replayed densely in float64 on the full graph's rows (a row does not depend on which
/// other rows were computed): logit rows first; then, until `bound` features are visited, the partial influences of
/// the rows so far (graph.py compute_partial_influences: |rows| normalised by max(row sum, 1e-8), prod from the logit
/// probabilities, prod ← prod[row_to_node_index] @ N until 0), ranked (ties: lower node first), and the next
/// update_interval × batch_size unvisited features visited. Returns the visited features' node indices, ascending.
std::vector<int> circuitTracerVisits(const AttributionGraph& full, int bound, int batch, int interval) {
    const int n = full.nNodes(), nFeat = full.nFeatures();
    std::vector<int> rowNode;
    for (int i = full.logitOffset; i < n; ++i) rowNode.push_back(i);
    std::vector<char> visited(size_t(nFeat), 0);
    int nVisited = 0;
    while (nVisited < bound) {
        Eigen::MatrixXd N(Eigen::Index(rowNode.size()), n);
        for (size_t r = 0; r < rowNode.size(); ++r) N.row(Eigen::Index(r)) = full.adjacency.row(rowNode[r]).cast<double>().cwiseAbs();
        for (Eigen::Index r = 0; r < N.rows(); ++r) N.row(r) /= std::max(N.row(r).sum(), 1e-8);
        Eigen::RowVectorXd prod = Eigen::RowVectorXd::Zero(n), influence = Eigen::RowVectorXd::Zero(n);
        for (int i = full.logitOffset; i < n; ++i) prod(i) = full.nodes[size_t(i)].activation;
        for (int it = 0; it < 128; ++it) {
            Eigen::RowVectorXd atRows(N.rows());
            for (Eigen::Index r = 0; r < N.rows(); ++r) atRows(r) = prod(rowNode[size_t(r)]);
            prod = atRows * N;
            if ((prod.array() == 0).all()) break;
            influence += prod;
        }
        std::vector<int> rank(static_cast<size_t>(nFeat));
        std::iota(rank.begin(), rank.end(), 0);
        std::stable_sort(rank.begin(), rank.end(), [&](int a, int b) { return influence(a) > influence(b); });
        const int want = std::min(interval * batch, bound - nVisited);
        int taken = 0;
        for (int f : rank)
            if (taken < want && !visited[size_t(f)]) {
                visited[size_t(f)] = 1;
                rowNode.push_back(f);
                ++taken;
            }
        nVisited += taken;
    }
    std::vector<int> out;
    for (int i = 0; i < nFeat; ++i)
        if (visited[size_t(i)]) out.push_back(i);
    return out;
}

AttributionOptions bounded(int maxFeatureNodes, int featureBatch, int updateInterval) {
    AttributionOptions o;
    o.maxFeatureNodes = maxFeatureNodes;
    o.featureBatch = featureBatch;
    o.updateInterval = updateInterval;
    return o;
}

} // namespace

class TestFeatureNodeBound : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void aBoundAtTheActiveFeaturesGivesTheFullGraph();
    void pruningEqualsTheDenseComputation();
    void aLowerBoundKeepsTheFullGraphOnTheVisitedSquare();
    void visitsTheFeaturesCircuitTracerVisits();
    void visitsMatchTheReference();
    void progressNamesItsPhasesAndCancelStopsWithinABatch();
    void refusesAGraphOverTheBudgetWithBothSizes();
    void theEstimateBoundsThePeakRss();
    void aMappedSetHandsItsPagesBack();

private:
    std::shared_ptr<const Model> model_;
    DictionarySet set_;
    std::vector<int> tokens_;
    ReplacementModel rm_;
    AttributionGraph full_;
};

void TestFeatureNodeBound::initTestCase() {
    model_ = loadModel(demoDir());
    // random ReLU transcoders: a quarter of 256 features fire per position, so the bound has something to choose
    set_ = randomTranscoders(model_->config(), 256, 11);
    tokens_ = {model_->config().bos_token_id};
    for (int t : model_->tokenizer().encode(QStringLiteral("In the beginning God created the heaven and the earth.")))
        tokens_.push_back(t);
    rm_ = buildReplacementModel(*model_, set_, tokens_);
    AttributionOptions all;
    all.maxFeatureNodes = 0;
    full_ = attributeGraph(rm_, all);
    QVERIFY2(full_.nFeatures() > 600, qPrintable(QString::number(full_.nFeatures())));
    QCOMPARE(full_.nActiveFeatures, full_.nFeatures());
}

void TestFeatureNodeBound::aBoundAtTheActiveFeaturesGivesTheFullGraph() {
    auto check = [](const ReplacementModel& rm, const QString& what) {
        AttributionOptions all;
        all.maxFeatureNodes = 0;
        const AttributionGraph full = attributeGraph(rm, all);
        for (int bound : {full.nFeatures(), full.nFeatures() + 1, AttributionOptions{}.maxFeatureNodes}) {
            AttributionOptions o;
            o.maxFeatureNodes = bound;
            const AttributionGraph g = attributeGraph(rm, o);
            QVERIFY2(g.nNodes() == full.nNodes() && g.errorOffset == full.errorOffset && g.logitOffset == full.logitOffset, qPrintable(what));
            for (int i = 0; i < g.nNodes(); ++i) QVERIFY2(sameNode(g.nodes[size_t(i)], full.nodes[size_t(i)]), qPrintable(what));
            QVERIFY2(sameFloats(g.adjacency, full.adjacency), qPrintable(what));
            QVERIFY2(g.values == full.values, qPrintable(what));
        }
    };
    check(rm_, QStringLiteral("demo, random transcoders"));
#ifdef ATTNSCOPE_HAVE_YAML_CPP
    const DictionarySet clt = openDictionaries(attnscope::test::sourceFile(QStringLiteral("resources/demo-features/clt")));
    check(buildReplacementModel(*model_, clt, tokens_), QStringLiteral("demo, cross-layer transcoder"));
#endif
    const std::shared_ptr<const Model> gemma = loadModel(attnscope::test::sourceFile(QStringLiteral("tests/data/gradients/gemma2-softcap")));
    const DictionarySet gset = randomTranscoders(gemma->config(), 48, 7, 1);
    const int bos = gemma->config().bos_token_id;
    check(buildReplacementModel(*gemma, gset, std::vector<int>{bos, 17, 5, 42, 9, 33, 17}), QStringLiteral("Gemma 2"));
}

void TestFeatureNodeBound::pruningEqualsTheDenseComputation() {
    const AttributionGraph few = attributeGraph(rm_, bounded(200, 32, 2));
    for (const AttributionGraph* g : {static_cast<const AttributionGraph*>(&full_), &few}) {
        for (const PruneOptions& po : {PruneOptions{}, PruneOptions{0.6, 0.9}}) {
            const DensePruning d = densePruning(*g, po);
            const PrunedGraph p = pruneGraph(*g, po);
            QVERIFY(p.influence == d.influence); // bit for bit
            QVERIFY(p.nodeMask.size() == d.mask.size());
            // the final mask also drops nodes without kept edges; before that step it is the dense one
            for (size_t i = 0; i < d.mask.size(); ++i) QVERIFY(!p.nodeMask[i] || d.mask[i]);
            std::vector<std::pair<int, int>> dense = d.edges;
            std::erase_if(dense, [&](const auto& e) { return !p.nodeMask[size_t(e.first)] || !p.nodeMask[size_t(e.second)]; });
            QVERIFY(p.edges == dense);
            QVERIFY(!p.edges.empty());
            const GraphScores s = graphScores(*g);
            QCOMPARE(s.replacement, d.replacement);
            QCOMPARE(s.completeness, d.completeness);
        }
    }
}

void TestFeatureNodeBound::aLowerBoundKeepsTheFullGraphOnTheVisitedSquare() {
    const AttributionGraph g = attributeGraph(rm_, bounded(150, 16, 2));
    QCOMPARE(g.nFeatures(), 150);
    QCOMPARE(g.nActiveFeatures, full_.nFeatures());
    QCOMPARE(g.nNodes(), full_.nNodes() - (full_.nFeatures() - 150));
    // each node of the bounded graph is a node of the full graph; the edges between them are the full graph's
    std::vector<int> at(size_t(g.nNodes()), -1);
    for (int i = 0; i < g.nNodes(); ++i) {
        const GraphNode& a = g.nodes[size_t(i)];
        for (int j = 0; j < full_.nNodes() && at[size_t(i)] < 0; ++j)
            if (sameNode(a, full_.nodes[size_t(j)])) at[size_t(i)] = j;
        QVERIFY2(at[size_t(i)] >= 0, qPrintable(QString::number(i)));
        if (i > 0 && i < g.nFeatures()) QVERIFY(at[size_t(i)] > at[size_t(i) - 1]); // features stay in node order
        QCOMPARE(g.values[size_t(i)], full_.values[size_t(at[size_t(i)])]);
    }
    const double scale = full_.adjacency.cwiseAbs().maxCoeff();
    double worst = 0;
    int nonzero = 0;
    for (int t = 0; t < g.nNodes(); ++t)
        for (int s = 0; s < g.nNodes(); ++s) {
            worst = std::max(worst, double(std::abs(g.adjacency(t, s) - full_.adjacency(at[size_t(t)], at[size_t(s)]))));
            nonzero += g.adjacency(t, s) != 0.0f;
        }
    QVERIFY2(worst <= 1e-6 * scale, qPrintable(QStringLiteral("%1 of %2").arg(worst).arg(scale)));
    QVERIFY(nonzero > 1000);
}

void TestFeatureNodeBound::visitsTheFeaturesCircuitTracerVisits() {
    struct Case { int bound, batch, interval; };
    for (const Case c : {Case{40, 8, 1}, Case{150, 16, 2}, Case{333, 64, 4}}) {
        const AttributionGraph g = attributeGraph(rm_, bounded(c.bound, c.batch, c.interval));
        const std::vector<int> want = circuitTracerVisits(full_, c.bound, c.batch, c.interval);
        QCOMPARE(int(want.size()), c.bound);
        for (int i = 0; i < c.bound; ++i) QVERIFY2(sameNode(g.nodes[size_t(i)], full_.nodes[size_t(want[size_t(i)])]),
                                                   qPrintable(QStringLiteral("bound %1: feature node %2").arg(c.bound).arg(i)));
    }
    // the ordering matters: the most influential features are not the first ones in node order
    const std::vector<int> visited = circuitTracerVisits(full_, 150, 16, 2);
    std::vector<int> first(150);
    std::iota(first.begin(), first.end(), 0);
    QVERIFY(visited != first);
}

void TestFeatureNodeBound::visitsMatchTheReference() {
    // tools/graph_reference.py --max-feature-nodes: circuit-tracer's ordering in float64 torch on the bundled transcoders
    QFile f(kGraphData + QStringLiteral("demo_graph_bounded_reference.json"));
    if (!f.exists()) QSKIP("tests/data/graphs/demo_graph_bounded_reference.json is not written yet (tools/graph_reference.py)");
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    QSKIP("the demo's transcoder set is a circuit-tracer config.yaml: this build has no yaml-cpp");
#endif
    const QJsonObject ref = readJsonObject(f.fileName());
    const DictionarySet set = openDictionaries(attnscope::test::sourceFile(QStringLiteral("resources/demo-features/transcoders")));
    std::vector<int> tokens;
    for (const QJsonValue& v : ref["token_ids"].toArray()) tokens.push_back(v.toInt());
    const ReplacementModel rm = buildReplacementModel(*model_, set, tokens);
    for (const QJsonValue& cv : ref["cases"].toArray()) {
        const QJsonObject c = cv.toObject();
        const AttributionOptions o = bounded(c["max_feature_nodes"].toInt(), c["batch_size"].toInt(), c["update_interval"].toInt());
        const AttributionGraph g = attributeGraph(rm, o);
        const QJsonArray visited = c["selected_features"].toArray(); // [layer, pos, feature], ascending
        QCOMPARE(g.nFeatures(), visited.size());
        QCOMPARE(g.nActiveFeatures, ref["n_active_features"].toInt());
        for (int i = 0; i < g.nFeatures(); ++i) {
            const GraphNode& n = g.nodes[size_t(i)];
            const QJsonArray want = visited[i].toArray();
            QVERIFY2(n.layer == want[0].toInt() && n.position == want[1].toInt() && n.id == want[2].toInt(),
                     qPrintable(QStringLiteral("case %1: node %2").arg(o.maxFeatureNodes).arg(i)));
        }
        const PrunedGraph p = pruneGraph(g);
        QCOMPARE(p.keptNodes(), c["n_kept_nodes"].toInt());
        QCOMPARE(int(p.edges.size()), c["n_kept_edges"].toInt());
        const GraphScores s = graphScores(g);
        QVERIFY(std::abs(s.replacement - c["replacement_score"].toDouble()) < 1e-5);
        QVERIFY(std::abs(s.completeness - c["completeness_score"].toDouble()) < 1e-5);
    }
}

void TestFeatureNodeBound::progressNamesItsPhasesAndCancelStopsWithinABatch() {
    AttributionOptions o = bounded(150, 16, 2);
    o.batchRows = 16 * int(tokens_.size()); // 16 targets a batch
    QStringList phases;
    qint64 last = -1, total = 0;
    Progress progress;
    progress.report = [&](qint64 done, qint64 all, const QString& what) {
        QVERIFY(done >= last && done <= all);
        last = done;
        total = all;
        if (phases.isEmpty() || phases.back() != what) phases << what;
    };
    (void)attributeGraph(rm_, o, progress);
    QCOMPARE(total, qint64(150 + full_.nNodes() - full_.logitOffset));
    QCOMPARE(last, total);
    QCOMPARE(phases.front(), QStringLiteral("feature sources"));
    QVERIFY(phases.contains(QStringLiteral("logit rows")));
    QVERIFY(phases.contains(QStringLiteral("feature rows, queue 1/5")));
    QVERIFY(phases.contains(QStringLiteral("feature rows, queue 5/5")));
    QCOMPARE(phases.back(), QStringLiteral("packing the visited features"));

    // cancelled at the second feature batch's report: Cancelled at the next step, with no more rows computed
    int reports = 0, featureReports = 0, reportsAtCancel = -1;
    Progress cancel;
    cancel.report = [&](qint64, qint64, const QString& what) {
        ++reports;
        if (what.startsWith(QLatin1String("feature rows")) && ++featureReports == 2) reportsAtCancel = reports;
    };
    cancel.isCancelled = [&] { return reportsAtCancel >= 0; };
    bool threw = false;
    try {
        (void)attributeGraph(rm_, o, cancel);
    } catch (const Cancelled&) {
        threw = true;
    }
    QVERIFY(threw);
    QCOMPARE(reports, reportsAtCancel); // no report after the cancel
}

void TestFeatureNodeBound::refusesAGraphOverTheBudgetWithBothSizes() {
    AttributionOptions o;
    o.maxFeatureNodes = 150;
    const int nLogits = full_.nNodes() - full_.logitOffset;
    const GraphMemory mem = estimateGraphMemory(model_->config(), rm_.nPositions(), full_.nFeatures(), full_.nFeatures(), nLogits, o);
    QVERIFY(mem.square > 0 && mem.rows == qint64(256) * full_.nNodes() * 4); // one block of 256 rows holds the 150 + logits
    qputenv("ATTNSCOPE_MEMORY_BUDGET", QByteArray::number(mem.peak() - 1));
    const QString message = inputErrorOf([&] { attributeGraph(rm_, o); });
    qputenv("ATTNSCOPE_MEMORY_BUDGET", QByteArray::number(mem.peak()));
    const AttributionGraph fits = attributeGraph(rm_, o); // exactly at the budget: built
    qunsetenv("ATTNSCOPE_MEMORY_BUDGET");
    QCOMPARE(fits.nFeatures(), 150);
    QCOMPARE(message, QStringLiteral("The attribution graph of %1 positions (%2 active features, 150 of them as nodes) needs %3 (rows %4, "
                                     "pruning %5), but the memory budget is %6 (set by ATTNSCOPE_MEMORY_BUDGET). Use fewer feature "
                                     "nodes (--max-feature-nodes) or a shorter prompt.")
                          .arg(rm_.nPositions()).arg(full_.nFeatures())
                          .arg(formatBytes(mem.peak()), formatBytes(mem.rows + mem.square), formatBytes(mem.pruning), formatBytes(mem.peak() - 1)));
    // the whole graph needs more than the bounded one
    o.maxFeatureNodes = 0;
    QVERIFY(estimateGraphMemory(model_->config(), rm_.nPositions(), full_.nFeatures(), full_.nFeatures(), nLogits, o).peak() > mem.peak());
}

void TestFeatureNodeBound::theEstimateBoundsThePeakRss() {
#if defined(ATTNSCOPE_SANITIZE)
    QSKIP("AddressSanitizer's shadow memory and quarantine are in the RSS: the estimate is for a normal build");
#endif
    if (peakRssMiB() <= 0) QSKIP("no /proc/self/status here: the peak RSS cannot be read");
    // TopK transcoders (exactly 128 of 4 096 features per position and layer) at two prompt lengths, bounded at 4 000
    // feature nodes: the build's peak RSS above what was resident before it (model, transcoders) is within the
    // replacement model's and the graph's estimates, and not far below them
    const ModelConfig& cfg = model_->config();
    const DictionarySet set = randomTranscoders(cfg, 4096, 5, -1, 128);
    std::mt19937 gen(3);
    std::uniform_int_distribution<int> tok(0, cfg.d_vocab - 2);
    for (int T : {32, 64}) {
        std::vector<int> tokens{cfg.bos_token_id};
        while (int(tokens.size()) < T) tokens.push_back(tok(gen));
        AttributionOptions o;
        o.maxFeatureNodes = 4000;
        resetPeakRss();
        const double before = currentRssMiB();
        double estimate = 0;
        {
            const ReplacementModel rm = buildReplacementModel(*model_, set, tokens);
            const AttributionGraph g = attributeGraph(rm, o);
            const PrunedGraph p = pruneGraph(g);
            const GraphScores s = graphScores(g);
            QCOMPARE(g.nActiveFeatures, cfg.n_layers * (T - 1) * 128);
            QCOMPARE(g.nFeatures(), 4000);
            QVERIFY(p.keptNodes() > 0 && s.completeness > 0);
            estimate = double(replacementModelBytes(cfg, T, 2 * 4096, largestEncoderBytes(set)) +
                              estimateGraphMemory(cfg, T, g.nActiveFeatures, g.nActiveFeatures, g.nNodes() - g.logitOffset, o).peak()) /
                       1048576.0;
        }
        const double grown = peakRssMiB() - before;
        qInfo("S = %d: peak RSS grew by %.1f MiB, estimate %.1f MiB (%.2f)", T, grown, estimate, grown / estimate);
        QVERIFY2(grown <= 1.1 * estimate, qPrintable(QStringLiteral("S = %1: %2 MiB against %3 MiB").arg(T).arg(grown).arg(estimate)));
        QVERIFY2(grown >= 0.6 * estimate, qPrintable(QStringLiteral("S = %1: %2 MiB against %3 MiB").arg(T).arg(grown).arg(estimate)));
    }
}

namespace {
/// The resident KiB of this process's mapping that holds `p` (/proc/self/smaps "Rss:"), −1 when none is found.
long mappingRssKiB(const void* p) {
    QFile f(QStringLiteral("/proc/self/smaps"));
    if (!f.open(QIODevice::ReadOnly)) return -1;
    const quintptr at = reinterpret_cast<quintptr>(p);
    bool inside = false;
    for (const QByteArray& line : f.readAll().split('\n')) {
        const int dash = line.indexOf('-'), space = line.indexOf(' ');
        if (dash > 0 && space > dash && !line.startsWith("Rss")) { // a mapping's first line: "start-end perms …"
            bool ok1 = false, ok2 = false;
            const quintptr b = line.left(dash).toULongLong(&ok1, 16), e = line.mid(dash + 1, space - dash - 1).toULongLong(&ok2, 16);
            if (ok1 && ok2) inside = b <= at && at < e;
        } else if (inside && line.startsWith("Rss:")) {
            return line.mid(4).trimmed().split(' ').first().toLong();
        }
    }
    return -1;
}
} // namespace

void TestFeatureNodeBound::aMappedSetHandsItsPagesBack() {
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    QSKIP("the demo's transcoder set is a circuit-tracer config.yaml: this build has no yaml-cpp (the arm64 sysroot)");
#endif
    // the demo's set opened from its files, memory-mapped: once its W_enc has been read whole (as an encode does), the
    // mapping holds its pages; after the replacement model (encodeStreamed) and the graph (releaseDecoderPages) it holds
    // neither W_enc's pages nor those around the decoder rows it read
    const DictionarySet set = openDictionaries(sourceFile(QStringLiteral("resources/demo-features/transcoders")));
    const SparseCoder& c = set.coders[0];
    const long encKiB = long(c.W_enc.storedSpanBytes() / 1024);
    QVERIFY2(encKiB >= 128, qPrintable(QString::number(encKiB)));
    RowVector row(c.W_enc.cols);
    for (int r = 0; r < c.W_enc.rows; ++r) c.W_enc.copyRow(r, row.data()); // every page of W_enc read
    const long before = mappingRssKiB(c.W_enc.ptr);
    if (before < 0) QSKIP("no /proc/self/smaps here");
    QVERIFY2(before >= encKiB, qPrintable(QStringLiteral("%1 KiB resident of a %2 KiB W_enc").arg(before).arg(encKiB)));
    const ReplacementModel rm = buildReplacementModel(*model_, set, tokens_);
    const long afterBuild = mappingRssKiB(c.W_enc.ptr);
    QVERIFY2(afterBuild < encKiB / 4, qPrintable(QStringLiteral("%1 KiB resident after the build (W_enc %2 KiB)").arg(afterBuild).arg(encKiB)));
    const AttributionGraph g = attributeGraph(rm);
    const long afterGraph = mappingRssKiB(c.W_enc.ptr);
    QVERIFY2(afterGraph < encKiB / 4, qPrintable(QStringLiteral("%1 KiB resident after the graph (W_enc %2 KiB)").arg(afterGraph).arg(encKiB)));
    QVERIFY(g.nFeatures() > 0);
    // pages handed back are read again from the page cache with the file's bytes (not zeroed)
    RowVector back(c.W_enc.cols);
    c.W_enc.copyRow(c.W_enc.rows - 1, back.data());
    QCOMPARE(double((back - row).cwiseAbs().maxCoeff()), 0.0);
    QVERIFY(back.cwiseAbs().maxCoeff() > 0);
}

QTEST_GUILESS_MAIN(TestFeatureNodeBound)
#include "tst_feature_node_bound.moc"
