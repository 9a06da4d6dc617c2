// Residual decomposition: the components (embed, pos_embed, per-head results, b_O, MLP outputs) must add
// up to the cached residual at every boundary and position, in TransformerLens's order and names.

#include "model/analysis/residual/residual_decomposition.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/handmade_model.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

using Point = ResidualBoundary::Point;

/// Max reconstruction error over every boundary and position of a cache.
double worstError(const Model& model, const ActivationCache& cache) {
    double worst = 0;
    for (int l = 0; l < model.config().n_layers; ++l)
        for (Point pt : {Point::Pre, Point::Mid, Point::Post})
            for (int p = 0; p < cache.nPositions(); ++p) {
                const ResidualDecomposition d = decomposeResidual(model, cache, {l, pt}, p);
                // the reported error is what the test recomputes
                Vector sum = Vector::Zero(model.config().d_model);
                for (const ResidualComponent& c : d.components) sum += c.vec;
                const double err = double((sum - residualAt(cache, {l, pt}).row(p).transpose()).cwiseAbs().maxCoeff());
                if (std::abs(err - d.maxAbsError) > 1e-7) return 1e9;
                worst = std::max(worst, err);
            }
    return worst;
}

} // namespace

class TestDecomposition : public QObject {
    Q_OBJECT
private slots:
    void componentsInForwardOrder();
    void sumsToResidualOnRandomModel();
    void recomputesHeadResultsWhenNotCached();
    void modelWithoutAttentionBiasHasNoBiasComponent();
    void normTable();
    void rejectsBadBoundaryAndPosition();
    void sumsToResidualOnTinyGpt2();
    void sumsToResidualOnDemoModel();
};

void TestDecomposition::componentsInForwardOrder() {
    const ModelConfig cfg = gpt2Config(2, 3, 12, 8, 20);
    auto names = [&](ResidualBoundary b) {
        QStringList out;
        for (const ComponentId& id : residualComponents(cfg, b)) out << id.name;
        return out.join(' ');
    };
    QCOMPARE(names({0, Point::Pre}), QString("embed pos_embed"));
    QCOMPARE(names({0, Point::Mid}), QString("embed pos_embed L0H0 L0H1 L0H2 L0b_O"));
    QCOMPARE(names({1, Point::Pre}), QString("embed pos_embed L0H0 L0H1 L0H2 L0b_O L0MLP"));
    QCOMPARE(names(ResidualBoundary::finalResidual(cfg)),
             QString("embed pos_embed L0H0 L0H1 L0H2 L0b_O L0MLP L1H0 L1H1 L1H2 L1b_O L1MLP"));
    const std::vector<ComponentId> ids = residualComponents(cfg, {1, Point::Mid});
    QCOMPARE(ids[8].kind, ComponentKind::Head);
    QCOMPARE(ids[8].layer, 1);
    QCOMPARE(ids[8].head, 1);
    QCOMPARE(ids[6].kind, ComponentKind::Mlp);
    QCOMPARE(ids[6].layer, 0);
    QCOMPARE(ids[5].kind, ComponentKind::AttnBias);
}

void TestDecomposition::sumsToResidualOnRandomModel() {
    auto model = makeModel(randomWeights(gpt2Config(3, 4, 16, 10, 40), 7));
    const std::vector<int> ids{3, 14, 15, 9, 2, 6, 5, 3, 5, 8};
    const ActivationCache cache = runForward(*model, ids);
    const double err = worstError(*model, cache);
    QVERIFY2(err <= 1e-4, qPrintable(QString("reconstruction error %1").arg(err)));
    // the components really are the cached pieces, not a rescaled residual
    const ResidualDecomposition d = decomposeResidual(*model, cache, {1, Point::Post}, 4);
    QCOMPARE(d.components.size(), size_t(2 + 2 * (4 + 2)));
    QCOMPARE(d.components[0].vec(3), cache.embed(4, 3));
    QCOMPARE(d.components[1].vec(3), cache.pos_embed(4, 3));
    QCOMPARE(d.components[2 + 4 + 2 + 2].vec(5), cache.layers[1].result[2](4, 5)); // L1H2
    QCOMPARE(d.components.back().vec(0), cache.layers[1].mlp_out(4, 0));
    QCOMPARE(d.components[6].vec(1), model->layer(0).b_O.view()(0, 1));          // L0b_O
    QVERIFY(d.residual.isApprox(cache.layers[1].resid_post.row(4).transpose()));
}

void TestDecomposition::recomputesHeadResultsWhenNotCached() {
    auto model = makeModel(randomWeights(gpt2Config(2, 4, 16, 10, 40), 3));
    const std::vector<int> ids{1, 2, 3, 4, 5, 6};
    ForwardOptions opt;
    opt.cacheHeadResults = false;
    const ActivationCache lean = runForward(*model, ids, opt);
    const ActivationCache full = runForward(*model, ids);
    QVERIFY(lean.layers[1].result.empty());
    const ResidualDecomposition a = decomposeResidual(*model, lean, ResidualBoundary::finalResidual(model->config()), 5);
    const ResidualDecomposition b = decomposeResidual(*model, full, ResidualBoundary::finalResidual(model->config()), 5);
    QCOMPARE(a.components.size(), b.components.size());
    for (size_t i = 0; i < a.components.size(); ++i)
        QVERIFY2((a.components[i].vec - b.components[i].vec).cwiseAbs().maxCoeff() <= 1e-5f,
                 qPrintable(a.components[i].name));
    QVERIFY(a.maxAbsError <= 1e-4);
}

void TestDecomposition::modelWithoutAttentionBiasHasNoBiasComponent() {
    HandmadeWeights w = randomWeights(gpt2Config(2, 2, 8, 6, 10), 5);
    for (HandmadeLayer& l : w.layers) l.b_O = Matrix(); // absent, as in Llama
    auto model = makeModel(std::move(w));
    const ActivationCache cache = runForward(*model, std::vector<int>{1, 2, 3});
    const ResidualDecomposition d = decomposeResidual(*model, cache, {1, Point::Post}, 2);
    QStringList names;
    for (const ResidualComponent& c : d.components) names << c.name;
    QCOMPARE(names.join(' '), QString("embed pos_embed L0H0 L0H1 L0MLP L1H0 L1H1 L1MLP"));
    QVERIFY(d.maxAbsError <= 1e-4);
}

void TestDecomposition::normTable() {
    auto model = makeModel(randomWeights(gpt2Config(2, 3, 12, 8, 20), 11));
    const ActivationCache cache = runForward(*model, std::vector<int>{4, 5, 6, 7});
    const ResidualDecomposition d = decomposeResidual(*model, cache, ResidualBoundary::finalResidual(model->config()), 2);
    const Matrix t = componentNormTable(model->config(), d);
    QCOMPARE(t.rows(), Eigen::Index(2));
    QCOMPARE(t.cols(), Eigen::Index(4));
    // by hand: sqrt(Σ x²) of the cached head result / MLP output
    double ss = 0, ssMlp = 0;
    for (int i = 0; i < 12; ++i) {
        ss += double(cache.layers[1].result[2](2, i)) * cache.layers[1].result[2](2, i);
        ssMlp += double(cache.layers[0].mlp_out(2, i)) * cache.layers[0].mlp_out(2, i);
    }
    QVERIFY(std::abs(t(1, 2) - std::sqrt(ss)) <= 1e-5 * std::sqrt(ss));
    QVERIFY(std::abs(t(0, 3) - std::sqrt(ssMlp)) <= 1e-5 * std::sqrt(ssMlp));
    QVERIFY(t(1, 2) > 0);
}

void TestDecomposition::rejectsBadBoundaryAndPosition() {
    auto model = makeModel(randomWeights(gpt2Config(2, 2, 8, 6, 10), 5));
    const ActivationCache cache = runForward(*model, std::vector<int>{1, 2, 3});
    try {
        decomposeResidual(*model, cache, {2, Point::Pre}, 0);
        QFAIL("no error for layer 2 of 2");
    } catch (const InputError& e) {
        QCOMPARE(e.message(), QString("Layer 2 is outside the model's layers [0, 2)."));
    }
    try {
        decomposeResidual(*model, cache, {0, Point::Pre}, 3);
        QFAIL("no error for position 3 of 3");
    } catch (const InputError& e) {
        QCOMPARE(e.message(), QString("Position 3 is outside the prompt's positions [0, 3)."));
    }
}

void TestDecomposition::sumsToResidualOnTinyGpt2() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    auto model = loadModel(testdata("tiny-gpt2"));
    const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
    const ActivationCache cache = runForward(*model, intsFromJson(ref["token_ids"].toArray()));
    const double err = worstError(*model, cache);
    QVERIFY2(err <= 1e-4, qPrintable(QString("reconstruction error %1").arg(err)));
    QCOMPARE(decomposeResidual(*model, cache, ResidualBoundary::finalResidual(model->config()), 17).components.size(),
             size_t(2 + 2 * (4 + 2)));
}

void TestDecomposition::sumsToResidualOnDemoModel() {
    if (!QFile::exists(demoDir() + "/model.safetensors")) QSKIP("resources/demo/model.safetensors is not in the tree yet");
    auto model = loadModel(demoDir());
    std::vector<int> ids;
    for (int i = 0; i < std::min(12, model->config().n_ctx); ++i) ids.push_back((i * 37 + 1) % model->config().d_vocab);
    const double err = worstError(*model, runForward(*model, ids));
    QVERIFY2(err <= 1e-4, qPrintable(QString("reconstruction error %1").arg(err)));
}

QTEST_GUILESS_MAIN(TestDecomposition)
#include "tst_decomposition.moc"
