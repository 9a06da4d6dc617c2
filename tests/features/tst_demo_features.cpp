// The dictionaries bundled with the demo model (resources/demo-features, trained by tools/train_demo_features.py), as
// AttnScope reads them — SAELens folders and a circuit-tracer transcoder set — against the float64 reference that
// script computed from the saved files in PyTorch (tests/data/features/demo_reference.json): every firing feature and
// its activation, the reconstruction, the squared error, FVU and the clean, spliced and zero-ablated losses.

#include "model/analysis/features/feature_activations.h"
#include "model/analysis/features/reconstruction_quality.h"
#include "model/features/dictionary_set.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

class TestDemoFeatures : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void againstTheReference_data();
    void againstTheReference();

private:
    std::shared_ptr<const Model> model_;
    QJsonObject ref_;
    std::vector<int> tokens_;
    std::shared_ptr<const ActivationCache> cache_;
};

void TestDemoFeatures::initTestCase() {
    model_ = loadModel(demoDir());
    ref_ = readJsonObject(attnscope::test::sourceFile(QStringLiteral("tests/data/features/demo_reference.json")));
    for (const QJsonValue& v : ref_["token_ids"].toArray()) tokens_.push_back(v.toInt());
    QCOMPARE(int(tokens_.size()), 12);
    cache_ = std::make_shared<const ActivationCache>(runForward(*model_, tokens_));
    const QJsonArray logits = ref_["logits_last_clean"].toArray();
    for (int t = 0; t < logits.size(); ++t) QVERIFY(std::abs(cache_->logits(11, t) - logits[t].toDouble()) < 1e-4);
}

void TestDemoFeatures::againstTheReference_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("folder");
    QTest::addColumn<int>("layer");
    QTest::newRow("resid-jumprelu") << "resid-jumprelu" << "resid-jumprelu" << 0;
    QTest::newRow("resid-topk") << "resid-topk" << "resid-topk" << 0;
    QTest::newRow("transcoder-0") << "transcoder-0" << "transcoders" << 0;
    QTest::newRow("transcoder-1") << "transcoder-1" << "transcoders" << 1;
}

void TestDemoFeatures::againstTheReference() {
    QFETCH(QString, name);
    QFETCH(QString, folder);
    QFETCH(int, layer);
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    if (folder == QLatin1String("transcoders")) QSKIP("a circuit-tracer config.yaml: this build has no yaml-cpp (the arm64 sysroot)");
#endif
    const DictionarySet set = openDictionaries(attnscope::test::sourceFile(QStringLiteral("resources/demo-features/")) + folder);
    requireFitsModel(set, model_->config());
    const SparseCoder& sae = set.coders[size_t(layer)];
    const QJsonObject r = ref_["dictionaries"].toObject()[name].toObject();
    QCOMPARE(sae.hookIn, r["hook_in"].toString());
    QCOMPARE(sae.hookOut, r["hook_out"].toString());
    const FeatureRun run = runDictionary(*model_, *cache_, sae);
    const QJsonArray features = r["features"].toArray(), recon = r["reconstruction"].toArray();
    int firing = 0;
    for (int p = 0; p < 12; ++p) {
        const std::vector<FeatureValue> ours = run.firing(p, 0);
        const QJsonArray want = features[p].toArray();
        QVERIFY2(int(ours.size()) == want.size(), qPrintable(QStringLiteral("position %1: %2 firing, reference %3").arg(p).arg(ours.size()).arg(want.size())));
        for (int i = 0; i < want.size(); ++i) {
            const int f = want[i].toArray()[0].toInt();
            const double a = want[i].toArray()[1].toDouble();
            QVERIFY2(std::abs(run.f(p, f) - a) < 1e-4 * (1 + a), qPrintable(QStringLiteral("position %1 feature %2: %3 vs %4").arg(p).arg(f).arg(run.f(p, f)).arg(a)));
        }
        firing += want.size();
        for (int d = 0; d < 128; ++d) QVERIFY(std::abs(run.xhat(p, d) - recon[p].toArray()[d].toDouble()) < 1e-3);
    }
    QVERIFY(firing > 12);
    const ReconstructionQuality q = reconstructionQuality(*model_, tokens_, *cache_, run);
    for (int p = 0; p < 12; ++p) {
        const double e = r["squared_error"].toArray()[p].toDouble();
        QVERIFY(std::abs(q.squaredError[size_t(p)] - e) < 1e-3 * (1 + e));
    }
    QVERIFY2(std::abs(q.fvu - r["fvu"].toDouble()) < 1e-4, qPrintable(QString::number(q.fvu)));
    QVERIFY(std::abs(q.lossClean - ref_["loss_clean"].toDouble()) < 1e-4);
    QVERIFY2(std::abs(q.lossSpliced - r["loss_spliced"].toDouble()) < 1e-4, qPrintable(QString::number(q.lossSpliced)));
    QVERIFY2(std::abs(q.lossZeroAblated - r["loss_zero_ablated"].toDouble()) < 1e-4, qPrintable(QString::number(q.lossZeroAblated)));
}

QTEST_GUILESS_MAIN(TestDemoFeatures)
#include "tst_demo_features.moc"
