// Head detectors on hand-built one-layer models whose patterns are known exactly: head 0 attends only to
// the previous token (saturated softmax), head 1 has W_Q = 0 so it attends uniformly (1/(i+1) per key).
// Expected scores are computed here from those closed forms.

#include "model/analysis/attention/head_detectors.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/handmade_model.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QtTest>
#include <set>

using namespace attnscope;
using namespace attnscope::test;

namespace {

constexpr int kCtx = 12;

/// One layer, two heads of d_head 12, d_model 24. W_pos[p] = e_p (one-hot in the first 12 dims), W_E = 0,
/// so ln1(resid) at p is a·e_p − b·1. Head 0: q_i = α·(first 12 dims), k_j = the same shifted by one
/// (W_K[j][j+1] = 1), so q_i·k_j has an extra α·a² exactly when j = i − 1 and the softmax saturates.
/// Head 1: all zero, a uniform pattern. BOS = EOS = 19.
std::shared_ptr<const Model> previousTokenModel() {
    ModelConfig cfg = gpt2Config(1, 2, 2 * kCtx, kCtx, 20);
    cfg.bos_token_id = cfg.eos_token_id = 19;
    HandmadeWeights w = zeroWeights(cfg);
    const float alpha = 50;
    for (int p = 0; p < kCtx; ++p) {
        w.W_pos(p, p) = 1;
        w.layers[0].W_Q(p, p) = alpha;
        if (p + 1 < kCtx) w.layers[0].W_K(p, p + 1) = 1;
    }
    return makeModel(std::move(w));
}

/// Σ_{i=from}^{to} 1/(i+1) / (to − from + 1): a uniform head's mean mass on one key per query.
double meanInverse(int from, int to) {
    double s = 0;
    for (int i = from; i <= to; ++i) s += 1.0 / (i + 1);
    return s / (to - from + 1);
}

} // namespace

class TestHeadDetectors : public QObject {
    Q_OBJECT
private slots:
    void previousToken();
    void firstToken();
    void duplicateToken();
    void noQueriesGivesNaN();
    void repeatedSequence();
    void induction();
    void formulas();
    void tinyGpt2MatchesReferencePatterns();
};

void TestHeadDetectors::previousToken() {
    auto model = previousTokenModel();
    const std::vector<int> ids{19, 3, 7, 1, 1, 8, 2, 9, 4, 5};
    const ActivationCache cache = runForward(*model, ids);
    const HeadScores s = scoreHeads(cache, HeadDetector::PreviousToken);
    QCOMPARE(s.scores.rows(), Eigen::Index(1));
    QCOMPARE(s.scores.cols(), Eigen::Index(2));
    QCOMPARE(s.nQueries, 9);
    QVERIFY2(std::abs(s.scores(0, 0) - 1.0) <= 1e-6, qPrintable(QString::number(s.scores(0, 0), 'g', 9)));
    QVERIFY(std::abs(s.scores(0, 1) - meanInverse(1, 9)) <= 1e-6);
    // the full context too (the last query's off-target keys differ slightly; still saturated)
    std::vector<int> full(kCtx, 4);
    QVERIFY(std::abs(scoreHeads(runForward(*model, full), HeadDetector::PreviousToken).scores(0, 0) - 1.0) <= 1e-6);
}

void TestHeadDetectors::firstToken() {
    auto model = previousTokenModel();
    const ActivationCache cache = runForward(*model, std::vector<int>{19, 3, 7, 1, 1, 8});
    const HeadScores s = scoreHeads(cache, HeadDetector::FirstToken);
    // previous-token head: only query 1 looks at key 0
    QVERIFY(std::abs(s.scores(0, 0) - 1.0 / 5) <= 1e-6);
    QVERIFY(std::abs(s.scores(0, 1) - meanInverse(1, 5)) <= 1e-6);
}

void TestHeadDetectors::duplicateToken() {
    auto model = previousTokenModel();
    const std::vector<int> ids{19, 3, 7, 3, 3, 8, 7, 2};
    const ActivationCache cache = runForward(*model, ids);
    const HeadScores s = scoreHeads(cache, HeadDetector::DuplicateToken);
    // queries with an earlier equal token: 3 (3 at 1), 4 (3 at 1, 3), 6 (7 at 2)
    QCOMPARE(s.nQueries, 3);
    const double uniform = (1.0 / 4 + 2.0 / 5 + 1.0 / 7) / 3;
    QVERIFY(std::abs(s.scores(0, 1) - uniform) <= 1e-6);
    // previous-token head: only query 4 (previous token 3 == its own) hits a duplicate
    QVERIFY(std::abs(s.scores(0, 0) - 1.0 / 3) <= 1e-6);
    // a run of equal tokens: the previous token is always a duplicate
    const HeadScores same = scoreHeads(runForward(*model, std::vector<int>(8, 5)), HeadDetector::DuplicateToken);
    QVERIFY(std::abs(same.scores(0, 0) - 1.0) <= 1e-6);
    QVERIFY(std::abs(same.scores(0, 1) - (1.0 - meanInverse(1, 7))) <= 1e-6); // all but the diagonal
}

void TestHeadDetectors::noQueriesGivesNaN() {
    auto model = previousTokenModel();
    const HeadScores s = scoreHeads(runForward(*model, std::vector<int>{1, 2, 3}), HeadDetector::DuplicateToken);
    QCOMPARE(s.nQueries, 0);
    QVERIFY(std::isnan(s.scores(0, 0)));
}

void TestHeadDetectors::repeatedSequence() {
    ModelConfig cfg = gpt2Config(1, 1, 4, 64, 512);
    cfg.bos_token_id = cfg.eos_token_id = 511;
    const RepeatedSequence a = repeatedRandomSequence(cfg);
    QCOMPARE(a.repeatLength, 31); // min(50, (64 − 1) / 2)
    QCOMPARE(a.offset, 1);
    QCOMPARE(int(a.tokens.size()), 63);
    QCOMPARE(a.tokens[0], 511);
    std::set<int> distinct;
    for (int i = 1; i <= 31; ++i) {
        QCOMPARE(a.tokens[size_t(i)], a.tokens[size_t(i + 31)]);
        QVERIFY(a.tokens[size_t(i)] >= 0 && a.tokens[size_t(i)] < 511);
        distinct.insert(a.tokens[size_t(i)]);
    }
    QCOMPARE(int(distinct.size()), 31);
    QVERIFY(repeatedRandomSequence(cfg).tokens == a.tokens);              // fixed seed
    QVERIFY(repeatedRandomSequence(cfg, -1, 0, 1).tokens != a.tokens);    // another seed
    cfg.n_ctx = 1024;
    QCOMPARE(repeatedRandomSequence(cfg).repeatLength, 50);
    QCOMPARE(repeatedRandomSequence(cfg, 7, 3).tokens.front(), 7);        // explicit BOS
    cfg.bos_token_id = -1;
    QCOMPARE(repeatedRandomSequence(cfg, -1, 4).offset, 0);
    QCOMPARE(int(repeatedRandomSequence(cfg, -1, 4).tokens.size()), 8);
    try {
        repeatedRandomSequence(cfg, -1, 600);
        QFAIL("no error for a sequence longer than n_ctx");
    } catch (const InputError& e) {
        QCOMPARE(e.message(), QString("A repeated sequence of 2 × 600 tokens does not fit the model's context of 1024 tokens."));
    }
}

void TestHeadDetectors::induction() {
    auto model = previousTokenModel();
    // T = min(50, (12 − 1) / 2) = 5: [BOS] + R + R is 11 tokens; second-half queries 6..10 look at i − 4
    const HeadScores s = inductionScores(*model);
    QCOMPARE(s.nQueries, 5);
    QVERIFY(std::abs(s.scores(0, 1) - meanInverse(6, 10)) <= 1e-6);
    QVERIFY(std::abs(s.scores(0, 0)) <= 1e-6); // previous-token head never looks 4 back
    // scoring a cache of the sequence by hand gives the same numbers
    const RepeatedSequence seq = repeatedRandomSequence(model->config());
    QCOMPARE(seq.tokens.front(), 19);
    const ActivationCache cache = runForward(*model, seq.tokens);
    double byHand = 0;
    for (int i = 6; i <= 10; ++i) byHand += cache.layers[0].pattern[1](i, i - 5 + 1) / 5.0;
    QVERIFY(std::abs(scoreHeads(cache, HeadDetector::Induction).scores(0, 1) - byHand) <= 1e-6);
    // with T = 2 the token after the previous occurrence is the previous token: the previous-token
    // head is a perfect induction head on [BOS] a b a b
    const RepeatedSequence two = repeatedRandomSequence(model->config(), -1, 2);
    const HeadScores s2 = scoreHeads(runForward(*model, two.tokens), HeadDetector::Induction);
    QCOMPARE(s2.nQueries, 2);
    QVERIFY(std::abs(s2.scores(0, 0) - 1.0) <= 1e-6);
    QVERIFY(std::abs(s2.scores(0, 1) - (1.0 / 4 + 1.0 / 5) / 2) <= 1e-6);
}

void TestHeadDetectors::formulas() {
    QCOMPARE(headDetectorName(HeadDetector::Induction), QString("induction"));
    QVERIFY(headDetectorFormula(HeadDetector::PreviousToken).contains("pattern[i][i−1]"));
    QVERIFY(headDetectorFormula(HeadDetector::Induction).contains("pattern[i][i−T+1]"));
    QVERIFY(headDetectorFormula(HeadDetector::FirstToken).contains("pattern[i][0]"));
    QVERIFY(headDetectorFormula(HeadDetector::DuplicateToken).contains("token[j] = token[i]"));
}

void TestHeadDetectors::tinyGpt2MatchesReferencePatterns() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    // scores from picoGPT's recorded patterns (float64) for L0H0 and L1H3, computed here by hand
    auto model = loadModel(testdata("tiny-gpt2"));
    const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
    const QJsonObject f32 = ref["variants"].toObject()["float32"].toObject();
    const std::vector<int> ids = intsFromJson(ref["token_ids"].toArray());
    const ActivationCache cache = runForward(*model, ids);
    const HeadScores prev = scoreHeads(cache, HeadDetector::PreviousToken);
    const HeadScores first = scoreHeads(cache, HeadDetector::FirstToken);
    const HeadScores dup = scoreHeads(cache, HeadDetector::DuplicateToken);
    const int S = int(ids.size());
    for (auto [l, h, key] : {std::tuple{0, 0, "attention_layer0_head0"}, std::tuple{1, 3, "attention_layer1_head3"}}) {
        const Matrix pat = matrixFromJson(f32[key].toArray());
        double p = 0, f = 0, d = 0;
        int nd = 0;
        for (int i = 1; i < S; ++i) {
            p += pat(i, i - 1) / (S - 1);
            f += pat(i, 0) / (S - 1);
            double mass = 0;
            bool any = false;
            for (int j = 0; j < i; ++j)
                if (ids[size_t(j)] == ids[size_t(i)]) mass += pat(i, j), any = true;
            if (any) d += mass, ++nd;
        }
        QVERIFY(std::abs(prev.scores(l, h) - p) <= 1e-5);
        QVERIFY(std::abs(first.scores(l, h) - f) <= 1e-5);
        QCOMPARE(dup.nQueries, nd);
        QVERIFY(std::abs(dup.scores(l, h) - d / nd) <= 1e-5);
    }
    QCOMPARE(dup.nQueries, 2); // token 265 occurs at 3, 5 and 9: queries 5 and 9
    // induction on tiny-gpt2: T = 31 second-half queries, every score a probability mass
    const HeadScores ind = inductionScores(*model);
    QCOMPARE(ind.nQueries, 31);
    const RepeatedSequence seq = repeatedRandomSequence(model->config(), 511);
    const ActivationCache rc = runForward(*model, seq.tokens);
    for (int l = 0; l < 2; ++l)
        for (int h = 0; h < 4; ++h) {
            double byHand = 0;
            for (int i = 32; i <= 62; ++i) byHand += rc.layers[size_t(l)].pattern[size_t(h)](i, i - 31 + 1) / 31.0;
            QVERIFY(std::abs(ind.scores(l, h) - byHand) <= 1e-5);
        }
}

QTEST_GUILESS_MAIN(TestHeadDetectors)
#include "tst_head_detectors.moc"
