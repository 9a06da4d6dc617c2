// topKOfProductQuantized (int8 candidate pass + exact F32 rescoring) against brute force: the full
// score matrix A·Bᵀ in double precision, every cell sorted (score desc, row asc, col asc). The inputs
// are built to stress the candidate filter's error bound: exact ties (integer and half-integer
// entries, whose F32 and double scores are equal and whose int8 rounding errors are the largest
// possible, ±½ step), clusters of near ties far closer than the int8 resolution, a dynamic range of
// 10¹² across rows and columns, zero rows, all-negative scores, odd shapes (r not a multiple of 4,
// rows/cols not multiples of the tiles), and tiny-gpt2's real OV/QK factors. The AVX512-VNNI kernel
// is checked against the portable one (same cells, same bits, same candidates).

#include "model/analysis/embedding_space/embedding_projection.h"
#include "model/analysis/common/quantized_topk.h"
#include "model/formats/model_loader.h"
#include "support/brute_force_topk.h"
#include "support/test_paths.h"

#include <QtTest>
#include <atomic>
#include <random>

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace attnscope;
using namespace attnscope::test;

namespace {

/// Brute-force top-k of A·Bᵀ in double precision.
std::vector<RefCell> bruteTopK(const Matrix& A, const Matrix& B, int k) {
    const MatrixD S = A.cast<double>() * B.cast<double>().transpose();
    std::vector<RefCell> all = sortedCells(S);
    all.resize(std::min(all.size(), size_t(std::max(0, k))));
    return all;
}

/// Checks `ours` against the brute-force list: same length, distinct cells, every score within 1e-5
/// relative of the double value; the i-th cell is the reference's i-th cell, except (unless
/// `exactOrder`, for inputs whose F32 scores are exact) where the reference has another cell within
/// 1e-6 relative of it (F32 rounding may order such near ties differently): then the cell must be one
/// of those.
QString compareExact(const std::vector<ScoredPair>& ours, const std::vector<RefCell>& ref, const Matrix& A,
                     const Matrix& B, bool exactOrder = false) {
    if (ours.size() != ref.size()) return QStringLiteral("%1 cells, expected %2").arg(ours.size()).arg(ref.size());
    QSet<qint64> seen;
    for (size_t i = 0; i < ours.size(); ++i) {
        const ScoredPair& p = ours[i];
        const qint64 cell = qint64(p.row) * B.rows() + p.col;
        if (seen.contains(cell)) return QStringLiteral("cell (%1, %2) twice").arg(p.row).arg(p.col);
        seen.insert(cell);
        const double exact = A.row(p.row).cast<double>().dot(B.row(p.col).cast<double>());
        if (std::abs(double(p.score) - exact) > 1e-5 * std::abs(exact))
            return QStringLiteral("cell %1 (%2, %3): score %4, double %5").arg(i).arg(p.row).arg(p.col).arg(p.score).arg(exact);
        if (std::abs(double(p.score) - ref[i].score) > 1e-5 * std::abs(ref[i].score))
            return QStringLiteral("cell %1: score %2, reference's %1th %3").arg(i).arg(p.score).arg(ref[i].score);
        if (p.row == ref[i].row && p.col == ref[i].col) continue;
        bool tied = false; // a different cell is only allowed where the reference has a near tie
        for (const RefCell& c : ref)
            if (!exactOrder && c.row == p.row && c.col == p.col && std::abs(c.score - ref[i].score) <= 1e-6 * std::abs(ref[i].score))
                tied = true;
        if (!tied)
            return QStringLiteral("cell %1 is (%2, %3) = %4, reference (%5, %6) = %7")
                .arg(i).arg(p.row).arg(p.col).arg(p.score).arg(ref[i].row).arg(ref[i].col).arg(ref[i].score);
    }
    return {};
}

Matrix gaussian(int rows, int cols, unsigned seed, float sigma = 1) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n(0, sigma);
    Matrix m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
    return m;
}

/// Entries in {−3..3}: scores are small integers, exact in F32 and in double, with many exact ties.
Matrix smallIntegers(int rows, int cols, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> d(-3, 3);
    Matrix m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = float(d(rng));
    return m;
}

/// Half-integers in [−126.5, 126.5] with one entry of 127 per row: scale 1, so every other entry sits
/// exactly halfway between two int8 steps (the largest rounding error). Scores are multiples of ¼ below
/// 2²⁰, exact in F32.
Matrix halfSteps(int rows, int cols, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> d(-127, 126);
    Matrix m(rows, cols);
    for (int i = 0; i < rows; ++i) {
        for (int k = 0; k < cols; ++k) m(i, k) = float(d(rng)) + 0.5f;
        m(i, i % cols) = 127;
    }
    return m;
}

/// Rounding against the best cells: entries are half-integers with one 127 per row (scales exactly 1);
/// round-half-even sends x = 2n + ½ down (approximation below) and x = 2n + 1½ up (above). Even rows of
/// A and even rows of B round down, odd ones up, all entries positive: the int8 scores of the
/// even × even cells fall short of the exact ones by ½Σ(ã + b̃) + 16 ≈ the per-row error bound, while the
/// odd × odd cells are overestimated, so a bound that is too small drops true top cells. Scores are
/// multiples of ¼ below 2²⁰ (exact in F32).
std::pair<Matrix, Matrix> roundingAgainstTop(int rows, int cols, int r, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> d(10, 62);
    auto make = [&](int n) {
        Matrix m(n, r);
        for (int i = 0; i < n; ++i) {
            for (int k = 0; k < r; ++k) m(i, k) = float(2 * d(rng)) + (i % 2 == 0 ? 0.5f : 1.5f);
            m(i, 0) = 127;
        }
        return m;
    };
    Matrix A = make(rows);
    return {A, make(cols)};
}

/// Near ties: every row of A is one of 3 base rows (+ noise 2e-3), every row of B one of 4 (+ noise):
/// the scores form 12 clusters of ~0.03 spread, well below the int8 error bound (~1) of the clusters'
/// values, so the whole top cluster becomes candidates and only the F32 rescoring orders it.
std::pair<Matrix, Matrix> nearTies(int rows, int cols, int r, unsigned seed) {
    const Matrix baseA = gaussian(3, r, seed), baseB = gaussian(4, r, seed + 1);
    Matrix A = gaussian(rows, r, seed + 2, 2e-3f), B = gaussian(cols, r, seed + 3, 2e-3f);
    for (int i = 0; i < rows; ++i) A.row(i) += baseA.row(i % 3);
    for (int j = 0; j < cols; ++j) B.row(j) += baseB.row(j % 4);
    return {A, B};
}

/// Rows of A and B scaled by 10^u, u uniform in [−6, 6] (twelve decades), plus a few zero rows.
std::pair<Matrix, Matrix> dynamicRange(int rows, int cols, int r, unsigned seed) {
    Matrix A = gaussian(rows, r, seed), B = gaussian(cols, r, seed + 1);
    std::mt19937 rng(seed + 2);
    std::uniform_real_distribution<float> u(-6, 6);
    for (int i = 0; i < rows; ++i) A.row(i) *= std::pow(10.0f, u(rng));
    for (int j = 0; j < cols; ++j) B.row(j) *= std::pow(10.0f, u(rng));
    A.row(5).setZero();
    B.row(7).setZero();
    return {A, B};
}

struct Case {
    Matrix A, B;
    bool exactOrder = false; ///< F32 scores are exact (integer / half-integer entries): ties must break exactly
};

QHash<QString, Case>& cases() {
    static QHash<QString, Case> c = [] {
        QHash<QString, Case> h;
        h["gaussian 700x900 r64"] = {gaussian(700, 64, 1), gaussian(900, 64, 2)};
        h["small integers 300x500 r16"] = {smallIntegers(300, 16, 3), smallIntegers(500, 16, 4), true};
        h["half steps 250x330 r64"] = {halfSteps(250, 64, 5), halfSteps(330, 64, 6), true};
        auto [rA, rB] = roundingAgainstTop(300, 400, 64, 19);
        h["rounding against the top 300x400 r64"] = {rA, rB, true};
        auto [nA, nB] = nearTies(400, 600, 64, 7);
        h["near ties 400x600 r64"] = {nA, nB};
        auto [dA, dB] = dynamicRange(500, 700, 64, 11);
        h["dynamic range 500x700 r64"] = {dA, dB};
        auto [oA, oB] = dynamicRange(101, 77, 7, 13);
        h["odd shape 101x77 r7"] = {oA, oB};
        Matrix negA = gaussian(200, 12, 17).cwiseAbs(), posB = gaussian(300, 12, 18).cwiseAbs();
        h["all negative 200x300 r12"] = {-negA, posB};
        return h;
    }();
    return c;
}

} // namespace

class TestQuantizedTopK : public QObject {
    Q_OBJECT
private slots:
    void matchesBruteForce_data();
    void matchesBruteForce();
    void simdAgreesWithPortable_data();
    void simdAgreesWithPortable();
    void tinyGpt2PairsMatchBruteForce_data();
    void tinyGpt2PairsMatchBruteForce();
    void agreesWithExactScan();
    void candidatesAreFew();
    void earlyStopSkipsRows();
    void nonFiniteFallsBackToExact();
    void edgeCasesAndErrors();
    void progressAndCancellation();
};

void TestQuantizedTopK::matchesBruteForce_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("k");
    for (const QString& name : cases().keys())
        for (int k : {1, 100, 777}) QTest::newRow(qPrintable(QStringLiteral("%1 k%2").arg(name).arg(k))) << name << k;
}

void TestQuantizedTopK::matchesBruteForce() {
    QFETCH(QString, name);
    QFETCH(int, k);
    const Case& c = cases()[name];
    for (QuantizedKernel kernel : {QuantizedKernel::Auto, QuantizedKernel::Portable}) {
        QuantizedTopKStats st;
        const auto ours = topKOfProductQuantized(c.A, c.B, k, {}, {}, kernel, &st);
        QVERIFY(!st.exactFallback);
        const QString err = compareExact(ours, bruteTopK(c.A, c.B, k), c.A, c.B, c.exactOrder);
        QVERIFY2(err.isEmpty(), qPrintable(name + ": " + err));
    }
}

void TestQuantizedTopK::simdAgreesWithPortable_data() {
    QTest::addColumn<QString>("name");
    for (const QString& name : cases().keys()) QTest::newRow(qPrintable(name)) << name;
}

void TestQuantizedTopK::simdAgreesWithPortable() {
    QFETCH(QString, name);
    if (!quantizedTopKHasSimd()) QSKIP("the compute kernel in use has no int8 pass with intrinsics (ATTNSCOPE_ISA=portable)");
    const Case& c = cases()[name];
#ifdef _OPENMP
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1); // one thread: the candidate counts depend only on the kernels
#endif
    QuantizedTopKStats simd, portable;
    const auto a = topKOfProductQuantized(c.A, c.B, 150, {}, {}, QuantizedKernel::Auto, &simd);
    const auto b = topKOfProductQuantized(c.A, c.B, 150, {}, {}, QuantizedKernel::Portable, &portable);
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    QVERIFY(simd.simd);
    QVERIFY(!portable.simd);
    QCOMPARE(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        QCOMPARE(a[i].row, b[i].row);
        QCOMPARE(a[i].col, b[i].col);
        QCOMPARE(a[i].score, b[i].score); // same FMA chain: bitwise equal
    }
    QCOMPARE(simd.candidates, portable.candidates); // same integer dot products, same thresholds
    QVERIFY(simd.candidates >= 150);
    QCOMPARE(simd.seedThreshold, portable.seedThreshold);
}

void TestQuantizedTopK::tinyGpt2PairsMatchBruteForce_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("layer");
    QTest::addColumn<int>("head");
    QTest::addColumn<int>("k");
    QTest::newRow("OV L0H0 k100") << int(PairProjectionKind::OV) << 0 << 0 << 100;
    QTest::newRow("OV L1H3 k1000") << int(PairProjectionKind::OV) << 1 << 3 << 1000;
    QTest::newRow("QK L0H1 k100") << int(PairProjectionKind::QK) << 0 << 1 << 100;
    QTest::newRow("QK L1H2 k5") << int(PairProjectionKind::QK) << 1 << 2 << 5;
}

void TestQuantizedTopK::tinyGpt2PairsMatchBruteForce() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QFETCH(int, kind);
    QFETCH(int, layer);
    QFETCH(int, head);
    QFETCH(int, k);
    static const auto tiny = loadModel(testdata("tiny-gpt2"));
    const auto kd = PairProjectionKind(kind);
    const LowRankScores f = pairFactors(*tiny, kd, layer, head);
    QCOMPARE(f.A.rows(), Eigen::Index(512));
    for (QuantizedKernel kernel : {QuantizedKernel::Auto, QuantizedKernel::Portable}) {
        const auto ours = topKOfProductQuantized(f.A, f.B, k, {}, {}, kernel);
        const QString err = compareExact(ours, bruteTopK(f.A, f.B, k), f.A, f.B);
        QVERIFY2(err.isEmpty(), qPrintable(err));
    }
    // projectPairs uses this path by default and returns the same cells as its exact scan
    const PairProjection fast = projectPairs(*tiny, kd, layer, head, k);
    const PairProjection exact = projectPairs(*tiny, kd, layer, head, k, {}, 100, PairTopKMethod::Exact);
    QCOMPARE(fast.top.size(), size_t(k));
    QCOMPARE(exact.top.size(), size_t(k));
    for (int i = 0; i < k; ++i) {
        QCOMPARE(fast.top[size_t(i)].row, exact.top[size_t(i)].row);
        QCOMPARE(fast.top[size_t(i)].col, exact.top[size_t(i)].col);
        QVERIFY(std::abs(fast.top[size_t(i)].score - exact.top[size_t(i)].score) <= 1e-5f * std::abs(exact.top[size_t(i)].score));
    }
}

void TestQuantizedTopK::agreesWithExactScan() {
    // a larger Gaussian case (r = 64, as d_head of GPT-2), against the exact blocked GEMM scan
    const Matrix A = gaussian(3000, 64, 21, 0.1f), B = gaussian(5000, 64, 22, 0.1f);
    const auto exact = topKOfProduct(A, B, 100, 512);
    const auto fast = topKOfProductQuantized(A, B, 100);
    QCOMPARE(fast.size(), exact.size());
    for (size_t i = 0; i < fast.size(); ++i) {
        QCOMPARE(fast[i].row, exact[i].row);
        QCOMPARE(fast[i].col, exact[i].col);
        QVERIFY(std::abs(fast[i].score - exact[i].score) <= 1e-5f * std::abs(exact[i].score));
        const double d = A.row(fast[i].row).cast<double>().dot(B.row(fast[i].col).cast<double>());
        QVERIFY(std::abs(fast[i].score - d) <= 1e-5 * std::abs(d));
    }
}

void TestQuantizedTopK::candidatesAreFew() {
    // 15·10⁶ Gaussian cells: the int8 pass must leave only a few thousand cells to rescore
    const Matrix A = gaussian(3000, 64, 31), B = gaussian(5000, 64, 32);
    QuantizedTopKStats st;
    const auto top = topKOfProductQuantized(A, B, 100, {}, {}, QuantizedKernel::Auto, &st);
    QCOMPARE(top.size(), size_t(100));
    QVERIFY2(st.candidates >= 100 && st.candidates < 20000, qPrintable(QString::number(st.candidates)));
    QVERIFY(st.seedThreshold > 0 && st.seedThreshold <= top.back().score);
    QCOMPARE(st.rowsScanned, qint64(3000));
    QCOMPARE(st.simd, quantizedTopKHasSimd());
}

void TestQuantizedTopK::earlyStopSkipsRows() {
    // row i of A has norm ~ 0.9^(i/10): after the first rows nothing can reach the top 10
    Matrix A = gaussian(2000, 32, 41);
    for (int i = 0; i < 2000; ++i) A.row(i) *= std::pow(0.9f, float(i) / 10);
    const Matrix B = gaussian(1000, 32, 42);
    QuantizedTopKStats st;
    const auto top = topKOfProductQuantized(A, B, 10, {}, {}, QuantizedKernel::Auto, &st);
    QVERIFY2(st.rowsScanned < 1000, qPrintable(QString::number(st.rowsScanned)));
    const QString err = compareExact(top, bruteTopK(A, B, 10), A, B);
    QVERIFY2(err.isEmpty(), qPrintable(err));
}

void TestQuantizedTopK::nonFiniteFallsBackToExact() {
    Matrix A = gaussian(50, 8, 51);
    const Matrix B = gaussian(60, 8, 52);
    A(3, 2) = std::numeric_limits<float>::quiet_NaN();
    QuantizedTopKStats st;
    const auto fast = topKOfProductQuantized(A, B, 20, {}, {}, QuantizedKernel::Auto, &st);
    QVERIFY(st.exactFallback);
    const auto exact = topKOfProduct(A, B, 20, 1024);
    QCOMPARE(fast.size(), exact.size());
    for (size_t i = 0; i < fast.size(); ++i) {
        QCOMPARE(fast[i].row, exact[i].row);
        QCOMPARE(fast[i].col, exact[i].col);
    }
}

void TestQuantizedTopK::edgeCasesAndErrors() {
    const Matrix A = gaussian(5, 4, 61), B = gaussian(3, 4, 62);
    // k beyond the number of cells: every cell, sorted
    const auto all = topKOfProductQuantized(A, B, 100);
    const QString err = compareExact(all, bruteTopK(A, B, 15), A, B);
    QCOMPARE(all.size(), size_t(15));
    QVERIFY2(err.isEmpty(), qPrintable(err));
    QVERIFY(topKOfProductQuantized(A, B, 0).empty());
    QVERIFY(topKOfProductQuantized(Matrix(0, 4), B, 3).empty());
    // all-zero factors: every score is 0; ties by row, then column
    const auto zeros = topKOfProductQuantized(Matrix::Zero(4, 8), Matrix::Zero(3, 8), 5);
    QCOMPARE(zeros.size(), size_t(5));
    QCOMPARE(zeros[4].row, 1);
    QCOMPARE(zeros[4].col, 1);
    QCOMPARE(zeros[4].score, 0.0f);
    try {
        topKOfProductQuantized(A, gaussian(3, 5, 63), 3);
        QFAIL("no InputError");
    } catch (const InputError& e) {
        QVERIFY2(e.message().contains("differ in width: 4 vs 5"), qPrintable(e.message()));
    }
}

void TestQuantizedTopK::progressAndCancellation() {
    // r = 64: norms concentrate, so the Cauchy–Schwarz stop cannot end the scan early
    const Matrix A = gaussian(3000, 64, 71), B = gaussian(300, 64, 72);
    // reports may come from any scan thread, one at a time (parallel_scan.h): plain values, no QCOMPARE there
    qint64 lastDone = -1, lastTotal = 0;
    int reports = 0;
    bool whatOk = true;
    Progress counting;
    counting.report = [&](qint64 done, qint64 total, const QString& what) {
        whatOk = whatOk && what == QStringLiteral("scan");
        ++reports, lastDone = done, lastTotal = total;
    };
    topKOfProductQuantized(A, B, 10, counting, QStringLiteral("scan"));
    QVERIFY(whatOk);
    QCOMPARE(lastTotal, qint64(32)); // ceil(3000 / 96) panels
    QCOMPARE(lastDone, qint64(32));
    QVERIFY(reports >= 2);

    // every thread polls cancellation before each panel and a report is never made after a cancel was
    // seen, so a request made by the first report is honoured with no second report
    std::atomic<int> seen(0);
    Progress cancelling;
    cancelling.report = [&](qint64, qint64, const QString&) { ++seen; };
    cancelling.isCancelled = [&] { return seen.load() >= 1; };
    QVERIFY_THROWS_EXCEPTION(Cancelled, topKOfProductQuantized(A, B, 10, cancelling));
    QCOMPARE(seen.load(), 1);
}

QTEST_GUILESS_MAIN(TestQuantizedTopK)
#include "tst_quantized_topk.moc"
