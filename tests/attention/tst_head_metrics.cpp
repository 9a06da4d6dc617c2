// HeadVis's six head metrics (head_metrics.h) against their definitions: hand-made patterns whose metrics are known in
// closed form (a pure previous-token pattern, the identity, a uniform causal pattern), a float64 reference of every
// formula on random patterns, pooling over sequences (sums over counts, not a mean of means), the induction
// threshold, the demo model's known heads (L0H0 previous-token, L1H1–L1H3 induction on a repeated random sequence),
// and the corpus pass. Then HeadVis's sampling pieces (headvis_sampling.h) and the written tree (headvis_export.h):
// every file parsed, its fields and types, its numbers against the library and the model's own patterns.

#include "model/analysis/attention/head_detectors.h"
#include "model/analysis/attention/head_metrics.h"
#include "model/analysis/attention/headvis_export.h"
#include "model/analysis/attention/headvis_sampling.h"
#include "model/analysis/features/corpus_windows.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <numeric>
#include <random>

using namespace attnscope;
using namespace attnscope::test;

namespace {

/// A[0][0] = 1, A[q][q−1] = 1 for q ≥ 1.
Matrix previousTokenPattern(int S) {
    Matrix a = Matrix::Zero(S, S);
    a(0, 0) = 1;
    for (int q = 1; q < S; ++q) a(q, q - 1) = 1;
    return a;
}

/// A[q][k] = 1/(q+1) for k ≤ q.
Matrix uniformPattern(int S) {
    Matrix a = Matrix::Zero(S, S);
    for (int q = 0; q < S; ++q)
        for (int k = 0; k <= q; ++k) a(q, k) = 1.0f / float(q + 1);
    return a;
}

/// A causal softmax of random scores.
Matrix randomPattern(int S, std::mt19937& rng) {
    std::normal_distribution<double> n(0.0, 2.0);
    Matrix a = Matrix::Zero(S, S);
    for (int q = 0; q < S; ++q) {
        std::vector<double> e(size_t(q + 1));
        double z = 0;
        for (double& x : e) z += (x = std::exp(n(rng)));
        for (int k = 0; k <= q; ++k) a(q, k) = float(e[size_t(k)] / z);
    }
    return a;
}

/// The six metrics of one head, in float64 straight from the definitions (compute-head-metrics.py), over sequences.
std::array<double, 6> reference(const std::vector<std::vector<int>>& tokens, const std::vector<Matrix>& patterns, double threshold) {
    double self = 0, prev = 0, ent = 0, d1 = 0, d2 = 0, ind = 0, n = 0, nPrev = 0, nInd = 0;
    for (size_t s = 0; s < tokens.size(); ++s) {
        const Matrix& a = patterns[s];
        const int S = int(tokens[s].size());
        if (S < 2) continue;
        n += S;
        nPrev += S - 1;
        for (int q = 0; q < S; ++q) {
            self += a(q, q);
            if (q >= 1) prev += a(q, q - 1);
            for (int k = 0; k < S; ++k) {
                const double x = a(q, k);
                if (x > 0) ent -= x * std::log(x);
                d1 += x * std::abs(q - k);
                d2 += x * double(q - k) * double(q - k);
            }
            bool any = false;
            for (int p = 0; p < q; ++p)
                if (tokens[s][size_t(p)] == tokens[s][size_t(q)]) {
                    any = true;
                    if (a(q, p + 1) >= threshold) ind += a(q, p + 1);
                }
            nInd += any;
        }
    }
    const double mu = d1 / n;
    return {self / n, prev / nPrev, ent / n, mu, d2 / n - mu * mu, nInd > 0 ? ind / nInd : std::nan("")};
}

/// One head (1 × 1) through the accumulator.
HeadMetrics oneHead(const std::vector<std::vector<int>>& tokens, const std::vector<Matrix>& patterns) {
    HeadMetricsAccumulator acc(1, 1);
    for (size_t s = 0; s < tokens.size(); ++s)
        if (acc.beginSequence(tokens[s])) acc.addLayer(0, {patterns[s]});
    return acc.result();
}

double metric(const HeadMetrics& m, HeadMetric which) { return m[which](0, 0); }

/// S distinct tokens: no induction query.
std::vector<int> distinctTokens(int S) {
    std::vector<int> t(static_cast<size_t>(S));
    std::iota(t.begin(), t.end(), 100);
    return t;
}

std::shared_ptr<const Model> demo() {
    static const std::shared_ptr<const Model> m = loadModel(demoDir());
    return m;
}

QString corpusFile(const QTemporaryDir& dir) {
    const QString path = dir.filePath(QStringLiteral("corpus.txt"));
    QFile f(path);
    f.open(QIODevice::WriteOnly);
    QFile g(sourceFile(QStringLiteral("docs/genesis1.txt")));
    g.open(QIODevice::ReadOnly);
    const QByteArray genesis = g.readAll();
    for (int i = 0; i < 3; ++i) f.write(genesis); // Genesis 1 three times: ~25 windows of 32 tokens, with repeats
    return path;
}

} // namespace

class TestHeadMetrics : public QObject {
    Q_OBJECT
private slots:
    void previousTokenPattern_();
    void identityPattern();
    void uniformPatternEntropyIsLogN();
    void randomPatternsAgainstFloat64Reference();
    void poolsSumsNotMeans();
    void inductionThreshold();
    void shortSequencesSkipped();
    void demoHeads();
    void corpusPassEqualsPromptByPrompt();
    void sparseAttention();
    void maxActivationSkipsPositionZero();
    void boundariesAndWarmup();
    void samplerKeepsTopAndReservoir();
    void headVisTree();
};

void TestHeadMetrics::previousTokenPattern_() {
    const int S = 6;
    const HeadMetrics m = oneHead({distinctTokens(S)}, {previousTokenPattern(S)});
    QCOMPARE(metric(m, HeadMetric::PrevToken), 1.0);
    QCOMPARE(metric(m, HeadMetric::SelfAttention), 1.0 / S); // only row 0 attends to itself
    QCOMPARE(metric(m, HeadMetric::PatternEntropy), 0.0);
    QVERIFY(std::abs(metric(m, HeadMetric::QkDistance) - 5.0 / 6) < 1e-12);
    QVERIFY(std::abs(metric(m, HeadMetric::QkDistanceVariance) - (5.0 / 6 - 25.0 / 36)) < 1e-12);
    QVERIFY(std::isnan(metric(m, HeadMetric::Induction))); // no repeated token: no induction query
    QCOMPARE(m.positions, qint64(6));
    QCOMPARE(m.prevPositions, qint64(5));
    QCOMPARE(m.inductionQueries, qint64(0));
}

void TestHeadMetrics::identityPattern() {
    const int S = 5;
    const HeadMetrics m = oneHead({distinctTokens(S)}, {Matrix::Identity(S, S)});
    QCOMPARE(metric(m, HeadMetric::SelfAttention), 1.0);
    QCOMPARE(metric(m, HeadMetric::PrevToken), 0.0);
    QCOMPARE(metric(m, HeadMetric::PatternEntropy), 0.0);
    QCOMPARE(metric(m, HeadMetric::QkDistance), 0.0);
    QCOMPARE(metric(m, HeadMetric::QkDistanceVariance), 0.0);
}

void TestHeadMetrics::uniformPatternEntropyIsLogN() {
    const int S = 7;
    const HeadMetrics m = oneHead({distinctTokens(S)}, {uniformPattern(S)});
    double ent = 0, self = 0, prev = 0, dist = 0, dist2 = 0;
    for (int q = 0; q < S; ++q) {
        ent += std::log(q + 1.0); // a row spread over n keys has entropy ln n
        self += 1.0 / (q + 1);
        if (q >= 1) prev += 1.0 / (q + 1);
        dist += q / 2.0;                                  // mean of 0 … q
        dist2 += q * (2.0 * q + 1) / 6.0;                 // mean of 0² … q²
    }
    QVERIFY(std::abs(metric(m, HeadMetric::PatternEntropy) - ent / S) < 1e-6);
    QVERIFY(std::abs(metric(m, HeadMetric::SelfAttention) - self / S) < 1e-6);
    QVERIFY(std::abs(metric(m, HeadMetric::PrevToken) - prev / (S - 1)) < 1e-6);
    QVERIFY(std::abs(metric(m, HeadMetric::QkDistance) - dist / S) < 1e-6);
    QVERIFY(std::abs(metric(m, HeadMetric::QkDistanceVariance) - (dist2 / S - (dist / S) * (dist / S))) < 1e-6);
    // one row over n keys: exactly ln n
    const HeadMetrics last = oneHead({{1, 2, 3, 4}}, {uniformPattern(4)});
    QVERIFY(std::abs(metric(last, HeadMetric::PatternEntropy) - (std::log(2.0) + std::log(3.0) + std::log(4.0)) / 4) < 1e-6);
}

void TestHeadMetrics::randomPatternsAgainstFloat64Reference() {
    std::mt19937 rng(7);
    std::vector<std::vector<int>> tokens;
    std::vector<Matrix> patterns;
    for (int S : {9, 17, 3, 30}) {
        std::vector<int> t;
        for (int i = 0; i < S; ++i) t.push_back(int(rng() % 5)); // a small vocabulary: many repeats
        tokens.push_back(t);
        patterns.push_back(randomPattern(S, rng));
    }
    const HeadMetrics m = oneHead(tokens, patterns);
    const std::array<double, 6> ref = reference(tokens, patterns, kInductionAttentionThreshold);
    for (HeadMetric k : allHeadMetrics())
        QVERIFY2(std::abs(metric(m, k) - ref[size_t(k)]) < 1e-9,
                 qPrintable(QStringLiteral("%1: %2 vs %3").arg(headMetricKey(k)).arg(metric(m, k), 0, 'g', 12).arg(ref[size_t(k)], 0, 'g', 12)));
    QVERIFY(metric(m, HeadMetric::Induction) > 0);
}

void TestHeadMetrics::poolsSumsNotMeans() {
    // a previous-token head on 2 tokens and an identity on 6: self = (1 + 6) / (2 + 6), not (1/2 + 1) / 2
    const HeadMetrics m = oneHead({distinctTokens(2), distinctTokens(6)}, {previousTokenPattern(2), Matrix::Identity(6, 6)});
    QCOMPARE(metric(m, HeadMetric::SelfAttention), 7.0 / 8);
    QVERIFY(metric(m, HeadMetric::SelfAttention) != (0.5 + 1.0) / 2);
    QCOMPARE(metric(m, HeadMetric::PrevToken), 1.0 / 6); // (1 + 0) / (1 + 5)
    QCOMPARE(m.sequences, qint64(2));
}

void TestHeadMetrics::inductionThreshold() {
    // tokens a b a b: queries 2 (a, earlier a at 0 → key 1) and 3 (b, earlier b at 1 → key 2)
    const std::vector<int> t{1, 2, 1, 2};
    Matrix a = Matrix::Zero(4, 4);
    a(0, 0) = 1;
    a(1, 0) = 1;
    a(2, 1) = 0.005f, a(2, 0) = 0.995f; // below the 0.01 threshold: counts 0
    a(3, 2) = 0.5f, a(3, 0) = 0.5f;
    const HeadMetrics m = oneHead({t}, {a});
    QCOMPARE(m.inductionQueries, qint64(2));
    QVERIFY(std::abs(metric(m, HeadMetric::Induction) - 0.25) < 1e-7); // (0 + 0.5) / 2
    // without the threshold it would be (0.005 + 0.5) / 2: the variant the pipeline does not compute
    HeadMetricsAccumulator raw(1, 1, 0.0);
    raw.beginSequence(t);
    raw.addLayer(0, {a});
    QVERIFY(std::abs(raw.result()[HeadMetric::Induction](0, 0) - 0.2525) < 1e-7);
    QVERIFY(std::abs(metric(m, HeadMetric::Induction) - 0.2525) > 1e-3);
    // every earlier occurrence counts: a a a, query 2 sums keys 1 and 2
    Matrix b = Matrix::Zero(3, 3);
    b(0, 0) = 1, b(1, 1) = 1, b(2, 1) = 0.25f, b(2, 2) = 0.75f;
    const HeadMetrics r = oneHead({{4, 4, 4}}, {b});
    QCOMPARE(r.inductionQueries, qint64(2));
    QVERIFY(std::abs(metric(r, HeadMetric::Induction) - (1.0 + 1.0) / 2) < 1e-7); // query 1: key 1; query 2: keys 1, 2
}

void TestHeadMetrics::shortSequencesSkipped() {
    HeadMetricsAccumulator acc(1, 1);
    QVERIFY(!acc.beginSequence(std::vector<int>{5}));
    acc.addLayer(0, {Matrix::Identity(1, 1)}); // ignored
    const HeadMetrics m = acc.result();
    QCOMPARE(m.sequences, qint64(0));
    for (HeadMetric k : allHeadMetrics()) QVERIFY(std::isnan(metric(m, k)));
}

void TestHeadMetrics::demoHeads() {
    const auto model = demo();
    // the prompt's metrics are the accumulator's over the cache's patterns, and prev_token_score is the
    // previous-token detector's score (the same rows, the same denominator)
    const std::vector<int> ids = model->tokenizer().encode(QStringLiteral("In the beginning God created the heaven and the earth."));
    const ActivationCache cache = runForward(*model, ids);
    const HeadMetrics m = headMetrics(cache);
    const HeadScores prev = scoreHeads(cache, HeadDetector::PreviousToken);
    for (int l = 0; l < cache.nLayers(); ++l)
        for (int h = 0; h < cache.nHeads(); ++h) {
            QVERIFY(std::abs(m[HeadMetric::PrevToken](l, h) - prev.scores(l, h)) < 1e-6);
            const std::array<double, 6> ref = reference({cache.tokens}, {cache.layers[size_t(l)].pattern[size_t(h)]}, 0.01);
            for (HeadMetric k : allHeadMetrics())
                QVERIFY(std::isnan(ref[size_t(k)]) ? std::isnan(m[k](l, h)) : std::abs(m[k](l, h) - ref[size_t(k)]) < 1e-9);
        }
    QCOMPARE(m.sequences, qint64(1));
    QVERIFY2(m[HeadMetric::PrevToken](0, 0) > 0.8, qPrintable(QString::number(m[HeadMetric::PrevToken](0, 0))));
    // the known heads: L0H0 is the previous-token head; on [BOS] + R + R, L1H1, L1H2, L1H3 are induction heads
    const RepeatedSequence seq = repeatedRandomSequence(model->config(), model->tokenizer().bosId().value_or(-1));
    const HeadMetrics r = headMetrics(runForward(*model, seq.tokens));
    QCOMPARE(r.inductionQueries, qint64(seq.repeatLength));
    for (int h = 1; h <= 3; ++h) QVERIFY2(r[HeadMetric::Induction](1, h) > 0.7, qPrintable(QString::number(r[HeadMetric::Induction](1, h))));
    for (int h = 0; h < 4; ++h) QVERIFY(r[HeadMetric::Induction](0, h) < 0.2);
    Eigen::Index bl = 0, bh = 0;
    r[HeadMetric::PrevToken].maxCoeff(&bl, &bh);
    QCOMPARE(int(bl), 0);
    QCOMPARE(int(bh), 0);
}

void TestHeadMetrics::corpusPassEqualsPromptByPrompt() {
    QTemporaryDir tmp;
    const auto model = demo();
    CorpusPassOptions o;
    o.corpus = corpusFile(tmp);
    o.windowTokens = 32;
    o.maxSequences = 7;
    QCOMPARE(countCorpusWindows(*model, o), qint64(7));
    const HeadMetrics m = headMetricsOverCorpus(*model, o);
    QCOMPARE(m.sequences, qint64(7));
    // the same windows one by one through the accumulator
    CorpusWindows reader(listCorpusFiles(o.corpus), model->tokenizer(), 32);
    HeadMetricsAccumulator acc(2, 4);
    CorpusWindow w;
    for (int i = 0; i < 7 && reader.next(&w); ++i) {
        QCOMPARE(int(w.ids.size()), 33); // BOS + 32
        const ActivationCache c = runForward(*model, w.ids);
        acc.beginSequence(w.ids);
        for (int l = 0; l < 2; ++l) acc.addLayer(l, c.layers[size_t(l)].pattern);
    }
    const HeadMetrics byHand = acc.result();
    QCOMPARE(m.positions, qint64(7 * 33));
    for (HeadMetric k : allHeadMetrics()) QVERIFY((m[k] - byHand[k]).cwiseAbs().maxCoeff() < 1e-12);
    o.maxSequences = 0; // the whole corpus
    QVERIFY(countCorpusWindows(*model, o) > 7);
    o.corpus = tmp.filePath(QStringLiteral("missing.txt"));
    try {
        headMetricsOverCorpus(*model, o);
        QFAIL("no error for a missing corpus");
    } catch (const InputError& e) {
        QVERIFY2(e.message().contains(QStringLiteral("missing.txt: no such corpus file or folder")), qPrintable(e.message()));
    }
}

void TestHeadMetrics::sparseAttention() {
    Matrix a = Matrix::Zero(3, 3);
    a(0, 0) = 1;
    a(1, 0) = 0.996f, a(1, 1) = 0.004f;                 // 0.004 < 0.005: dropped
    a(2, 0) = 0.5f, a(2, 1) = 0.30004f, a(2, 2) = 0.19996f;
    SparseAttention s = headVisSparse(a, 8, 0.005);
    QCOMPARE(s.seqLen, 3);
    QCOMPARE(s.indices, (std::vector<int>{0, 3, 6, 7, 8})); // q·3 + k, by (q, k)
    QCOMPARE(s.values, (std::vector<double>{1.0, 0.996, 0.5, 0.3, 0.2})); // rounded to 4 decimals
    s = headVisSparse(a, 2, 0.005); // the 2 largest of row 2 only
    QCOMPARE(s.indices, (std::vector<int>{0, 3, 6, 7}));
}

void TestHeadMetrics::maxActivationSkipsPositionZero() {
    Matrix a = Matrix::Zero(3, 3);
    a(0, 0) = 1, a(1, 0) = 0.9f, a(1, 1) = 0.1f, a(2, 0) = 0.6f, a(2, 1) = 0.15f, a(2, 2) = 0.25f;
    QCOMPARE(headVisMaxActivation(a), double(0.25f)); // not the BOS column's 0.9 or row 0's 1
    QCOMPARE(headVisMaxActivation(Matrix::Identity(1, 1)), 0.0);
}

void TestHeadMetrics::boundariesAndWarmup() {
    std::vector<double> v{0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.4, 0.6, 0.8, 0.0};
    // n = 10, 4 intervals: indices round(2.5) = 2 (half to even, as Python), 5, round(7.5) = 8
    QCOMPARE(headVisBoundaries(v, 4), (std::vector<double>{0.2, 0.5, 0.8}));
    QCOMPARE(headVisBoundaries({}, 3), (std::vector<double>{0.0, 0.0}));
    QCOMPARE(headVisBoundaries(v, 1), std::vector<double>{});
    QCOMPARE(headVisWarmupSize(16384), 1638);
    QCOMPARE(headVisWarmupSize(100000), 2000);
    QCOMPARE(headVisWarmupSize(2000), 200);
    QCOMPARE(headVisWarmupSize(300), 50);
    QCOMPARE(headVisWarmupSize(60), 30); // at most half: samples are kept
    QCOMPARE(headVisWarmupSize(1), 1);
}

void TestHeadMetrics::samplerKeepsTopAndReservoir() {
    HeadVisSampling s;
    s.nIntervals = 2;
    s.samplesPerInterval = 3;
    s.samplesPerTopInterval = 2;
    HeadVisSampler sampler(s, 0, 0);
    QVERIFY(!sampler.offer(0, 0.9)); // no boundaries yet
    sampler.setBoundaries({0.5});
    QCOMPARE(sampler.bucketOf(0.5), 1); // bisect_right
    QCOMPARE(sampler.bucketOf(0.49), 0);
    const std::vector<double> top{0.6, 0.95, 0.7, 0.95, 0.8};
    for (size_t i = 0; i < top.size(); ++i)
        if (sampler.offer(qint64(i), top[i])) sampler.keep({{int(i)}, {top[i]}, 2});
    for (int i = 10; i < 30; ++i)
        if (sampler.offer(i, 0.1)) sampler.keep({{i}, {0.1}, 2});
    const auto samples = sampler.samples();
    QCOMPARE(int(samples.size()), 5); // 3 reservoir + 2 top
    for (int i = 0; i < 3; ++i) {
        QCOMPARE(samples[size_t(i)].interval, 1);
        QVERIFY(samples[size_t(i)].sequenceId >= 10);
        QCOMPARE(samples[size_t(i)].attention.indices.front(), int(samples[size_t(i)].sequenceId)); // its own attention
    }
    // the top two by max_activation, ties to the lower id: ids 1 and 3 (both 0.95)
    QCOMPARE(samples[3].interval, 2);
    QCOMPARE(samples[3].sequenceId, qint64(1));
    QCOMPARE(samples[4].sequenceId, qint64(3));
    QCOMPARE(samples[4].attention.indices.front(), 3);
}

void TestHeadMetrics::headVisTree() {
    QTemporaryDir tmp;
    const auto model = demo();
    HeadVisOptions o;
    o.pass.corpus = corpusFile(tmp);
    o.pass.windowTokens = 32;
    o.pass.maxSequences = 16;
    o.modelName = QStringLiteral("demo");
    const QString dir = tmp.filePath(QStringLiteral("hv"));
    const HeadVisResult r = writeHeadVis(*model, o, dir, {});
    QCOMPARE(r.sequences, qint64(16));
    QCOMPARE(r.warmup, 8); // half the windows (the pipeline's minimum of 50 is more than there are)
    QCOMPARE(r.files.size(), 4 + 8);
    // config.json
    const QJsonObject config = readJsonObject(QDir(dir).filePath("config.json"));
    QCOMPARE(config["model_name"].toString(), QStringLiteral("demo"));
    QCOMPARE(config["dataset_name"].toString(), QStringLiteral("corpus.txt"));
    QCOMPARE(config["n_layers"].toInt(), 2);
    QCOMPARE(config["n_heads"].toInt(), 4);
    QCOMPARE(config["heads"].toArray().size(), 8);
    QCOMPARE(config["heads"].toArray()[5].toArray(), (QJsonArray{1, 1}));
    QCOMPARE(config["head_data_pattern"].toString(), QStringLiteral("L{layer}H{head}.json"));
    QCOMPARE(config["metrics"].toArray().size(), 6);
    QCOMPARE(config["metrics"].toArray()[5].toString(), QStringLiteral("induction_score"));
    QVERIFY(config["metric_descriptions"].toObject()["qk_distance"].toString().startsWith("Mean |q - k|"));
    const QJsonObject pc = config["pipeline_config"].toObject();
    for (const char* k : {"model_name", "dataset_name", "n_sequences", "seq_len", "dtype", "attn_implementation"}) // the loaders' CONFIG_KEYS
        QVERIFY2(!pc[k].isNull() && !pc[k].isUndefined(), k);
    QCOMPARE(pc["actual_sequences_processed"].toInt(), 16);
    QCOMPARE(pc["seq_len"].toInt(), 33);
    QCOMPARE(pc["warmup_size"].toInt(), 8);
    QCOMPARE(readJsonObject(QDir(dir).filePath("server_config.json")), QJsonObject());
    QCOMPARE(readJsonObject(QDir(dir).filePath("attributions/manifest.json")), QJsonObject());
    // scatter_data.json: the library's metrics over the same windows, rounded to 4 decimals
    QFile sf(QDir(dir).filePath("scatter_data.json"));
    QVERIFY(sf.open(QIODevice::ReadOnly));
    const QJsonArray scatter = QJsonDocument::fromJson(sf.readAll()).array();
    QCOMPARE(scatter.size(), 8);
    const HeadMetrics lib = headMetricsOverCorpus(*model, o.pass);
    for (const QJsonValue& v : scatter) {
        const QJsonObject row = v.toObject();
        const int l = row["layer"].toInt(), h = row["head"].toInt();
        QCOMPARE(row.size(), 8);
        for (HeadMetric k : allHeadMetrics()) {
            QVERIFY(row[headMetricKey(k)].isDouble());
            QVERIFY(std::abs(row[headMetricKey(k)].toDouble() - lib[k](l, h)) <= 0.5e-4 + 1e-12);
            QCOMPARE(row[headMetricKey(k)].toDouble(), std::nearbyint(r.metrics[k](l, h) * 1e4) / 1e4);
        }
    }
    // heads: every sample's entries are the model's own pattern on that window (sequence ids are window numbers here)
    std::vector<std::vector<int>> windows;
    CorpusWindows reader(listCorpusFiles(o.pass.corpus), model->tokenizer(), 32);
    CorpusWindow w;
    while (int(windows.size()) < 16 && reader.next(&w)) windows.push_back(w.ids);
    for (int l = 0; l < 2; ++l)
        for (int h = 0; h < 4; ++h) {
            const QJsonObject head = readJsonObject(QDir(dir).filePath(QStringLiteral("heads/L%1H%2.json").arg(l).arg(h)));
            for (const char* k : {"sequences", "qk_distance_histogram", "top_query_tokens", "top_key_tokens", "histogram", "statistics"})
                QVERIFY2(head.contains(k), k);
            const QJsonArray seqs = head["sequences"].toArray();
            QVERIFY(seqs.size() >= 1 && seqs.size() <= 4 * 3 + 10);
            QCOMPARE(head["statistics"].toObject()["n_samples"].toInt(), seqs.size());
            std::vector<double> qk(13, 0.0);
            for (const QJsonValue& sv : seqs) {
                const QJsonObject s = sv.toObject();
                const int id = s["sequence_id"].toInt(), S = s["seq_len"].toInt();
                QVERIFY(id >= r.warmup && id < 16); // warmup sequences are not sampled
                QVERIFY(s["interval"].toInt() >= 1 && s["interval"].toInt() <= 5);
                QCOMPARE(S, int(windows[size_t(id)].size()));
                QCOMPARE(s["tokens"].toArray().size(), S);
                QCOMPARE(s["tokens"].toArray()[1].toString(), model->tokenizer().decode(std::vector<int>{windows[size_t(id)][1]}));
                const Matrix pattern = runForward(*model, windows[size_t(id)]).layers[size_t(l)].pattern[size_t(h)];
                QCOMPARE(s["max_activation"].toDouble(), std::nearbyint(headVisMaxActivation(pattern) * 1e4) / 1e4);
                const QJsonArray idx = s["attention_indices"].toArray(), val = s["attention_values"].toArray();
                QCOMPARE(idx.size(), val.size());
                for (int i = 0; i < idx.size(); ++i) {
                    const int q = idx[i].toInt() / S, k = idx[i].toInt() % S;
                    QVERIFY(k <= q && (i == 0 || idx[i].toInt() > idx[i - 1].toInt()));
                    QVERIFY(std::abs(val[i].toDouble() - pattern(q, k)) <= 0.5e-4 + 1e-7);
                    QVERIFY(val[i].toDouble() >= 0.005);
                    const int d = q - k;
                    qk[size_t(d == 0 ? 0 : d == 1 ? 1 : int(std::floor(std::log2(d))) + 1)] += val[i].toDouble();
                }
            }
            const QJsonObject qkh = head["qk_distance_histogram"].toObject();
            QCOMPARE(qkh["bin_edges"].toArray().size(), 14);
            for (int b = 0; b < 13; ++b) QVERIFY(std::abs(qkh["bin_values"].toArray()[b].toDouble() - qk[size_t(b)]) <= 1e-3);
            const QJsonObject hist = head["histogram"].toObject();
            QCOMPARE(hist["bin_edges"].toArray().size(), 51);
            QCOMPARE(hist["bin_edges"].toArray()[1].toDouble(), 0.02);
            int total = 0;
            for (const QJsonValue& c : hist["bin_values"].toArray()) total += c.toInt();
            QCOMPARE(total, 16); // every sequence, the warmup's too
            const QJsonArray topKeys = head["top_key_tokens"].toArray();
            QVERIFY(!topKeys.isEmpty() && topKeys.size() <= 50);
            for (int i = 1; i < topKeys.size(); ++i)
                QVERIFY(topKeys[i - 1].toObject()["weight"].toDouble() >= topKeys[i].toObject()["weight"].toDouble());
            QVERIFY(head["statistics"].toObject()["mean_max_activation"].isDouble());
        }
}

QTEST_GUILESS_MAIN(TestHeadMetrics)
#include "tst_head_metrics.moc"
