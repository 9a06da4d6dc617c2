// topTokens (model/analysis/common/top_tokens.h) against a brute-force reference: every id sorted by logit
// (ties: lower id first) with a full std::sort, and probabilities from the softmax written the way the
// original implementation did (float exp of x − max, summed in double). Rows: random GPT-2-sized rows,
// rows with many ties, ascending and descending rows (every logit enters the running top-k), rows with
// −inf entries, tiny rows with k ≥ n, and k on both sides of the threshold scan's limit.

#include "model/analysis/common/top_tokens.h"

#include <QtTest>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

using namespace attnscope;

namespace {

struct Ref {
    std::vector<int> ids; ///< all ids, best first
    double logZ = 0;
};

Ref reference(const RowVector& x) {
    Ref r;
    r.ids.resize(size_t(x.size()));
    std::iota(r.ids.begin(), r.ids.end(), 0);
    std::sort(r.ids.begin(), r.ids.end(), [&](int a, int b) { return x(a) != x(b) ? x(a) > x(b) : a < b; });
    const float m = x.maxCoeff();
    double s = 0;
    for (Eigen::Index i = 0; i < x.size(); ++i) s += double(std::exp(x(i) - m));
    r.logZ = double(m) + std::log(s);
    return r;
}

RowVector randomRow(int n, unsigned seed, float scale) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> d(0.0f, scale);
    RowVector x(n);
    for (int i = 0; i < n; ++i) x(i) = d(gen);
    return x;
}

/// Empty when topTokens(x, k) equals the reference: ids in order, logits, probabilities within float
/// rounding (2 ulp relative) of the reference softmax.
QString check(const RowVector& x, int k) {
    const Ref ref = reference(x);
    const std::vector<TokenScore> top = topTokens(x, k);
    const int kk = std::clamp(k, 0, int(x.size()));
    if (int(top.size()) != kk) return QString("k=%1: %2 entries, expected %3").arg(k).arg(top.size()).arg(kk);
    for (int i = 0; i < kk; ++i) {
        const int id = ref.ids[size_t(i)];
        const TokenScore& t = top[size_t(i)];
        if (t.id != id) return QString("k=%1: entry %2 has id %3, expected %4").arg(k).arg(i).arg(t.id).arg(id);
        if (t.logit != x(id)) return QString("k=%1: entry %2 logit %3 vs %4").arg(k).arg(i).arg(t.logit).arg(x(id));
        const double p = std::exp(double(x(id)) - ref.logZ);
        if (std::abs(double(t.prob) - p) > 2.4e-7 * p + 1e-30)
            return QString("k=%1: entry %2 prob %3 vs %4").arg(k).arg(i).arg(t.prob, 0, 'g', 10).arg(p, 0, 'g', 10);
    }
    return {};
}

} // namespace

class TestTopTokens : public QObject {
    Q_OBJECT
private slots:
    void randomRows() {
        for (unsigned seed = 1; seed <= 6; ++seed) {
            const RowVector x = randomRow(50257, seed, seed % 2 ? 3.0f : 30.0f);
            for (int k : {1, 2, 10, 63, 64, 65, 200}) {
                const QString err = check(x, k);
                QVERIFY2(err.isEmpty(), qPrintable(err));
            }
        }
    }
    void ties() {
        // values on a coarse grid: hundreds of equal logits at every level, including the top
        std::mt19937 gen(7);
        std::uniform_int_distribution<int> d(0, 12);
        RowVector x(5000);
        for (Eigen::Index i = 0; i < x.size(); ++i) x(i) = float(d(gen)) * 0.5f;
        for (int k : {1, 10, 64, 65, 500}) {
            const QString err = check(x, k);
            QVERIFY2(err.isEmpty(), qPrintable(err));
        }
        const RowVector flat = RowVector::Constant(333, 1.25f); // all equal: ids 0..k-1, prob 1/n each
        const std::vector<TokenScore> top = topTokens(flat, 5);
        for (int i = 0; i < 5; ++i) {
            QCOMPARE(top[size_t(i)].id, i);
            QVERIFY(std::abs(top[size_t(i)].prob - 1.0 / 333) < 1e-9);
        }
    }
    void monotoneRows() {
        RowVector up(4099), down(4099);
        for (int i = 0; i < 4099; ++i) up(i) = float(i) * 0.01f, down(i) = -float(i) * 0.01f;
        for (int k : {1, 10, 64, 100}) {
            QString err = check(up, k);
            QVERIFY2(err.isEmpty(), qPrintable(err));
            err = check(down, k);
            QVERIFY2(err.isEmpty(), qPrintable(err));
        }
        QCOMPARE(topTokens(up, 3)[0].id, 4098);
        QCOMPARE(topTokens(down, 3)[2].id, 2);
    }
    void infinitiesAndTinyRows() {
        RowVector x = randomRow(1000, 9, 2.0f);
        const float inf = std::numeric_limits<float>::infinity();
        for (int i : {0, 3, 17, 500, 999}) x(i) = -inf;
        for (int k : {1, 10, 1000}) {
            const QString err = check(x, k);
            QVERIFY2(err.isEmpty(), qPrintable(err));
        }
        QCOMPARE(topTokens(x, 1000).back().prob, 0.0f); // the −inf entries come last, with probability 0
        for (int n : {1, 2, 5, 17, 33}) {
            const RowVector y = randomRow(n, unsigned(20 + n), 1.0f);
            for (int k : {n - 1, n, n + 1, 100}) {
                const QString err = check(y, k);
                QVERIFY2(err.isEmpty(), qPrintable(err));
            }
        }
        QVERIFY(topTokens(x, 0).empty());
        QVERIFY(topTokens(x, -3).empty());
        QVERIFY(topTokens(RowVector(0), 5).empty());
    }
    void probabilitiesSumToOne() {
        const RowVector x = randomRow(300, 31, 1.0f);
        const std::vector<TokenScore> all = topTokens(x, 300);
        double s = 0;
        for (const TokenScore& t : all) s += t.prob;
        QVERIFY(std::abs(s - 1.0) < 1e-6);
    }
};

QTEST_GUILESS_MAIN(TestTopTokens)
#include "tst_top_tokens.moc"
