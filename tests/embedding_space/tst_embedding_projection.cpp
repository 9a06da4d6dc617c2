// Parameter projections into embedding space (Dar et al. 2022) against brute force: the full
// [d_vocab, d_vocab] matrices E·W_OV·Eᵀ and E·W_QK·Eᵀ built densely in double precision and sorted
// completely (tiny-gpt2 has d_vocab = 512, so 262,144 cells), for several block sizes so the blocked
// scan, its per-row skip and its early stop are all exercised.

#include "model/analysis/embedding_space/embedding_projection.h"
#include "model/analysis/embedding_space/embedding_space_json.h"
#include "model/formats/model_loader.h"
#include "support/brute_force_topk.h"
#include "support/handmade_model.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QtTest>
#include <atomic>

using namespace attnscope;
using namespace attnscope::test;

namespace {

double tolFor(const MatrixD& S) { return 1e-4 * S.cwiseAbs().maxCoeff(); }

/// A random GPT-2-style model with grouped-query attention (4 query heads sharing 2 K/V heads).
std::shared_ptr<const Model> gqaModel() {
    ModelConfig cfg = gpt2Config(2, 4, 16, 8, 40);
    cfg.n_kv_heads = 2;
    HandmadeWeights w = randomWeights(cfg, 7);
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    for (HandmadeLayer& x : w.layers)
        for (Matrix* m : {&x.W_K, &x.W_V}) {
            *m = Matrix(cfg.d_model, cfg.n_kv_heads * cfg.d_head);
            for (Eigen::Index i = 0; i < m->size(); ++i) m->data()[i] = normal(rng);
        }
    return makeModel(std::move(w));
}

} // namespace

class TestEmbeddingProjection : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void pairTopKMatchesBruteForce_data();
    void pairTopKMatchesBruteForce();
    void groupedQueryHeadsUseTheirKvHead();
    void rowQueryMatchesBruteForce();
    void neuronTopAndBottomMatchBruteForce();
    void reverseSearchMatchesBruteForce();
    void conventionNamesTheUnembedding();
    void progressAndCancellation();
    void rejectsBadIndices();
    void json();

private:
    std::shared_ptr<const Model> tiny_;
};

void TestEmbeddingProjection::initTestCase() {
    if (testdataAvailable()) tiny_ = loadModel(testdata("tiny-gpt2")); // else the cases that read it skip
}

void TestEmbeddingProjection::pairTopKMatchesBruteForce_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("layer");
    QTest::addColumn<int>("head");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("blockRows");
    QTest::newRow("OV L0H0 k50 one block") << int(PairProjectionKind::OV) << 0 << 0 << 50 << 1024;
    QTest::newRow("OV L1H3 k50 blocks of 37") << int(PairProjectionKind::OV) << 1 << 3 << 50 << 37;
    QTest::newRow("OV L1H2 k300 blocks of 1") << int(PairProjectionKind::OV) << 1 << 2 << 300 << 1;
    QTest::newRow("QK L0H1 k50 blocks of 64") << int(PairProjectionKind::QK) << 0 << 1 << 50 << 64;
    QTest::newRow("QK L1H0 k1 blocks of 5") << int(PairProjectionKind::QK) << 1 << 0 << 1 << 5;
}

void TestEmbeddingProjection::pairTopKMatchesBruteForce() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QFETCH(int, kind);
    QFETCH(int, layer);
    QFETCH(int, head);
    QFETCH(int, k);
    QFETCH(int, blockRows);
    const auto kd = PairProjectionKind(kind);
    const MatrixD S = denseCircuitScores(*tiny_, kd, layer, head);
    QCOMPARE(S.rows(), Eigen::Index(512));
    const PairProjection p = projectPairs(*tiny_, kd, layer, head, k, {}, blockRows, PairTopKMethod::Exact);
    QCOMPARE(p.layer, layer);
    QCOMPARE(p.head, head);
    const QString err = compareTopK(p.top, sortedCells(S), S, k, tolFor(S));
    QVERIFY2(err.isEmpty(), qPrintable(err));
    // the block size changes the visiting order and the skips, never the answer; nor does the default
    // int8 candidate pass (tst_quantized_topk tests it in depth)
    const PairProjection q = projectPairs(*tiny_, kd, layer, head, k);
    for (int i = 0; i < k; ++i) {
        QCOMPARE(p.top[size_t(i)].row, q.top[size_t(i)].row);
        QCOMPARE(p.top[size_t(i)].col, q.top[size_t(i)].col);
    }
}

void TestEmbeddingProjection::groupedQueryHeadsUseTheirKvHead() {
    const auto m = gqaModel();
    for (int h = 0; h < 4; ++h)
        for (auto kind : {PairProjectionKind::OV, PairProjectionKind::QK}) {
            const MatrixD S = denseCircuitScores(*m, kind, 1, h);
            const PairProjection p = projectPairs(*m, kind, 1, h, 25, {}, 3);
            const QString err = compareTopK(p.top, sortedCells(S), S, 25, tolFor(S));
            QVERIFY2(err.isEmpty(), qPrintable(QStringLiteral("head %1: %2").arg(h).arg(err)));
        }
}

void TestEmbeddingProjection::rowQueryMatchesBruteForce() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    for (auto kind : {PairProjectionKind::OV, PairProjectionKind::QK}) {
        const MatrixD S = denseCircuitScores(*tiny_, kind, 1, 1);
        for (int row : {0, 97, 511}) {
            const Eigen::VectorXd r = S.row(row).transpose();
            const auto top = projectPairsForRow(*tiny_, kind, 1, 1, row, 20);
            const QString err = compareTopK(top, sortedEntries(r), r, 20, tolFor(S));
            QVERIFY2(err.isEmpty(), qPrintable(err));
        }
    }
}

void TestEmbeddingProjection::neuronTopAndBottomMatchBruteForce() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const ModelConfig& c = tiny_->config();
    for (int l = 0; l < c.n_layers; ++l)
        for (int i : {0, 100, c.d_mlp - 1}) {
            // FF key i = column i of W_in, FF value i = row i of W_out
            const Eigen::VectorXd key = denseNeuronScores(*tiny_, NeuronVectorKind::FFKey, l, i);
            const Eigen::VectorXd value = denseNeuronScores(*tiny_, NeuronVectorKind::FFValue, l, i);
            for (auto [kind, ref] : {std::pair{NeuronVectorKind::FFKey, key}, std::pair{NeuronVectorKind::FFValue, value}}) {
                const NeuronProjection p = projectNeuron(*tiny_, kind, l, i, 15);
                const double tol = 1e-4 * ref.cwiseAbs().maxCoeff();
                QString err = compareTopK(p.top, sortedEntries(ref, true), ref, 15, tol);
                QVERIFY2(err.isEmpty(), qPrintable(err));
                err = compareTopK(p.bottom, sortedEntries(ref, false), ref, 15, tol);
                QVERIFY2(err.isEmpty(), qPrintable(err));
                QVERIFY(p.bottom.front().score < p.top.front().score);
            }
        }
}

// tiny-gpt2 (tied) and a random model with a separate unembedding: output tokens through W_U
void TestEmbeddingProjection::reverseSearchMatchesBruteForce() {
  ATTNSCOPE_REQUIRE_TESTDATA();
  for (const std::shared_ptr<const Model>& m : {tiny_, gqaModel()}) {
    const ModelConfig& c = m->config();
    const int t = std::min(300, c.d_vocab - 9);
    // heads: max over sources of column t of the dense OV matrix
    std::vector<RefCell> heads; // row = layer*n_heads + head
    for (int l = 0; l < c.n_layers; ++l)
        for (int h = 0; h < c.n_heads; ++h) {
            const MatrixD S = denseCircuitScores(*m, PairProjectionKind::OV, l, h);
            Eigen::Index s;
            const double best = S.col(t).maxCoeff(&s);
            heads.push_back({l * c.n_heads + h, int(s), best});
        }
    std::stable_sort(heads.begin(), heads.end(), [](const RefCell& a, const RefCell& b) { return a.score > b.score; });
    const MatrixD U_T = toDouble(m->globals().W_U_T.view());
    std::vector<RefCell> neurons;
    for (int l = 0; l < c.n_layers; ++l) {
        const Eigen::VectorXd v = toDouble(m->layer(l).W_out.view()) * U_T.row(t).transpose();
        for (int i = 0; i < c.d_mlp; ++i) neurons.push_back({l, i, v(i)});
    }
    std::stable_sort(neurons.begin(), neurons.end(), [](const RefCell& a, const RefCell& b) { return a.score > b.score; });

    const ReverseSearch r = reverseSearch(*m, t, 5, 10);
    QCOMPARE(r.token, t);
    QCOMPARE(int(r.heads.size()), 5);
    QCOMPARE(int(r.neurons.size()), 10);
    const double tolH = 1e-4 * std::abs(heads.front().score), tolN = 1e-4 * std::abs(neurons.front().score);
    for (int i = 0; i < 5; ++i) {
        const HeadForToken& h = r.heads[size_t(i)];
        QVERIFY2(std::abs(h.score - heads[size_t(i)].score) <= tolH, qPrintable(QString("head rank %1").arg(i)));
        QCOMPARE(h.layer * c.n_heads + h.head, heads[size_t(i)].row);
        QCOMPARE(h.sourceToken, heads[size_t(i)].col);
    }
    for (int i = 0; i < 10; ++i) {
        QVERIFY(std::abs(r.neurons[size_t(i)].score - neurons[size_t(i)].score) <= tolN);
        QCOMPARE(r.neurons[size_t(i)].layer, neurons[size_t(i)].row);
        QCOMPARE(r.neurons[size_t(i)].neuron, neurons[size_t(i)].col);
    }
  }
}

void TestEmbeddingProjection::conventionNamesTheUnembedding() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QVERIFY(unembeddingTied(*tiny_));
    QCOMPARE(embeddingConvention(*tiny_), QStringLiteral("This model ties its embeddings (W_U = W_Eᵀ): E = W_E reads both sides."));
    const auto untied = gqaModel();
    QVERIFY(!unembeddingTied(*untied));
    QVERIFY(embeddingConvention(*untied).contains(QStringLiteral("output tokens and FF values through W_U")));
    // the OV scores of the untied model really are E·W_OV·U, not E·W_OV·Eᵀ
    const PairProjection p = projectPairs(*untied, PairProjectionKind::OV, 0, 1, 1);
    const LayerWeights& w = untied->layer(0);
    const int L = untied->config().d_head, kv = untied->config().kvHeadOf(1);
    const MatrixD W = toDouble(w.W_V.view()).middleCols(kv * L, L) * toDouble(w.W_O.view()).middleRows(L, L);
    const MatrixD E = toDouble(untied->globals().W_E.view()), U_T = toDouble(untied->globals().W_U_T.view());
    const auto [s, t] = std::pair{p.top.front().row, p.top.front().col};
    const double withU = E.row(s) * W * U_T.row(t).transpose(), withE = E.row(s) * W * E.row(t).transpose();
    QVERIFY(std::abs(p.top.front().score - withU) <= 1e-4 * std::abs(withU));
    QVERIFY(std::abs(withU - withE) > 1e-2 * std::abs(withU));
}

void TestEmbeddingProjection::progressAndCancellation() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    int reports = 0;
    qint64 lastTotal = 0;
    Progress counting;
    counting.report = [&](qint64, qint64 total, const QString&) { ++reports, lastTotal = total; };
    // k large enough that the early stop (which depends on the threads' order) never ends the scan early
    projectPairs(*tiny_, PairProjectionKind::OV, 0, 0, 5000, counting, 100, PairTopKMethod::Exact);
    QCOMPARE(lastTotal, qint64(6)); // ceil(512 / 100) blocks
    QVERIFY(reports >= 2);

    // reports come from any scan thread, one at a time; cancellation is polled by every thread
    std::atomic<int> seen(0);
    Progress cancelling;
    cancelling.report = [&](qint64, qint64, const QString&) { ++seen; };
    cancelling.isCancelled = [&] { return seen.load() >= 2; };
    QVERIFY_THROWS_EXCEPTION(Cancelled, projectPairs(*tiny_, PairProjectionKind::QK, 0, 0, 5000, cancelling, 16,
                                                     PairTopKMethod::Exact));
    QCOMPARE(seen.load(), 2);
    seen = 0;
    QVERIFY_THROWS_EXCEPTION(Cancelled, reverseSearch(*tiny_, 3, 5, 5, cancelling));
}

void TestEmbeddingProjection::rejectsBadIndices() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    auto expectInputError = [](auto&& f, const QString& text) {
        try {
            f();
            QFAIL("no InputError");
        } catch (const InputError& e) {
            QVERIFY2(e.message().contains(text), qPrintable(e.message()));
        }
    };
    expectInputError([&] { projectPairs(*tiny_, PairProjectionKind::OV, 2, 0, 5); }, "Layer 2 is outside [0, 2)");
    expectInputError([&] { projectPairs(*tiny_, PairProjectionKind::OV, 0, 4, 5); }, "Head 4 is outside [0, 4)");
    expectInputError([&] { projectNeuron(*tiny_, NeuronVectorKind::FFKey, 0, 256, 5); }, "Neuron 256 is outside [0, 256)");
    expectInputError([&] { projectPairsForRow(*tiny_, PairProjectionKind::QK, 0, 0, 512, 5); },
                     "Token id 512 is outside [0, 512)");
    expectInputError([&] { reverseSearch(*tiny_, -1, 5, 5); }, "Token id -1 is outside");
}

void TestEmbeddingProjection::json() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const PairProjection p = projectPairs(*tiny_, PairProjectionKind::QK, 1, 2, 3);
    const Tokenizer& tok = tiny_->tokenizer();
    const auto text = [&](int id) { return QString::fromUtf8(tok.tokenBytes(id)); };
    const QJsonObject o = toJson(p, tok);
    QCOMPARE(o["projection"].toString(), QString("qk"));
    QCOMPARE(o["layer"].toInt(), 1);
    QCOMPARE(o["head"].toInt(), 2);
    const QJsonArray top = o["top"].toArray();
    QCOMPARE(top.size(), 3);
    QCOMPARE(top[0].toObject()["row_token_id"].toInt(), p.top[0].row);
    QCOMPARE(top[0].toObject()["col_token_id"].toInt(), p.top[0].col);
    QCOMPARE(top[0].toObject()["row_token"].toString(), text(p.top[0].row)); // the texts beside the ids
    QCOMPARE(top[2].toObject()["col_token"].toString(), text(p.top[2].col));
    QCOMPARE(float(top[0].toObject()["score"].toDouble()), p.top[0].score);
    QVERIFY(top[0].toObject()["score"].toDouble() >= top[2].toObject()["score"].toDouble());

    const NeuronProjection n = projectNeuron(*tiny_, NeuronVectorKind::FFValue, 0, 7, 4);
    const QJsonObject j = toJson(n, tok);
    QCOMPARE(j["projection"].toString(), QString("ffvalue"));
    QCOMPARE(j["neuron"].toInt(), 7);
    QCOMPARE(j["top"].toArray().size(), 4);
    QCOMPARE(j["top"].toArray()[1].toObject()["token_id"].toInt(), n.top[1].id);
    QCOMPARE(j["bottom"].toArray()[0].toObject()["token_id"].toInt(), n.bottom[0].id);
    QCOMPARE(j["top"].toArray()[1].toObject()["token"].toString(), text(n.top[1].id));
    QCOMPARE(j["bottom"].toArray()[0].toObject()["token"].toString(), text(n.bottom[0].id));
    QCOMPARE(toJson(projectNeuron(*tiny_, NeuronVectorKind::FFKey, 0, 7, 4), tok)["projection"].toString(), QString("ffkey"));
    QCOMPARE(toJson(projectPairs(*tiny_, PairProjectionKind::OV, 0, 0, 1), tok)["projection"].toString(), QString("ov"));
}

QTEST_GUILESS_MAIN(TestEmbeddingProjection)
#include "tst_embedding_projection.moc"
