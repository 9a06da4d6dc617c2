// Fine-tuning directions (issue 15; Dar et al. 2022, "Interpreting fine-tuning"): heads and neurons ranked by
// ‖Δθ‖/‖θ‖ between two checkpoints of one architecture.
//  - a hand-made difference (a little noise everywhere, larger changes to one head's W_V, one neuron's value and
//    another neuron's key) puts exactly the touched components on top, with the relative change of an
//    independent float64 computation over the component's parameters;
//  - identical checkpoints change nothing; architectures or tensors that differ are refused by name;
//  - a component's Δ read in embedding space (what it reads through W_E, what it writes through the untied
//    model's W_U) matches a brute-force float64 product;
//  - the demo against its fine-tuned copy: every component moved a little, and the JSON has the documented keys.

#include "model/analysis/embedding_space/embedding_projection.h"
#include "model/analysis/comparison/finetune_directions.h"
#include "model/analysis/comparison/finetune_json.h"
#include "model/analysis/comparison/model_comparison.h"
#include "model/formats/model_loader.h"
#include "support/error_capture.h"
#include "support/handmade_model.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QtTest>
#include <random>

using namespace attnscope;
using namespace attnscope::test;

namespace {

ModelConfig smallConfig() {
    ModelConfig c = gpt2Config(3, 4, 32, 16, 60);
    c.d_mlp = 64;
    return c;
}

/// `w` with N(0, σ) noise added to every matrix (the "fine-tuning" everywhere).
HandmadeWeights jitter(HandmadeWeights w, float sigma, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n(0.0f, sigma);
    auto add = [&](Matrix& m) {
        for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] += n(rng);
    };
    add(w.W_E), add(w.W_pos), add(w.W_U_T);
    for (HandmadeLayer& x : w.layers)
        for (Matrix* m : {&x.W_Q, &x.W_K, &x.W_V, &x.W_O, &x.W_in, &x.W_out, &x.b_in, &x.ln1_w}) add(*m);
    return w;
}

/// ‖Δ‖/‖θ‖ in float64 over a list of (before, after) blocks.
double relativeOf(const std::vector<std::pair<Matrix, Matrix>>& blocks) {
    double d = 0, n = 0;
    for (const auto& [b, a] : blocks) {
        d += (a.cast<double>() - b.cast<double>()).squaredNorm();
        n += b.cast<double>().squaredNorm();
    }
    return std::sqrt(d / n);
}

} // namespace

class TestFinetuneDirections : public QObject {
    Q_OBJECT
private slots:
    void handTouchedComponentsRankFirst();
    void identicalCheckpointsChangeNothing();
    void refusesOtherArchitectures();
    void projectionReadsWithEAndWritesWithU();
    void demoAgainstItsFineTunedCopy();
};

void TestFinetuneDirections::handTouchedComponentsRankFirst() {
    const HandmadeWeights before = randomWeights(smallConfig(), 3, 0.3f);
    HandmadeWeights after = jitter(before, 1e-4f, 4);
    const int L = 8; // d_head
    after.layers[1].W_V.middleCols(2 * L, L).array() += 0.05f; // head L1H2's values
    after.layers[2].W_out.row(7) *= 1.3f;                       // neuron L2N7's value vector
    after.layers[0].W_in.col(41) *= 0.8f;                       // neuron L0N41's key
    const auto a = makeModel(before), b = makeModel(after);
    const FinetuneRanking r = rankFinetuneChanges(*a, *b);
    QCOMPARE(int(r.heads.size()), 3 * 4);
    QCOMPARE(int(r.neurons.size()), 3 * 64);
    QCOMPARE(r.heads[0].name(), QString("L1H2"));
    QVERIFY(r.heads[0].relative > 20 * r.heads[1].relative);
    QStringList top{r.neurons[0].name(), r.neurons[1].name()};
    top.sort();
    QCOMPARE(top, QStringList({"L0N41", "L2N7"}));
    QVERIFY(r.neurons[1].relative > 20 * r.neurons[2].relative);
    QCOMPARE(r.components()[0].name(), r.neurons[0].relative > r.heads[0].relative ? r.neurons[0].name() : QString("L1H2"));
    // the numbers: float64 over the component's own parameters
    const HandmadeLayer &b1 = before.layers[1], &a1 = after.layers[1];
    const double head = relativeOf({{b1.W_Q.middleCols(16, L), a1.W_Q.middleCols(16, L)}, {b1.b_Q.middleCols(16, L), a1.b_Q.middleCols(16, L)},
                                    {b1.W_K.middleCols(16, L), a1.W_K.middleCols(16, L)}, {b1.b_K.middleCols(16, L), a1.b_K.middleCols(16, L)},
                                    {b1.W_V.middleCols(16, L), a1.W_V.middleCols(16, L)}, {b1.b_V.middleCols(16, L), a1.b_V.middleCols(16, L)},
                                    {b1.W_O.middleRows(16, L), a1.W_O.middleRows(16, L)}});
    QVERIFY2(std::abs(r.heads[0].relative - head) < 1e-9 * head, qPrintable(QString::number(r.heads[0].relative - head)));
    QVERIFY(r.heads[0].partDelta[2] > 10 * r.heads[0].partDelta[0]); // the V part carries it
    const HandmadeLayer &b2 = before.layers[2], &a2 = after.layers[2];
    const double neuron = relativeOf({{b2.W_in.col(7), a2.W_in.col(7)}, {b2.b_in.col(7), a2.b_in.col(7)}, {b2.W_out.row(7), a2.W_out.row(7)}});
    const auto n7 = std::find_if(r.neurons.begin(), r.neurons.end(), [](const ComponentChange& c) { return c.name() == "L2N7"; });
    QVERIFY(std::abs(n7->relative - neuron) < 1e-9 * neuron);
    QCOMPARE(r.neuronRelative(2, 7), float(n7->relative));
    QCOMPARE(r.headRelative(1, 2), float(r.heads[0].relative));
    // the tensors: L1.W_V changed most among the layer tensors
    const auto wv = std::find_if(r.tensors.begin(), r.tensors.end(), [](const TensorChange& t) { return t.name == "L1.W_V"; });
    QVERIFY(wv != r.tensors.end());
    for (const TensorChange& t : r.tensors)
        if (t.name != "L1.W_V" && t.layer >= 0 && t.name != "L2.W_out" && t.name != "L0.W_in") QVERIFY2(t.relative < wv->relative, qPrintable(t.name));
    QCOMPARE(r.tensors.front().name, QString("W_E"));
    QVERIFY(std::any_of(r.tensors.begin(), r.tensors.end(), [](const TensorChange& t) { return t.name == "W_U"; })); // untied
    // JSON: the ranking as documented, limited to --top
    const QJsonObject j = finetuneRankingToJson(r, "a", "b", 5);
    QCOMPARE(j["heads"].toArray().size(), 5);
    QCOMPARE(j["neurons"].toArray().size(), 5);
    QCOMPARE(j["heads"].toArray()[0].toObject()["head"].toInt(), 2);
    QCOMPARE(j["heads"].toArray()[0].toObject()["layer"].toInt(), 1);
    QVERIFY(j["heads"].toArray()[0].toObject()["parts"].toObject().contains("V"));
    QVERIFY(j["neurons"].toArray()[0].toObject()["parts"].toObject().contains("value"));
    QCOMPARE(j["tensors"].toArray().size(), int(r.tensors.size()));
}

void TestFinetuneDirections::identicalCheckpointsChangeNothing() {
    const HandmadeWeights w = randomWeights(smallConfig(), 5);
    const auto a = makeModel(w), b = makeModel(w);
    const FinetuneRanking r = rankFinetuneChanges(*a, *b);
    for (const ComponentChange& c : r.components()) {
        QCOMPARE(c.delta, 0.0);
        QCOMPARE(c.relative, 0.0);
    }
    for (const TensorChange& t : r.tensors) QCOMPARE(t.relative, 0.0);
    // a zero parameter that changed is an infinite relative change, ranked first: head L0H1 all zero, then one entry set
    HandmadeWeights zero = w;
    HandmadeLayer& x = zero.layers[0];
    for (Matrix* m : {&x.W_Q, &x.W_K, &x.W_V, &x.b_Q, &x.b_K, &x.b_V}) m->middleCols(8, 8).setZero();
    x.W_O.middleRows(8, 8).setZero();
    HandmadeWeights touched = zero;
    touched.layers[0].W_O(9, 3) = 1e-3f;
    const FinetuneRanking inf = rankFinetuneChanges(*makeModel(zero), *makeModel(touched));
    QCOMPARE(inf.heads[0].name(), QString("L0H1"));
    QVERIFY(std::isinf(inf.heads[0].relative));
    QCOMPARE(inf.heads[1].relative, 0.0);
    QVERIFY(finetuneRankingToJson(inf, "a", "b")["heads"].toArray()[0].toObject()["relative"].isNull());
}

void TestFinetuneDirections::refusesOtherArchitectures() {
    const auto a = makeModel(randomWeights(smallConfig(), 1));
    ModelConfig wider = smallConfig();
    wider.d_mlp = 72;
    const auto b = makeModel(randomWeights(wider, 2));
    QCOMPARE(inputErrorOf([&] { rankFinetuneChanges(*a, *b); }), QString("The two models differ in d_mlp (64 vs 72)."));
    HandmadeWeights nb = randomWeights(smallConfig(), 3);
    nb.layers[1].b_Q.resize(0, 0); // absent bias
    const auto c = makeModel(nb);
    QCOMPARE(inputErrorOf([&] { rankFinetuneChanges(*a, *c); }), QString("L1.b_Q is present in only one of the two checkpoints."));
}

void TestFinetuneDirections::projectionReadsWithEAndWritesWithU() {
    const HandmadeWeights before = randomWeights(smallConfig(), 7, 0.3f);
    HandmadeWeights after = before;
    after.layers[2].W_out.row(7).array() += 0.2f * Eigen::ArrayXf::LinSpaced(32, -1, 1).transpose();
    after.layers[1].W_V.middleCols(16, 8).array() += 0.05f;
    const auto a = makeModel(before), b = makeModel(after);
    QVERIFY(!unembeddingTied(*a));
    const Eigen::VectorXd dv = (after.layers[2].W_out.row(7) - before.layers[2].W_out.row(7)).cast<double>().transpose();
    { // FF value: what the neuron writes, through the unembedding (W_U_T [d_vocab, d_model] here: the model is untied)
        const NeuronDiff d = diffNeuron(*a, *b, NeuronVectorKind::FFValue, 2, 7, 5);
        const Eigen::VectorXd s = before.W_U_T.cast<double>() * dv;
        Eigen::Index best, worst;
        s.maxCoeff(&best);
        s.minCoeff(&worst);
        QCOMPARE(d.top[0].id, int(best));
        QVERIFY(std::abs(d.top[0].score - s(best)) < 1e-5);
        QCOMPARE(d.bottom[0].id, int(worst));
        QVERIFY(std::abs(d.bottom[0].score - s(worst)) < 1e-5);
        // through W_E the ranking would differ: the check above tells the two matrices apart
        Eigen::Index bestE;
        (before.W_E.cast<double>() * dv).maxCoeff(&bestE);
        QVERIFY(bestE != best);
    }
    // OV: source tokens through W_E, output tokens through W_U: E·ΔW_OV·W_U, its best cell by brute force
    const PairDiff p = diffPairs(*a, *b, PairProjectionKind::OV, 1, 2, 3);
    const Eigen::MatrixXd dW = (after.layers[1].W_V.middleCols(16, 8) * after.layers[1].W_O.middleRows(16, 8) -
                                before.layers[1].W_V.middleCols(16, 8) * before.layers[1].W_O.middleRows(16, 8)).cast<double>();
    const Eigen::MatrixXd S = before.W_E.cast<double>() * dW * before.W_U_T.cast<double>().transpose();
    Eigen::Index r, c;
    S.maxCoeff(&r, &c);
    QCOMPARE(p.top[0].row, int(r));
    QCOMPARE(p.top[0].col, int(c));
    QVERIFY(std::abs(p.top[0].score - S(r, c)) < 1e-4);
    // an FF key reads the residual: through W_E
    HandmadeWeights keyed = before;
    keyed.layers[0].W_in.col(5).array() += 0.3f * Eigen::ArrayXf::LinSpaced(32, 1, -1);
    const NeuronDiff k = diffNeuron(*a, *makeModel(keyed), NeuronVectorKind::FFKey, 0, 5, 3);
    const Eigen::VectorXd sk = before.W_E.cast<double>() * (keyed.layers[0].W_in.col(5) - before.layers[0].W_in.col(5)).cast<double>();
    Eigen::Index bestK;
    sk.maxCoeff(&bestK);
    QCOMPARE(k.top[0].id, int(bestK));
    QVERIFY(std::abs(k.top[0].score - sk(bestK)) < 1e-5);
}

void TestFinetuneDirections::demoAgainstItsFineTunedCopy() {
    const auto demo = loadModel(demoDir()), variant = loadModel(demoDir() + "/../demo-variant");
    QVERIFY(unembeddingTied(*demo));
    const FinetuneRanking r = rankFinetuneChanges(*demo, *variant);
    QCOMPARE(int(r.heads.size()), 8);
    QCOMPARE(int(r.neurons.size()), 2 * 512);
    for (const ComponentChange& c : r.components()) QVERIFY(c.relative > 0 && c.relative < 0.5);
    QVERIFY(std::none_of(r.tensors.begin(), r.tensors.end(), [](const TensorChange& t) { return t.name == "W_U"; })); // tied
    qInfo("demo → demo-variant: most changed head %s (%.4f), least %s (%.4f); neuron %s (%.4f); W_E %.4f",
          qPrintable(r.heads.front().name()), r.heads.front().relative, qPrintable(r.heads.back().name()), r.heads.back().relative,
          qPrintable(r.neurons.front().name()), r.neurons.front().relative, r.tensors.front().relative);
}

QTEST_GUILESS_MAIN(TestFinetuneDirections)
#include "tst_finetune_directions.moc"
