// Logit lens, token rankings and per-prompt component readout on tiny-gpt2, against independent
// computations: the model's own logits for the last boundary, an explicit double-precision LayerNorm
// loop for a middle boundary, full sorts of the logits for ranks, and a dense readout of head/MLP outputs.

#include "model/analysis/embedding_space/component_readout.h"
#include "model/analysis/embedding_space/embedding_space_json.h"
#include "model/analysis/embedding_space/logit_lens.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/brute_force_topk.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <numeric>

using namespace attnscope;
using namespace attnscope::test;

namespace {

/// ln_final(x)·W_U + b_U for one residual row, in double with explicit loops (biased variance, eps).
Eigen::VectorXd referenceLens(const Model& m, const RowVector& x) {
    const GlobalWeights& g = m.globals();
    const int D = int(x.size());
    double mean = 0, var = 0;
    for (int i = 0; i < D; ++i) mean += x(i);
    mean /= D;
    for (int i = 0; i < D; ++i) var += (x(i) - mean) * (x(i) - mean);
    var /= D;
    std::vector<double> y(static_cast<size_t>(D));
    for (int i = 0; i < D; ++i)
        y[size_t(i)] = (x(i) - mean) / std::sqrt(var + m.config().norm_eps) * g.ln_final_w.view()(0, i) +
                       g.ln_final_b.view()(0, i);
    const auto WUT = g.W_U_T.view();
    Eigen::VectorXd logits(WUT.rows());
    for (int v = 0; v < WUT.rows(); ++v) {
        double s = g.b_U.empty() ? 0.0 : g.b_U.view()(0, v);
        for (int i = 0; i < D; ++i) s += y[size_t(i)] * WUT(v, i);
        logits(v) = s;
    }
    return logits;
}

/// Position of `id` when all ids are sorted by logit descending (ties: lower id first).
int sortedRank(const RowVector& logits, int id) {
    std::vector<int> order(static_cast<size_t>(logits.size()));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return logits(a) != logits(b) ? logits(a) > logits(b) : a < b; });
    return int(std::find(order.begin(), order.end(), id) - order.begin());
}

} // namespace

class TestLogitLens : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void boundaryNames();
    void finalBoundaryIsTheModelsLogits();
    void middleBoundaryMatchesExplicitLayerNorm();
    void embedBoundaryReadsResidPre();
    void tableTopTokens();
    void rankingsEqualSortedLogits();
    void componentReadoutMatchesDenseProjection();
    void headOutputWithoutCachedResults();
    void json();
    void cancellationAndErrors();
    void boundaryListEqualsPerBoundaryRows_data();
    void boundaryListEqualsPerBoundaryRows();

private:
    std::shared_ptr<const Model> model_;
    ActivationCache cache_;
};

void TestLogitLens::initTestCase() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    model_ = loadModel(testdata("tiny-gpt2"));
    const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
    cache_ = runForward(*model_, intsFromJson(ref["token_ids"].toArray()));
    QCOMPARE(cache_.nPositions(), 18);
}

void TestLogitLens::boundaryNames() {
    const ModelConfig& c = model_->config();
    QCOMPARE(lensBoundaryCount(c), 5);
    const QStringList names{"embed", "L0attn", "L0mlp", "L1attn", "L1mlp"};
    for (int b = 0; b < 5; ++b) {
        QCOMPARE(lensBoundaryName(c, b), names[b]);
        QCOMPARE(lensBoundaryFromName(c, names[b]), b);
    }
    QVERIFY_THROWS_EXCEPTION(InputError, lensBoundaryName(c, 5));
    try {
        lensBoundaryFromName(c, "L2attn");
        QFAIL("no InputError");
    } catch (const InputError& e) {
        QVERIFY2(e.message().contains("Unknown lens layer \"L2attn\""), qPrintable(e.message()));
    }
}

void TestLogitLens::finalBoundaryIsTheModelsLogits() {
    const int last = lensBoundaryCount(model_->config()) - 1;
    const Matrix all = lensLogits(*model_, cache_, last);
    QCOMPARE(all.rows(), cache_.logits.rows());
    QCOMPARE(maxAbsDiff(all, cache_.logits), 0.0); // same expressions as runForward: bit for bit
    for (int p : {0, 9, 17}) {
        const Matrix row = lensLogits(*model_, cache_, last, p);
        const double d = maxAbsDiff(row, cache_.logits.row(p));
        QVERIFY2(d <= 1e-5, qPrintable(QString("position %1: %2").arg(p).arg(d)));
    }
}

void TestLogitLens::middleBoundaryMatchesExplicitLayerNorm() {
    // L0mlp = resid_post of layer 0 = resid_pre of layer 1
    const int b = lensBoundaryFromName(model_->config(), "L0mlp");
    for (int p : {3, 12}) {
        const Eigen::VectorXd ref = referenceLens(*model_, cache_.layers[1].resid_pre.row(p));
        const RowVector ours = lensLogits(*model_, cache_, b, p);
        const double d = (ours.transpose().cast<double>() - ref).cwiseAbs().maxCoeff();
        QVERIFY2(d <= 1e-5, qPrintable(QString("position %1: %2").arg(p).arg(d)));
        // and the row differs from the final logits (the lens is not a copy of the output)
        QVERIFY(maxAbsDiff(ours, cache_.logits.row(p)) > 1e-3);
    }
    const Eigen::VectorXd refMid = referenceLens(*model_, cache_.layers[1].resid_mid.row(7));
    const Matrix mid = lensLogits(*model_, cache_, lensBoundaryFromName(model_->config(), "L1attn"));
    QVERIFY((mid.row(7).transpose().cast<double>() - refMid).cwiseAbs().maxCoeff() <= 1e-5);
}

void TestLogitLens::embedBoundaryReadsResidPre() {
    const Matrix& r = lensResidual(model_->config(), cache_, 0);
    QCOMPARE(maxAbsDiff(r, cache_.embed + cache_.pos_embed), 0.0);
    const Eigen::VectorXd ref = referenceLens(*model_, cache_.embed.row(4) + cache_.pos_embed.row(4));
    QVERIFY((lensLogits(*model_, cache_, 0, 4).transpose().cast<double>() - ref).cwiseAbs().maxCoeff() <= 1e-5);
}

void TestLogitLens::tableTopTokens() {
    const std::vector<LensCell> cells = logitLens(*model_, cache_, 5);
    QCOMPARE(int(cells.size()), 5 * 18);
    const LensCell& c = cells[size_t(2 * 18 + 6)]; // boundary 2 (L0mlp), position 6
    QCOMPARE(c.boundary, 2);
    QCOMPARE(c.position, 6);
    const Eigen::VectorXd ref = referenceLens(*model_, cache_.layers[0].resid_post.row(6));
    const std::vector<RefCell> sorted = sortedEntries(ref);
    const double logZ = std::log((ref.array() - ref.maxCoeff()).exp().sum()) + ref.maxCoeff();
    for (int i = 0; i < 5; ++i) {
        QCOMPARE(c.top[size_t(i)].id, sorted[size_t(i)].col);
        QVERIFY(std::abs(c.top[size_t(i)].prob - std::exp(sorted[size_t(i)].score - logZ)) < 1e-6);
    }
    // last boundary's top-1 is the model's argmax
    for (int p = 0; p < 18; ++p) {
        Eigen::Index arg;
        cache_.logits.row(p).maxCoeff(&arg);
        QCOMPARE(cells[size_t(4 * 18 + p)].top[0].id, int(arg));
    }
}

void TestLogitLens::rankingsEqualSortedLogits() {
    for (int token : {0, 123, 511}) {
        const auto ranks = tokenRankings(*model_, cache_, token);
        QCOMPARE(int(ranks.size()), 5);
        for (int b = 0; b < 5; ++b) {
            const Matrix logits = lensLogits(*model_, cache_, b);
            for (int p = 0; p < 18; ++p) {
                const TokenRank& r = ranks[size_t(b)][size_t(p)];
                QCOMPARE(r.rank, sortedRank(logits.row(p), token));
                QCOMPARE(r.logit, logits(p, token));
                const double z = (logits.row(p).array().cast<double>()).exp().sum();
                QVERIFY(std::abs(r.prob - std::exp(double(logits(p, token))) / z) < 1e-6);
            }
        }
    }
    // the final boundary's argmax has rank 0
    Eigen::Index arg;
    cache_.logits.row(17).maxCoeff(&arg);
    QCOMPARE(tokenRankings(*model_, cache_, int(arg))[4][17].rank, 0);
}

void TestLogitLens::componentReadoutMatchesDenseProjection() {
    const MatrixD WU = model_->globals().W_U_T.view().cast<double>().transpose(); // [d_model, d_vocab]
    for (auto [l, h, p] : {std::tuple{0, 0, 5}, std::tuple{1, 3, 17}}) {
        const Eigen::VectorXd ref = (cache_.layers[size_t(l)].result[size_t(h)].row(p).cast<double>() * WU).transpose();
        const ComponentReadout r = readHead(*model_, cache_, l, h, p, 10);
        const double tol = 1e-4 * ref.cwiseAbs().maxCoeff();
        QString err = compareTopK(r.promoted, sortedEntries(ref, true), ref, 10, tol);
        QVERIFY2(err.isEmpty(), qPrintable(err));
        err = compareTopK(r.suppressed, sortedEntries(ref, false), ref, 10, tol);
        QVERIFY2(err.isEmpty(), qPrintable(err));
    }
    const Eigen::VectorXd ref = (cache_.layers[1].mlp_out.row(2).cast<double>() * WU).transpose();
    const ComponentReadout r = readMlp(*model_, cache_, 1, 2, 10);
    const QString err = compareTopK(r.promoted, sortedEntries(ref, true), ref, 10, 1e-4 * ref.cwiseAbs().maxCoeff());
    QVERIFY2(err.isEmpty(), qPrintable(err));
}

void TestLogitLens::headOutputWithoutCachedResults() {
    ForwardOptions opt;
    opt.cacheHeadResults = false;
    const ActivationCache c = runForward(*model_, cache_.tokens, opt);
    QVERIFY(c.layers[1].result.empty());
    const RowVector x = headOutput(*model_, c, 1, 2, 9);
    QVERIFY(maxAbsDiff(x, cache_.layers[1].result[2].row(9)) <= 1e-6);
    QVERIFY(x.cwiseAbs().maxCoeff() > 0);
}

void TestLogitLens::json() {
    const std::vector<LensCell> cells = logitLens(*model_, cache_, 3);
    const QJsonArray a = logitLensToJson(model_->config(), model_->tokenizer(), cells);
    QCOMPARE(a.size(), 90);
    const QJsonObject o = a[18 + 4].toObject();
    QCOMPARE(o["layer"].toString(), QString("L0attn"));
    QCOMPARE(o["position"].toInt(), 4);
    const QJsonArray top = o["top"].toArray();
    QCOMPARE(top.size(), 3);
    QCOMPARE(top[0].toObject()["token_id"].toInt(), cells[22].top[0].id);
    QCOMPARE(top[0].toObject()["token"].toString(), QString::fromUtf8(model_->tokenizer().tokenBytes(cells[22].top[0].id)));
    QCOMPARE(float(top[0].toObject()["prob"].toDouble()), cells[22].top[0].prob);
    QCOMPARE(a[0].toObject()["layer"].toString(), QString("embed"));
    QCOMPARE(a[89].toObject()["layer"].toString(), QString("L1mlp"));
}

void TestLogitLens::boundaryListEqualsPerBoundaryRows_data() {
    QTest::addColumn<int>("S");
    QTest::newRow("S=18: 108 rows in chunks of 54 (3 boundaries; dot products)") << 18;
    QTest::newRow("S=64 (n_ctx): 704 rows in chunks of 235 (kernel), the last padded") << 64;
}

void TestLogitLens::boundaryListEqualsPerBoundaryRows() {
    // logitLensAt batches rows of several boundaries into one GEMM and runs topTokens in parallel; each
    // cell must be bitwise what topTokens gives on the row of lensLogits(b), the per-boundary path.
    QFETCH(int, S);
    std::vector<int> tokens(static_cast<size_t>(S));
    for (int i = 0; i < S; ++i) tokens[size_t(i)] = (i * 37 + 11) % model_->config().d_vocab;
    const ActivationCache cache = S == 18 ? cache_ : runForward(*model_, tokens);
    QCOMPARE(cache.nPositions(), S);
    const std::vector<int> boundaries = S == 18 ? std::vector<int>{4, 0, 2, 2, 1, 3}
                                                : std::vector<int>{4, 0, 2, 2, 1, 3, 0, 4, 1, 1, 3};
    const int nb = int(boundaries.size());
    std::vector<qint64> steps;
    Progress p;
    p.report = [&](qint64 done, qint64 total, const QString&) {
        QCOMPARE(total, qint64(nb));
        steps.push_back(done);
    };
    const std::vector<LensCell> cells = logitLensAt(*model_, cache, boundaries, 7, p);
    QCOMPARE(int(cells.size()), nb * S);
    QCOMPARE(steps.back(), qint64(nb));
    QVERIFY(std::is_sorted(steps.begin(), steps.end()));
    // a step per product (6 boundaries in 2 chunks of 3 below 64 rows, or 704 rows in 3 chunks) + done
    QCOMPARE(int(steps.size()), S == 18 ? 3 : 4);
    for (size_t i = 0; i < boundaries.size(); ++i) {
        const Matrix logits = lensLogits(*model_, cache, boundaries[i]);
        for (int pos = 0; pos < S; ++pos) {
            const LensCell& c = cells[i * size_t(S) + size_t(pos)];
            QCOMPARE(c.boundary, boundaries[i]);
            QCOMPARE(c.position, pos);
            const std::vector<TokenScore> ref = topTokens(logits.row(pos), 7);
            QCOMPARE(int(c.top.size()), 7);
            for (size_t j = 0; j < ref.size(); ++j) {
                QCOMPARE(c.top[j].id, ref[j].id);
                QCOMPARE(std::memcmp(&c.top[j].logit, &ref[j].logit, sizeof(float)), 0);
                QCOMPARE(std::memcmp(&c.top[j].prob, &ref[j].prob, sizeof(float)), 0);
            }
        }
    }
    // the whole table is the list of all boundaries
    if (S == 18) {
        const std::vector<LensCell> all = logitLens(*model_, cache, 7);
        QCOMPARE(all[size_t(4 * S + 5)].top[0].id, cells[5].top[0].id);
        QCOMPARE(all[size_t(4 * S + 5)].top[6].prob, cells[5].top[6].prob);
    }
    QVERIFY(logitLensAt(*model_, cache, {}, 5).empty());
    try {
        logitLensAt(*model_, cache, {0, 5}, 5);
        QFAIL("no InputError");
    } catch (const InputError& e) {
        QVERIFY2(e.message().contains("Lens boundary 5 is outside [0, 5)"), qPrintable(e.message()));
    }
}

void TestLogitLens::cancellationAndErrors() {
    int seen = 0;
    qint64 lastTotal = 0;
    Progress p;
    p.report = [&](qint64, qint64 total, const QString&) { ++seen, lastTotal = total; };
    p.isCancelled = [&] { return seen >= 2; };
    QVERIFY_THROWS_EXCEPTION(Cancelled, logitLens(*model_, cache_, 5, p));
    QCOMPARE(seen, 2);
    QCOMPARE(lastTotal, qint64(5));
    seen = 0;
    QVERIFY_THROWS_EXCEPTION(Cancelled, tokenRankings(*model_, cache_, 1, p));
    try {
        lensLogits(*model_, cache_, 1, 18);
        QFAIL("no InputError");
    } catch (const InputError& e) {
        QVERIFY2(e.message().contains("Position 18 is outside the prompt [0, 18)"), qPrintable(e.message()));
    }
    QVERIFY_THROWS_EXCEPTION(InputError, tokenRankings(*model_, cache_, 512));
    QVERIFY_THROWS_EXCEPTION(InputError, readHead(*model_, cache_, 0, 4, 0, 5));
}

QTEST_GUILESS_MAIN(TestLogitLens)
#include "tst_logit_lens.moc"
