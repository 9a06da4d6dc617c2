// Direct logit attribution: Σ component DLA + bias term == the model's logit (difference); one
// component's DLA recomputed here with explicit loops from the raw cache and weights.

#include "model/analysis/residual/direct_logit_attribution.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/analysis/residual/residual_decomposition.h"
#include "support/handmade_model.h"
#include "support/hf_llama_folder.h"
#include "support/llama_checkpoint.h"
#include "support/made_tokenizer.h"
#include "support/reference_llama_forward.h"
#include "support/stories_reference.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

/// DLA of head h of layer l at position p for token t by hand: result = z_h·W_O^h (loops), centre,
/// divide by the LayerNorm σ of resid_post (loops, biased variance + eps), × ln_final.w, · W_U[:, t].
double dlaOfHeadByHand(const Model& model, const ActivationCache& c, int l, int h, int p, int t) {
    const ModelConfig& cfg = model.config();
    const int D = cfg.d_model, L = cfg.d_head;
    const auto W_O = model.layer(l).W_O.view();
    std::vector<double> r(size_t(D), 0.0);
    for (int d = 0; d < D; ++d)
        for (int k = 0; k < L; ++k) r[size_t(d)] += double(c.layers[size_t(l)].z(p, h * L + k)) * W_O(h * L + k, d);
    double mean = 0;
    for (double v : r) mean += v / D;
    const Matrix& x = c.layers[size_t(cfg.n_layers - 1)].resid_post;
    double mu = 0, var = 0;
    for (int d = 0; d < D; ++d) mu += double(x(p, d)) / D;
    for (int d = 0; d < D; ++d) var += (x(p, d) - mu) * (x(p, d) - mu) / D;
    const double sigma = std::sqrt(var + cfg.norm_eps);
    const auto w = model.globals().ln_final_w.view();
    const auto W_U_T = model.globals().W_U_T.view();
    double out = 0;
    for (int d = 0; d < D; ++d) out += (r[size_t(d)] - mean) / sigma * w(0, d) * W_U_T(t, d);
    return out;
}

const DlaComponent& named(const DirectLogitAttribution& dla, const QString& name) {
    for (const DlaComponent& c : dla.components)
        if (c.name == name) return c;
    qFatal("no component %s", qPrintable(name));
}

void checkSum(const DirectLogitAttribution& dla, double expectedLogit) {
    QVERIFY2(std::abs(dla.total + dla.biasTerm - dla.logit) <= 1e-4,
             qPrintable(QString("Σ DLA %1 + bias %2 != logit %3").arg(dla.total).arg(dla.biasTerm).arg(dla.logit)));
    QVERIFY(dla.checkError <= 1e-4);
    QVERIFY2(std::abs(dla.logit - expectedLogit) <= 1e-4, qPrintable(QString("logit %1 vs %2").arg(dla.logit).arg(expectedLogit)));
    QCOMPARE(dla.cumulative.size(), dla.components.size());
    QVERIFY(std::abs(dla.cumulative.back() - dla.logit) <= 1e-4);
}

} // namespace

class TestDla : public QObject {
    Q_OBJECT
private slots:
    void sumEqualsLogitMinusBias();
    void logitDifference();
    void oneComponentByHand();
    void cumulativeAndTable();
    void lastPositionOnlyCache();
    void json();
    void rejectsBadTokens();
    void tinyGpt2MatchesPicoGptLogits();
    void gemma2ThroughPostNorms();
};

void TestDla::sumEqualsLogitMinusBias() {
    auto model = makeModel(randomWeights(gpt2Config(3, 4, 16, 12, 50), 21));
    const std::vector<int> ids{5, 17, 3, 3, 44, 12, 9, 0};
    const ActivationCache cache = runForward(*model, ids);
    for (int p : {7, 3, 0})
        for (int t : {0, 12, 49}) {
            const DirectLogitAttribution dla = directLogitAttribution(*model, cache, {p, t, -1});
            QCOMPARE(dla.position, p);
            QCOMPARE(dla.components.size(), size_t(2 + 3 * 6));
            checkSum(dla, double(cache.logits(p, t)));
            // bias term by hand: ln_final.b · W_U[:, t] + b_U[t]
            double bias = model->globals().b_U.view()(0, t);
            for (int d = 0; d < 16; ++d)
                bias += double(model->globals().ln_final_b.view()(0, d)) * model->globals().W_U_T.view()(t, d);
            QVERIFY(std::abs(dla.biasTerm - bias) <= 1e-5);
        }
    // default position is the last one
    QCOMPARE(directLogitAttribution(*model, cache, {-1, 4, -1}).position, 7);
}

void TestDla::logitDifference() {
    auto model = makeModel(randomWeights(gpt2Config(2, 4, 16, 12, 50), 22));
    const ActivationCache cache = runForward(*model, std::vector<int>{1, 2, 3, 4, 5});
    const DirectLogitAttribution diff = directLogitAttribution(*model, cache, {4, 10, 20});
    checkSum(diff, double(cache.logits(4, 10)) - cache.logits(4, 20));
    QCOMPARE(diff.counterToken, 20);
    // linear in the direction: DLA(t - t') = DLA(t) - DLA(t') per component
    const DirectLogitAttribution a = directLogitAttribution(*model, cache, {4, 10, -1});
    const DirectLogitAttribution b = directLogitAttribution(*model, cache, {4, 20, -1});
    for (size_t i = 0; i < diff.components.size(); ++i)
        QVERIFY(std::abs(diff.components[i].value - (a.components[i].value - b.components[i].value)) <= 1e-4);
}

void TestDla::oneComponentByHand() {
    auto model = makeModel(randomWeights(gpt2Config(2, 4, 16, 12, 50), 23));
    const ActivationCache cache = runForward(*model, std::vector<int>{7, 8, 9, 10, 11, 12});
    for (auto [l, h, p, t] : {std::tuple{1, 2, 5, 33}, std::tuple{0, 3, 2, 7}}) {
        const double byHand = dlaOfHeadByHand(*model, cache, l, h, p, t);
        const double value = named(directLogitAttribution(*model, cache, {p, t, -1}), QString("L%1H%2").arg(l).arg(h)).value;
        QVERIFY2(std::abs(value - byHand) <= 1e-5 + 1e-5 * std::abs(byHand),
                 qPrintable(QString("DLA %1 vs by hand %2").arg(value).arg(byHand)));
        QVERIFY(std::abs(byHand) > 1e-3); // a real, non-trivial contribution
    }
}

void TestDla::cumulativeAndTable() {
    auto model = makeModel(randomWeights(gpt2Config(2, 3, 12, 8, 30), 24));
    const ActivationCache cache = runForward(*model, std::vector<int>{1, 2, 3});
    const DirectLogitAttribution dla = directLogitAttribution(*model, cache, {2, 5, -1});
    QVERIFY(std::abs(dla.cumulative[0] - (dla.biasTerm + named(dla, "embed").value)) <= 1e-6);
    QVERIFY(std::abs(dla.cumulative[1] - dla.cumulative[0] - named(dla, "pos_embed").value) <= 1e-6);
    const Matrix t = dlaTable(model->config(), dla);
    QCOMPARE(t.rows(), Eigen::Index(2));
    QCOMPARE(t.cols(), Eigen::Index(4));
    QCOMPARE(double(t(1, 1)), double(float(named(dla, "L1H1").value)));
    QCOMPARE(double(t(0, 3)), double(float(named(dla, "L0MLP").value)));
}

void TestDla::lastPositionOnlyCache() {
    auto model = makeModel(randomWeights(gpt2Config(2, 2, 8, 8, 20), 25));
    const std::vector<int> ids{3, 1, 4, 1, 5};
    ForwardOptions opt;
    opt.allLogits = false;
    opt.cacheHeadResults = false;
    const ActivationCache lean = runForward(*model, ids, opt);
    const ActivationCache full = runForward(*model, ids);
    // position 2 has no logits row in the lean cache: the logit is recomputed from ln_final
    checkSum(directLogitAttribution(*model, lean, {2, 9, 4}), double(full.logits(2, 9)) - full.logits(2, 4));
    checkSum(directLogitAttribution(*model, lean, {4, 9, -1}), double(full.logits(4, 9)));
}

void TestDla::json() {
    auto model = makeModel(randomWeights(gpt2Config(1, 2, 8, 8, 20), 26));
    const ActivationCache cache = runForward(*model, std::vector<int>{3, 1, 4});
    const DirectLogitAttribution dla = directLogitAttribution(*model, cache, {-1, 6, 2});
    const QJsonObject o = dlaToJson(dla, model->tokenizer());
    const QJsonArray comps = o["components"].toArray();
    QStringList names;
    for (const auto& c : comps) names << c.toObject()["name"].toString();
    QCOMPARE(names.join(' '), QString("embed pos_embed L0H0 L0H1 L0b_O L0MLP"));
    QCOMPARE(comps[2].toObject()["value"].toDouble(), dla.components[2].value);
    QCOMPARE(o["total"].toDouble(), dla.total);
    QCOMPARE(o["logit"].toDouble(), dla.logit);
    QVERIFY(std::abs(o["logit"].toDouble() - (double(cache.logits(2, 6)) - cache.logits(2, 2))) <= 1e-6);
    QCOMPARE(o["position"].toInt(), 2);
    // each token id with its text ("t6" is the handmade tokenizer's spelling of id 6)
    QCOMPARE(o["token_id"].toInt(), 6);
    QCOMPARE(o["token"].toString(), QString("t6"));
    QCOMPARE(o["counter_token_id"].toInt(), 2);
    QCOMPARE(o["counter_token"].toString(), QString("t2"));
    const QJsonObject single = dlaToJson(directLogitAttribution(*model, cache, {-1, 6, -1}), model->tokenizer());
    QVERIFY(!single.contains("counter_token") && !single.contains("counter_token_id"));
    QCOMPARE(single["token"].toString(), QString("t6"));
}

void TestDla::rejectsBadTokens() {
    auto model = makeModel(randomWeights(gpt2Config(1, 2, 8, 8, 20), 27));
    const ActivationCache cache = runForward(*model, std::vector<int>{3, 1, 4});
    for (auto [t, t2] : {std::pair{20, -1}, std::pair{3, 25}}) {
        try {
            directLogitAttribution(*model, cache, {-1, t, t2});
            QFAIL("no error for a token outside the vocabulary");
        } catch (const InputError& e) {
            QCOMPARE(e.message(), QString("Token id %1 is outside the vocabulary [0, 20).").arg(t2 >= 0 ? t2 : t));
        }
    }
}

void TestDla::tinyGpt2MatchesPicoGptLogits() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    auto model = loadModel(testdata("tiny-gpt2"));
    const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
    const QJsonObject f32 = ref["variants"].toObject()["float32"].toObject();
    const Matrix refLogits = matrixFromJson(f32["logits"].toArray());        // picoGPT, float64
    const std::vector<int> argmax = intsFromJson(f32["argmax_per_position"].toArray());
    const ActivationCache cache = runForward(*model, intsFromJson(ref["token_ids"].toArray()));
    for (int p : {17, 9}) {
        const int t = argmax[size_t(p)], other = (t + 100) % 512;
        const DirectLogitAttribution dla = directLogitAttribution(*model, cache, {p, t, -1});
        checkSum(dla, double(refLogits(p, t)));
        const DirectLogitAttribution diff = directLogitAttribution(*model, cache, {p, t, other});
        checkSum(diff, double(refLogits(p, t)) - refLogits(p, other));
        // tiny-gpt2 has no b_U (tied to wte): the bias term is ln_f.b · W_U[:, t] only
        double bias = 0;
        for (int d = 0; d < 64; ++d)
            bias += double(model->globals().ln_final_b.view()(0, d)) * model->globals().W_E.view()(t, d);
        QVERIFY(std::abs(dla.biasTerm - bias) <= 1e-5);
        const double byHand = dlaOfHeadByHand(*model, cache, 1, 3, p, t);
        QVERIFY(std::abs(named(dla, "L1H3").value - byHand) <= 1e-5 + 1e-5 * std::abs(byHand));
    }
}


/// Gemma 2 (a random HF folder with soft-caps that bind): the residual stream at every boundary is the sum of its
/// components through the post-norms (each head's z_h·W_O^h with its position's post-norm divisor, computed here by
/// loops from the checkpoint's (1 + w)); DLA sums to the logit before the final soft-cap, which equals the float64
/// reference's with the cap removed, and c·tanh(that / c) is the model's logit.
void TestDla::gemma2ThroughPostNorms() {
    QTemporaryDir dir;
    const LlamaCheckpoint ck = randomLlama(smallGemma2Spec(), 31);
    writeHfLlamaFolder(ck, dir.path(), Storage::F32, madeTokenizer512(), "tokenizer.bin");
    const auto model = loadModel(dir.path());
    const std::vector<int> tokens{1, 40, 300, 12, 77, 500, 9, 260};
    const ActivationCache cache = runForward(*model, tokens);
    const int p = 7, t = int(std::max_element(cache.logits.row(p).data(), cache.logits.row(p).data() + 512) - cache.logits.row(p).data());
    for (int b = 0; b < 2; ++b)
        for (ResidualBoundary::Point point : {ResidualBoundary::Point::Mid, ResidualBoundary::Point::Post})
            QVERIFY(decomposeResidual(*model, cache, {b, point}, p).maxAbsError < 1e-5);
    // head 2 of layer 1 by hand: z_h·W_O^h / σ ⊙ (1 + w_post), σ the RMS of Σ_h z_h·W_O^h
    const int D = 32, L = 8, l = 1, h = 2;
    const auto W_O = model->layer(l).W_O.toMatrix();
    std::vector<double> all(size_t(D), 0.0), head(size_t(D), 0.0);
    for (int d = 0; d < D; ++d)
        for (int k = 0; k < 4 * L; ++k) {
            const double term = double(cache.layers[size_t(l)].z(p, k)) * W_O(k, d);
            all[size_t(d)] += term;
            if (k / L == h) head[size_t(d)] += term;
        }
    double ss = 0;
    for (double v : all) ss += v * v / D;
    const double sigma = std::sqrt(ss + 1e-6);
    const ResidualDecomposition dec = decomposeResidual(*model, cache, {l, ResidualBoundary::Point::Mid}, p);
    for (const ResidualComponent& c : dec.components)
        if (c.name == "L1H2")
            for (int d = 0; d < D; ++d) {
                const double want = head[size_t(d)] / sigma * (1.0 + ck.layers[size_t(l)].post_attention_layernorm[size_t(d)]);
                QVERIFY2(std::abs(c.vec(d) - want) < 1e-5, qPrintable(QString("%1 vs %2").arg(c.vec(d)).arg(want)));
            }
    LlamaCheckpoint uncapped = ck;
    uncapped.spec.final_softcap = 0;
    const double preCap = referenceLlamaLogits(uncapped, tokens)(p, t);
    const DirectLogitAttribution dla = directLogitAttribution(*model, cache, {p, t, -1});
    checkSum(dla, preCap);
    QVERIFY(std::abs(6.0 * std::tanh(dla.logit / 6.0) - cache.logits(p, t)) < 1e-4);
    QVERIFY(std::abs(dla.logit - cache.logits(p, t)) > 1e-2); // the cap binds
}

QTEST_GUILESS_MAIN(TestDla)
#include "tst_dla.moc"
