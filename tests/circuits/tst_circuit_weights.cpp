// "Why does this head attend there" (attention_score_split.h) and head composition (composition_scores.h):
// the score split sums to the cached attn_scores on GPT-2 (LayerNorm, learned positions) and Llama (RMSNorm,
// rotary, grouped-query attention) for every head and many position pairs, and a masked key is refused;
// composition scores by the d_head-sized factor trick against the d_model × d_model products for every kind,
// the random baseline against 1/√d_model, the per-model cache, the virtual OV circuit against the full
// d_vocab² matrix, and the demo model's K-composition from the previous-token head L0H0 into the induction
// heads L1H1–L1H3 above the random baseline.

#include "model/analysis/circuits/attention_score_split.h"
#include "model/analysis/circuits/composition_scores.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/test_paths.h"

#include <QtTest>
#include <random>

using namespace attnscope;
using namespace attnscope::test;

namespace {

std::shared_ptr<const Model> stories() {
    return loadModel(testdata("stories260K/stories260K.bin"), {}, LoadOptions{testdata("stories260K/tok512.bin")});
}

ActivationCache runOn(const Model& model, int S, unsigned seed) {
    std::mt19937 gen(seed);
    std::vector<int> t(static_cast<size_t>(S));
    for (int& x : t) x = int(gen() % unsigned(model.config().d_vocab));
    return runForward(model, t);
}

void checkSplitSums(const Model& model) {
    const ModelConfig& cfg = model.config();
    const ActivationCache cache = runOn(model, 9, 5);
    int checked = 0;
    for (int l = 0; l < cfg.n_layers; ++l)
        for (int h = 0; h < cfg.n_heads; ++h)
            for (auto [i, j] : {std::pair{8, 0}, std::pair{8, 7}, std::pair{5, 5}, std::pair{3, 1}}) {
                const AttentionScoreSplit s = splitAttentionScore(model, cache, l, h, i, j);
                QCOMPARE(int(s.terms.rows()), int(s.queryComponents.size()));
                QCOMPARE(int(s.terms.cols()), int(s.keyComponents.size()));
                QCOMPARE(s.score, double(cache.layer(l)->attn_scores[size_t(h)](i, j)));
                QVERIFY2(s.checkError < 1e-4 * std::max(1.0, std::abs(s.score)),
                         qPrintable(QStringLiteral("L%1H%2 %3→%4: Σ %5, cached %6").arg(l).arg(h).arg(i).arg(j).arg(s.sum).arg(s.score)));
                ++checked;
            }
    QCOMPARE(checked, cfg.n_layers * cfg.n_heads * 4);
}

} // namespace

class TestCircuitWeights : public QObject {
    Q_OBJECT
private slots:
    void scoreSplitSumsToTheCachedScore() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        checkSplitSums(*loadModel(testdata("tiny-gpt2")));
        checkSplitSums(*stories());
        checkSplitSums(*loadModel(demoDir()));
    }

    void scoreSplitComponentsAndMask() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto model = loadModel(testdata("tiny-gpt2"));
        const ActivationCache cache = runOn(*model, 6, 6);
        const AttentionScoreSplit s = splitAttentionScore(*model, cache, 1, 2, 5, 3);
        // embed, pos_embed, 4 heads + b_O + MLP of layer 0, bias
        QCOMPARE(int(s.queryComponents.size()), 2 + 4 + 1 + 1 + 1);
        QCOMPARE(s.queryComponents.front().name, QStringLiteral("embed"));
        QCOMPARE(s.keyComponents[2].name, QStringLiteral("L0H0"));
        QCOMPARE(s.queryComponents.back().name, QStringLiteral("bias"));
        QVERIFY(std::abs(s.pattern - double(cache.layer(1)->pattern[2](5, 3))) < 1e-12);
        // a layer-0 score has only the embeddings and the bias on each side
        QCOMPARE(int(splitAttentionScore(*model, cache, 0, 0, 4, 2).keyComponents.size()), 3);
        for (auto [i, j] : {std::pair{2, 3}, std::pair{6, 0}}) {
            bool threw = false;
            try {
                splitAttentionScore(*model, cache, 1, 0, i, j);
            } catch (const InputError& e) {
                threw = !e.message().isEmpty();
            }
            QVERIFY(threw);
        }
    }

    void factorTrickEqualsTheFullProducts() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        for (const auto& model : {loadModel(testdata("tiny-gpt2")), stories()}) {
            const ModelConfig& cfg = model->config();
            for (CompositionKind kind : {CompositionKind::Q, CompositionKind::K, CompositionKind::V}) {
                const auto s = compositionScores(*model, kind);
                QCOMPARE(int(s->scores.rows()), cfg.n_layers * cfg.n_heads);
                for (int la = 0; la < cfg.n_layers; ++la)
                    for (int lb = 0; lb < cfg.n_layers; ++lb)
                        for (int ha : {0, cfg.n_heads - 1})
                            for (int hb = 0; hb < cfg.n_heads; ++hb) {
                                const float got = s->score(la, ha, lb, hb);
                                if (la >= lb) {
                                    QVERIFY(std::isnan(got));
                                    continue;
                                }
                                const double want = compositionScoreDirect(*model, kind, la, ha, lb, hb);
                                QVERIFY2(std::abs(got - want) < 1e-5 * std::max(1.0, want),
                                         qPrintable(QStringLiteral("%1 L%2H%3→L%4H%5: %6 vs %7").arg(compositionKindName(kind))
                                                        .arg(la).arg(ha).arg(lb).arg(hb).arg(got).arg(want)));
                            }
                QCOMPARE(compositionScores(*model, kind).get(), s.get()); // cached per model
            }
        }
    }

    void randomBaseline() {
        const CompositionBaseline b = randomCompositionBaseline(256, 32, 64);
        QVERIFY2(std::abs(b.mean - 1.0 / std::sqrt(256.0)) < 0.15 / std::sqrt(256.0), qPrintable(QString::number(b.mean)));
        QVERIFY(b.sd > 0 && b.sd < b.mean);
        QCOMPARE(randomCompositionBaseline(256, 32, 64).mean, b.mean); // fixed seed
    }

    void virtualOvCircuitInTokenSpace() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto model = loadModel(testdata("tiny-gpt2"));
        const ModelConfig& cfg = model->config();
        const std::vector<ScoredPair> top = virtualOvCircuit(*model, 0, 1, 1, 2, 20);
        const Matrix E = model->globals().W_E.toMatrix();
        const int L = cfg.d_head;
        const Matrix ova = model->layer(0).W_V_head(1, L).toMatrix() * model->layer(0).W_O_head(1, L).toMatrix();
        const Matrix ovb = model->layer(1).W_V_head(2, L).toMatrix() * model->layer(1).W_O_head(2, L).toMatrix();
        const Matrix full = E * ova * ovb * E.transpose();
        std::vector<float> all(full.data(), full.data() + full.size());
        std::nth_element(all.begin(), all.begin() + 19, all.end(), std::greater<float>());
        QCOMPARE(int(top.size()), 20);
        for (const ScoredPair& p : top) {
            QVERIFY(std::abs(p.score - full(p.row, p.col)) < 1e-4f * std::max(1.0f, std::abs(p.score)));
            QVERIFY(p.score >= all[19] - 1e-4f);
        }
        bool threw = false;
        try {
            virtualOvCircuit(*model, 1, 0, 1, 2, 5);
        } catch (const InputError&) {
            threw = true;
        }
        QVERIFY(threw);
    }

    void demoKCompositionIntoInductionHeads() {
        const auto model = loadModel(demoDir());
        const auto k = compositionScores(*model, CompositionKind::K);
        const double bar = k->baseline.mean + 3 * k->baseline.sd;
        QString text = QStringLiteral("baseline %1 ± %2;").arg(k->baseline.mean).arg(k->baseline.sd);
        for (int h = 0; h < 4; ++h) text += QStringLiteral(" L0H0→L1H%1 %2").arg(h).arg(k->score(0, 0, 1, h));
        qInfo().noquote() << text;
        for (int h : {1, 2, 3}) QVERIFY2(k->score(0, 0, 1, h) > bar, qPrintable(text));
    }
};

QTEST_GUILESS_MAIN(TestCircuitWeights)
#include "tst_circuit_weights.moc"
