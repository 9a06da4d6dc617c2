// Two models in one embedding space (Dar et al. 2022): layer × layer neuron similarity against an
// explicit projection of every neuron through its model's W_E (d_vocab-long vectors, double precision),
// identity on the diagonal when a model meets itself, and checkpoint differences (identical → flagged,
// F32 vs F16 → the real rounding difference, ranked as a dense brute force ranks it).

#include "model/analysis/comparison/model_comparison.h"
#include "model/formats/model_loader.h"
#include "support/brute_force_topk.h"
#include "support/handmade_model.h"
#include "support/test_paths.h"

#include <QtTest>
#include <cmath>

using namespace attnscope;
using namespace attnscope::test;

namespace {

MatrixD neurons(const Model& m, NeuronVectorKind kind, int l) {
    const LayerWeights& w = m.layer(l);
    return kind == NeuronVectorKind::FFKey ? MatrixD(w.W_in.toMatrix().cast<double>().transpose())
                                           : MatrixD(w.W_out.toMatrix().cast<double>());
}

/// mean_i max_j cos(x_i, y_j) over rows, with explicit loops.
double meanBestCosine(const MatrixD& X, const MatrixD& Y) {
    double sum = 0;
    for (int i = 0; i < X.rows(); ++i) {
        double best = -2;
        for (int j = 0; j < Y.rows(); ++j)
            best = std::max(best, X.row(i).dot(Y.row(j)) / (X.row(i).norm() * Y.row(j).norm()));
        sum += best;
    }
    return sum / double(X.rows());
}

/// Reference similarity: each neuron projected to a d_vocab-long vector with its own model's matrix: E·x
/// for FF keys (W_E), U_T·x for FF values (the unembedding; the random models here have it untied).
Eigen::MatrixXd referenceSimilarity(const Model& a, const Model& b, NeuronVectorKind kind, bool embedding) {
    const bool keys = kind == NeuronVectorKind::FFKey;
    const MatrixD Ea = (keys ? a.globals().W_E : a.globals().W_U_T).toMatrix().cast<double>();
    const MatrixD Eb = (keys ? b.globals().W_E : b.globals().W_U_T).toMatrix().cast<double>();
    Eigen::MatrixXd out(a.config().n_layers, b.config().n_layers);
    for (int l1 = 0; l1 < a.config().n_layers; ++l1)
        for (int l2 = 0; l2 < b.config().n_layers; ++l2) {
            MatrixD X = neurons(a, kind, l1), Y = neurons(b, kind, l2);
            if (embedding) X = X * Ea.transpose(), Y = Y * Eb.transpose(); // [d_mlp, d_vocab]
            out(l1, l2) = meanBestCosine(X, Y);
        }
    return out;
}

std::shared_ptr<const Model> randomModel(int d_model, int d_vocab, std::uint32_t seed, int n_layers = 3) {
    ModelConfig cfg = gpt2Config(n_layers, 2, d_model, 8, d_vocab);
    cfg.d_mlp = 24;
    return makeModel(randomWeights(cfg, seed));
}

template <typename F> void expectInputError(F&& f, const QString& text) {
    try {
        f();
        QFAIL("no InputError");
    } catch (const InputError& e) {
        QVERIFY2(e.message().contains(text), qPrintable(e.message()));
    }
}

} // namespace

class TestModelComparison : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void modelWithItselfIsIdentityOnTheDiagonal();
    void differentModelsMatchExplicitProjection();
    void differentWidthsHaveNoFeatureSimilarity();
    void rejectsDifferentVocabularies();
    void identicalCheckpointsAreReportedIdentical();
    void f16CheckpointDifferenceMatchesBruteForce();
    void headDifferenceMatchesBruteForce();
    void rejectsDifferentArchitectures();
    void llamaCheckpointsInTwoFormats();
    void cancels();

private:
    std::shared_ptr<const Model> tiny_, tinyAgain_, tinyF16_;
};

void TestModelComparison::initTestCase() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    tiny_ = loadModel(testdata("tiny-gpt2"));
    tinyAgain_ = loadModel(testdata("tiny-gpt2/model.safetensors"));
    tinyF16_ = loadModel(testdata("tiny-gpt2/model.float16.safetensors"));
}

void TestModelComparison::modelWithItselfIsIdentityOnTheDiagonal() {
    for (auto kind : {NeuronVectorKind::FFKey, NeuronVectorKind::FFValue}) {
        const LayerSimilarity s = compareLayers(*tiny_, *tinyAgain_, kind);
        QCOMPARE(s.kind, kind);
        QCOMPARE(s.embedding.rows(), Eigen::Index(2));
        QCOMPARE(s.embedding.cols(), Eigen::Index(2));
        for (int l = 0; l < 2; ++l) {
            QVERIFY2(std::abs(s.embedding(l, l) - 1.0f) <= 1e-5f, qPrintable(QString::number(s.embedding(l, l))));
            QVERIFY2(std::abs(s.feature(l, l) - 1.0f) <= 1e-5f, qPrintable(QString::number(s.feature(l, l))));
        }
        // different layers of a random model are far from aligned, and the exact values match the reference
        const Eigen::MatrixXd ref = referenceSimilarity(*tiny_, *tiny_, kind, true);
        QVERIFY(ref(0, 1) < 0.9);
        QVERIFY((s.embedding.cast<double>() - ref).cwiseAbs().maxCoeff() <= 1e-4);
    }
}

void TestModelComparison::differentModelsMatchExplicitProjection() {
    const auto a = randomModel(12, 30, 1), b = randomModel(12, 30, 2, 2);
    for (auto kind : {NeuronVectorKind::FFKey, NeuronVectorKind::FFValue}) {
        const LayerSimilarity s = compareLayers(*a, *b, kind);
        QCOMPARE(s.embedding.rows(), Eigen::Index(3));
        QCOMPARE(s.embedding.cols(), Eigen::Index(2));
        const double dE = (s.embedding.cast<double>() - referenceSimilarity(*a, *b, kind, true)).cwiseAbs().maxCoeff();
        const double dF = (s.feature.cast<double>() - referenceSimilarity(*a, *b, kind, false)).cwiseAbs().maxCoeff();
        QVERIFY2(dE <= 1e-5, qPrintable(QString::number(dE)));
        QVERIFY2(dF <= 1e-5, qPrintable(QString::number(dF)));
        QVERIFY(s.embedding.maxCoeff() < 0.999f); // unrelated random models are not aligned
    }
}

void TestModelComparison::differentWidthsHaveNoFeatureSimilarity() {
    const auto a = randomModel(12, 30, 1), b = randomModel(8, 30, 3);
    const LayerSimilarity s = compareLayers(*a, *b, NeuronVectorKind::FFValue);
    QVERIFY(s.feature.array().isNaN().all());
    const double d =
        (s.embedding.cast<double>() - referenceSimilarity(*a, *b, NeuronVectorKind::FFValue, true)).cwiseAbs().maxCoeff();
    QVERIFY2(d <= 1e-5, qPrintable(QString::number(d)));
}

void TestModelComparison::rejectsDifferentVocabularies() {
    const auto a = randomModel(12, 30, 1), b = randomModel(12, 31, 1);
    expectInputError([&] { compareLayers(*a, *b, NeuronVectorKind::FFKey); },
                     "The models do not share a tokenizer: d_vocab is 30 in model A (handmade) vs 31 in model B (handmade).");
}

void TestModelComparison::identicalCheckpointsAreReportedIdentical() {
    for (auto kind : {NeuronVectorKind::FFKey, NeuronVectorKind::FFValue}) {
        const NeuronDiff d = diffNeuron(*tiny_, *tinyAgain_, kind, 1, 17, 10);
        QVERIFY(d.identical);
        QCOMPARE(d.maxAbsDiff, 0.0f);
        QVERIFY(d.top.empty() && d.bottom.empty());
    }
    for (auto kind : {PairProjectionKind::OV, PairProjectionKind::QK}) {
        const PairDiff d = diffPairs(*tiny_, *tinyAgain_, kind, 0, 2, 10);
        QVERIFY(d.identical);
        QCOMPARE(d.maxAbsDiff, 0.0f);
        QVERIFY(d.top.empty() && d.bottom.empty());
    }
}

void TestModelComparison::f16CheckpointDifferenceMatchesBruteForce() {
    const NeuronDiff d = diffNeuron(*tiny_, *tinyF16_, NeuronVectorKind::FFValue, 0, 5, 8);
    const Eigen::VectorXd delta = (tinyF16_->layer(0).W_out.rowVector(5) - tiny_->layer(0).W_out.rowVector(5))
                                      .cast<double>().transpose();
    QVERIFY(!d.identical);
    QCOMPARE(double(d.maxAbsDiff), delta.cwiseAbs().maxCoeff());
    QVERIFY(d.maxAbsDiff > 0 && d.maxAbsDiff < 1e-3f); // F16 rounding of weights ~0.02
    const Eigen::VectorXd ref = tiny_->globals().W_E.view().cast<double>() * delta; // before model's E
    const double tol = 1e-4 * ref.cwiseAbs().maxCoeff();
    QString err = compareTopK(d.top, sortedEntries(ref, true), ref, 8, tol);
    QVERIFY2(err.isEmpty(), qPrintable(err));
    err = compareTopK(d.bottom, sortedEntries(ref, false), ref, 8, tol);
    QVERIFY2(err.isEmpty(), qPrintable(err));
}

void TestModelComparison::headDifferenceMatchesBruteForce() {
    const auto a = randomModel(12, 30, 1), b = randomModel(12, 30, 5);
    const int L = a->config().d_head, h = 1, l = 2;
    const MatrixD E = a->globals().W_E.view().cast<double>(), U_T = a->globals().W_U_T.view().cast<double>();
    QVERIFY((E - U_T).cwiseAbs().maxCoeff() > 0.1); // untied: the output side must be read through W_U
    auto ov = [&](const Model& m) {
        return MatrixD(m.layer(l).W_V.view().cast<double>().middleCols(h * L, L) *
                       m.layer(l).W_O.view().cast<double>().middleRows(h * L, L));
    };
    const MatrixD dW = ov(*b) - ov(*a);
    const MatrixD S = E * dW * U_T.transpose();
    const PairDiff d = diffPairs(*a, *b, PairProjectionKind::OV, l, h, 20, {}, 4);
    QVERIFY(!d.identical);
    QVERIFY(std::abs(d.maxAbsDiff - dW.cwiseAbs().maxCoeff()) <= 1e-5 * dW.cwiseAbs().maxCoeff());
    const double tol = 1e-4 * S.cwiseAbs().maxCoeff();
    QString err = compareTopK(d.top, sortedCells(S, true), S, 20, tol);
    QVERIFY2(err.isEmpty(), qPrintable(err));
    err = compareTopK(d.bottom, sortedCells(S, false), S, 20, tol);
    QVERIFY2(err.isEmpty(), qPrintable(err));
}

/// Two Llama checkpoints that share a vocabulary: stories260K as llama2.c .bin and as GGUF, the same trained
/// weights in two files (both store Q/K in Meta's interleaved RoPE layout), so the comparison must call
/// every layer aligned with itself and every parameter identical; the F32 values are compared bit for bit.
void TestModelComparison::llamaCheckpointsInTwoFormats() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    LoadOptions withTokenizer;
    withTokenizer.tokenizerPath = testdata("stories260K/tok512.bin");
    const auto bin = loadModel(testdata("stories260K/stories260K.bin"), {}, withTokenizer);
    const auto gguf = loadModel(testdata("stories260K/stories260K.gguf"));
    QCOMPARE(bin->config().n_layers, 5);
    QCOMPARE(bin->config().n_kv_heads, 4);
    QCOMPARE(bin->config().n_heads, 8); // GQA: two query heads per K/V head
    for (auto kind : {NeuronVectorKind::FFKey, NeuronVectorKind::FFValue}) {
        const LayerSimilarity s = compareLayers(*bin, *gguf, kind);
        QCOMPARE(s.embedding.rows(), Eigen::Index(5));
        for (int l = 0; l < 5; ++l) {
            QVERIFY2(std::abs(s.embedding(l, l) - 1.0f) <= 1e-5f, qPrintable(QString::number(s.embedding(l, l))));
            QVERIFY2(std::abs(s.feature(l, l) - 1.0f) <= 1e-5f, qPrintable(QString::number(s.feature(l, l))));
        }
        const Eigen::MatrixXd ref = referenceSimilarity(*bin, *gguf, kind, true);
        QVERIFY((s.embedding.cast<double>() - ref).cwiseAbs().maxCoeff() <= 1e-4);
        QVERIFY(ref(0, 4) < 0.9); // a trained model's first and last layers are not aligned
        const NeuronDiff d = diffNeuron(*bin, *gguf, kind, 4, 17, 10);
        QVERIFY(d.identical);
        QCOMPARE(d.maxAbsDiff, 0.0f);
    }
    for (auto kind : {PairProjectionKind::OV, PairProjectionKind::QK}) {
        const PairDiff d = diffPairs(*bin, *gguf, kind, 2, 5, 10); // query head 5 reads K/V head 2
        QVERIFY(d.identical);
        QCOMPARE(d.maxAbsDiff, 0.0f);
    }
}

void TestModelComparison::rejectsDifferentArchitectures() {
    ModelConfig cfg = gpt2Config(3, 2, 12, 8, 30);
    cfg.d_mlp = 32;
    const auto wide = makeModel(randomWeights(cfg, 1)), a = randomModel(12, 30, 1);
    expectInputError([&] { diffNeuron(*a, *wide, NeuronVectorKind::FFValue, 0, 0, 5); },
                     "The two models differ in d_mlp (24 vs 32).");
    expectInputError([&] { diffPairs(*a, *tiny_, PairProjectionKind::OV, 0, 0, 5); }, "differ in n_layers (3 vs 2)");
}

void TestModelComparison::cancels() {
    int seen = 0;
    qint64 lastTotal = 0;
    Progress p;
    p.report = [&](qint64, qint64 total, const QString&) { ++seen, lastTotal = total; };
    p.isCancelled = [&] { return seen >= 3; };
    QVERIFY_THROWS_EXCEPTION(Cancelled, compareLayers(*tiny_, *tinyAgain_, NeuronVectorKind::FFKey, p));
    QCOMPARE(seen, 3);
    QCOMPARE(lastTotal, qint64(4)); // 2 × 2 layer pairs
}

QTEST_GUILESS_MAIN(TestModelComparison)
#include "tst_model_comparison.moc"
