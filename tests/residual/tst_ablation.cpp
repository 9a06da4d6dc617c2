// Ablation preview: a head whose W_O slice is zero writes nothing, so ablating it changes no logit;
// ablating a real head moves the target logit by exactly what an independent ablated forward pass gives.

#include "model/analysis/residual/ablation.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "support/handmade_model.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

using Kind = HeadAblation::Kind;

/// Random 2-layer model whose head 1 in layer 0 has W_O^1 = 0.
std::shared_ptr<const Model> modelWithSilentHead() {
    HandmadeWeights w = randomWeights(gpt2Config(2, 4, 16, 12, 40), 31);
    w.layers[0].W_O.middleRows(1 * 4, 4).setZero();
    return makeModel(std::move(w));
}

const std::vector<int> kIds{1, 5, 9, 13, 17, 21, 25, 29};

} // namespace

class TestAblation : public QObject {
    Q_OBJECT
private slots:
    void silentHeadChangesNothing();
    void realHeadMatchesAblatedForward();
    void positionOtherThanLast();
    void rejectsBadOptions();
    void meanDiffersFromZeroOnTinyGpt2();
};

void TestAblation::silentHeadChangesNothing() {
    auto model = modelWithSilentHead();
    for (Kind kind : {Kind::Zero, Kind::Mean}) {
        AblationOptions o;
        o.ablations = {{0, 1, kind}};
        o.token = 7;
        const AblationPreview p = previewAblation(*model, kIds, o);
        QCOMPARE(p.logitsAfter.size(), Eigen::Index(40));
        QVERIFY(p.logitsAfter == p.logitsBefore); // bit-identical
        QCOMPARE(p.delta, 0.0);
        QCOMPARE(p.topAfter.size(), size_t(10));
        for (size_t i = 0; i < 10; ++i) QCOMPARE(p.topAfter[i].id, p.topBefore[i].id);
    }
}

void TestAblation::realHeadMatchesAblatedForward() {
    auto model = modelWithSilentHead();
    const ActivationCache clean = runForward(*model, kIds);
    for (Kind kind : {Kind::Zero, Kind::Mean}) {
        AblationOptions o;
        o.ablations = {{0, 2, kind}, {1, 3, kind}};
        o.token = 7;
        o.counterToken = 11;
        const AblationPreview p = previewAblation(*model, clean, o);
        ForwardOptions f;
        f.ablations = o.ablations;
        const ActivationCache ablated = runForward(*model, kIds, f);
        const double before = double(clean.logits(7, 7)) - clean.logits(7, 11);
        const double after = double(ablated.logits(7, 7)) - ablated.logits(7, 11);
        QCOMPARE(p.position, 7);
        QVERIFY(std::abs(p.before - before) <= 1e-6);
        QVERIFY(std::abs(p.after - after) <= 1e-5);
        QVERIFY(std::abs(p.delta - (after - before)) <= 1e-5);
        QVERIFY(std::abs(p.delta) > 1e-3); // the heads matter
        // top tokens: the 10 largest ablated logits, descending
        Eigen::Index arg;
        ablated.logits.row(7).maxCoeff(&arg);
        QCOMPARE(p.topAfter.front().id, int(arg));
        for (size_t i = 1; i < p.topAfter.size(); ++i) QVERIFY(p.topAfter[i - 1].logit >= p.topAfter[i].logit);
    }
}

void TestAblation::positionOtherThanLast() {
    auto model = modelWithSilentHead();
    AblationOptions o;
    o.ablations = {{0, 0, Kind::Zero}};
    o.position = 3;
    o.token = 2;
    const AblationPreview p = previewAblation(*model, kIds, o);
    ForwardOptions f;
    f.ablations = o.ablations;
    QCOMPARE(p.position, 3);
    QVERIFY(std::abs(p.after - runForward(*model, kIds, f).logits(3, 2)) <= 1e-5);
    QVERIFY(std::abs(p.before - runForward(*model, kIds).logits(3, 2)) <= 1e-6);
}

void TestAblation::rejectsBadOptions() {
    auto model = modelWithSilentHead();
    AblationOptions o;
    o.ablations = {{2, 0, Kind::Zero}};
    try {
        previewAblation(*model, kIds, o);
        QFAIL("no error for layer 2");
    } catch (const InputError& e) {
        QCOMPARE(e.message(), QString("Cannot ablate L2H0: the model has 2 layers of 4 heads."));
    }
    o.ablations.clear();
    o.token = 40;
    try {
        previewAblation(*model, kIds, o);
        QFAIL("no error for token 40");
    } catch (const InputError& e) {
        QCOMPARE(e.message(), QString("Token id 40 is outside the vocabulary [0, 40)."));
    }
    o.token = 0;
    o.position = 8;
    try {
        previewAblation(*model, kIds, o);
        QFAIL("no error for position 8");
    } catch (const InputError& e) {
        QCOMPARE(e.message(), QString("Position 8 is outside the prompt's positions [0, 8)."));
    }
}

void TestAblation::meanDiffersFromZeroOnTinyGpt2() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    auto model = loadModel(testdata("tiny-gpt2"));
    const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
    const Matrix refLogits = matrixFromJson(ref["variants"].toObject()["float32"].toObject()["logits"].toArray());
    const std::vector<int> ids = intsFromJson(ref["token_ids"].toArray());
    AblationOptions o;
    o.token = 7;
    o.ablations = {{0, 2, Kind::Zero}};
    const AblationPreview zero = previewAblation(*model, ids, o);
    o.ablations = {{0, 2, Kind::Mean}};
    const AblationPreview mean = previewAblation(*model, ids, o);
    QVERIFY(std::abs(zero.before - refLogits(17, 7)) <= 1e-4); // clean logit = picoGPT's
    QCOMPARE(zero.before, mean.before);
    const double gap = double((zero.logitsAfter - mean.logitsAfter).cwiseAbs().maxCoeff());
    QVERIFY2(gap > 1e-3, qPrintable(QString("zero vs mean ablation max logit gap %1").arg(gap)));
    QVERIFY(std::abs(zero.delta) > 1e-4 && std::abs(mean.delta) > 1e-4);
    QVERIFY(std::abs(zero.delta - mean.delta) > 1e-5);
}

QTEST_GUILESS_MAIN(TestAblation)
#include "tst_ablation.moc"
