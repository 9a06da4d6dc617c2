// The command line's --sae modes, run as a real process on the demo model with SAEs the test writes:
// "features" (per-position firing features, reconstruction and the three losses), "feature" (embedding-space
// readings and DLA), "intervention" (steered logits and continuation), each equal to the library's values in
// this process; bad invocations and files fail with their messages.

#include "model/analysis/features/feature_intervention.h"
#include "model/analysis/features/feature_patching.h"
#include "model/analysis/features/feature_readout.h"
#include "model/analysis/features/reconstruction_quality.h"
#include "model/features/dictionary_set.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/transformer/generate.h"
#include "model/transformer/prompt.h"
#include "support/cli_process.h"
#include "support/dictionary_fixtures.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {
int topTokensOfRow(const ActivationCache& cache, int p) {
    const auto row = cache.logits.row(cache.logitRow(p));
    Eigen::Index best;
    row.maxCoeff(&best);
    return int(best);
}
const QString kPrompt = QStringLiteral("In the beginning God created the heaven and the earth.");
}

class TestCliFeatures : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void featuresDump();
    void featureReadings();
    void steeringDump();
    void featurePatchingDump();
    void bundledDictionaryByName();
    void badInvocations();

private:
    QJsonObject dump(const QStringList& args, const QString& key) {
        return demoDumpOf(attnscope::test::attnscopeExe(), tmp_.path(), QStringList{"--prompt", kPrompt, "--sae", saePath_} + args, key);
    }
    QTemporaryDir tmp_;
    QString saePath_;
    std::shared_ptr<const Model> model_;
    std::vector<int> tokens_;
    SparseCoder sae_;
};

void TestCliFeatures::initTestCase() {
    model_ = loadModel(demoDir());
    tokens_ = tokenizePrompt(model_->tokenizer(), kPrompt, true);
    DictionaryParams p = roundedTo(randomParams(128, 80, 128, 21), QStringLiteral("F32"));
    p.W_enc *= 0.5;
    p.threshold *= 4;
    saePath_ = tmp_.filePath(QStringLiteral("sae"));
    writeSaeLensFolder(saePath_, p, QStringLiteral("jumprelu"),
                       QJsonObject{{"architecture", "jumprelu"}, {"d_in", 128}, {"d_sae", 80}, {"apply_b_dec_to_input", true},
                                   {"metadata", QJsonObject{{"hook_name", "blocks.0.hook_resid_post"}}}});
    sae_ = openDictionaries(saePath_).coders[0];
}

void TestCliFeatures::featuresDump() {
    const QJsonObject f = dump({"--features", "--top", "3"}, QStringLiteral("features"));
    QVERIFY(!f.isEmpty());
    QCOMPARE(f["hook"].toString(), QStringLiteral("blocks.0.hook_resid_post"));
    QCOMPARE(f["d_sae"].toInt(), 80);
    QVERIFY(f["conventions"].toString().contains(QStringLiteral("fvu")));
    const ActivationCache cache = runForward(*model_, tokens_);
    const FeatureRun run = runDictionary(*model_, cache, sae_);
    const QJsonArray positions = f["positions"].toArray();
    QCOMPARE(positions.size(), int(tokens_.size()));
    int listed = 0;
    for (int p = 0; p < positions.size(); ++p) {
        const QJsonArray top = positions[p].toObject()["top"].toArray();
        const std::vector<FeatureValue> want = run.firing(p, 3);
        QCOMPARE(top.size(), int(want.size()));
        for (int i = 0; i < top.size(); ++i) {
            QCOMPARE(top[i].toObject()["feature"].toInt(), want[size_t(i)].feature);
            QVERIFY(std::abs(top[i].toObject()["activation"].toDouble() - want[size_t(i)].activation) < 1e-5);
        }
        listed += int(top.size());
    }
    QVERIFY(listed > 10);
    const ReconstructionQuality q = reconstructionQuality(*model_, tokens_, cache, run);
    const QJsonObject rec = f["reconstruction"].toObject();
    QVERIFY(std::abs(rec["fvu"].toDouble() - q.fvu) < 1e-6);
    QVERIFY(std::abs(rec["loss_clean"].toDouble() - q.lossClean) < 1e-6);
    QVERIFY(std::abs(rec["loss_spliced"].toDouble() - q.lossSpliced) < 1e-6);
    QVERIFY(std::abs(rec["loss_zero_ablated"].toDouble() - q.lossZeroAblated) < 1e-6);
    QCOMPARE(rec["mse"].toArray().size(), int(tokens_.size()));
    QVERIFY(std::abs(rec["mse"].toArray()[4].toDouble() - q.mse[4]) < 1e-6 * (1 + q.mse[4]));
}

void TestCliFeatures::featureReadings() {
    const QJsonObject f = dump({"--feature", "11", "--project", "--top", "4", "--position", "5"}, QStringLiteral("feature"));
    QVERIFY(!f.isEmpty());
    const FeatureReadout r = readFeature(*model_, sae_, 11, 4);
    const QJsonArray top = f["decoder_top"].toArray(), enc = f["encoder_bottom"].toArray();
    QCOMPARE(top.size(), 4);
    for (int i = 0; i < 4; ++i) QCOMPARE(top[i].toObject()["id"].toInt(), r.decoderTop[size_t(i)].id);
    QCOMPARE(enc[0].toObject()["id"].toInt(), r.encoderBottom[0].id);
    const ActivationCache cache = runForward(*model_, tokens_);
    const FeatureRun run = runDictionary(*model_, cache, sae_);
    QCOMPARE(f["activations"].toArray().size(), int(tokens_.size()));
    QVERIFY(std::abs(f["activations"].toArray()[5].toDouble() - run.f(5, 11)) < 1e-6);
    const QJsonObject dla = f["dla"].toObject();
    QCOMPARE(dla["position"].toInt(), 5);
    const int token = dla["token_id"].toInt();
    QCOMPARE(token, topTokensOfRow(cache, 5));
    QVERIFY(std::abs(dla["value"].toDouble() - featureLogitAttribution(*model_, cache, sae_, run, 11, 5, token)) < 1e-6);
}

void TestCliFeatures::steeringDump() {
    const QJsonObject i = dump({"--steer", "7=12@3,4", "--steer", "9=ablate", "--generate", "5"}, QStringLiteral("intervention"));
    QVERIFY(!i.isEmpty());
    QCOMPARE(i["edits"].toArray().size(), 2);
    const auto hooks = featureEditHooks(*model_, sae_, {parseFeatureEdit(QStringLiteral("7=12@3,4")), parseFeatureEdit(QStringLiteral("9=ablate"))});
    ForwardOptions o;
    o.hooks = hooks;
    const ActivationCache edited = runForward(*model_, tokens_, o);
    const QJsonArray logits = i["logits_last"].toArray();
    QCOMPARE(logits.size(), model_->config().d_vocab);
    double err = 0;
    for (int t = 0; t < logits.size(); ++t) err = std::max(err, std::abs(logits[t].toDouble() - edited.logits(int(tokens_.size()) - 1, t)));
    QVERIFY2(err < 1e-4, qPrintable(QString::number(err)));
    const std::vector<int> gen = greedyContinuation(*model_, tokens_, 5, hooks);
    QCOMPARE(i["generated_ids"].toArray().size(), 5);
    for (int k = 0; k < 5; ++k) QCOMPARE(i["generated_ids"].toArray()[k].toInt(), gen[size_t(k)]);
}

void TestCliFeatures::featurePatchingDump() {
    const QString corruptText = QStringLiteral("In the beginning Moses created the heaven and the earth.");
    const QJsonObject fp = dump({"--corrupt-prompt", corruptText, "--metric", "logit: and", "--feature-patching", "--top", "3"},
                                QStringLiteral("feature_patching"));
    QVERIFY(!fp.isEmpty());
    PatchingMetric metric;
    metric.kind = PatchingMetricKind::Logit;
    metric.token = model_->tokenizer().encode(QStringLiteral(" and")).front();
    const std::vector<int> corrupt = tokenizePrompt(model_->tokenizer(), corruptText, true);
    const FeaturePatching want = featurePatching(*model_, preparePatchingRuns(*model_, tokens_, corrupt), sae_, metric, 3);
    QCOMPARE(fp["hook"].toString(), QStringLiteral("blocks.0.hook_resid_post"));
    QVERIFY(std::abs(fp["metric_corrupt"].toDouble() - want.metricCorrupt) < 1e-6);
    const QJsonArray cells = fp["cells"].toArray();
    QCOMPARE(cells.size(), int(want.cells.size()));
    for (int i = 0; i < 4; ++i) {
        const QJsonObject c = cells[i].toObject();
        QCOMPARE(c["feature"].toInt(), want.cells[size_t(i)].feature);
        QCOMPARE(c["position"].toInt(), want.cells[size_t(i)].position);
        QVERIFY(std::abs(c["attribution"].toDouble() - want.cells[size_t(i)].attribution) < 1e-6);
        if (i < 3) QVERIFY(std::abs(c["patched"].toDouble() - want.cells[size_t(i)].patched) < 1e-6);
        else QVERIFY(c["patched"].isNull());
    }
}

void TestCliFeatures::bundledDictionaryByName() {
    // "--sae resid-topk": the SAE bundled with the demo model, as the reference of tools/train_demo_features.py saw it
    const QJsonObject ref = readJsonObject(attnscope::test::sourceFile(QStringLiteral("tests/data/features/demo_reference.json")));
    const QJsonObject f = demoDumpOf(attnscope::test::attnscopeExe(), tmp_.path(),
                                     {"--prompt", ref["prompt"].toString(), "--sae", "resid-topk", "--features"}, QStringLiteral("features"));
    QCOMPARE(f["architecture"].toString(), QStringLiteral("topk"));
    const QJsonObject want = ref["dictionaries"].toObject()["resid-topk"].toObject();
    QVERIFY(std::abs(f["reconstruction"].toObject()["fvu"].toDouble() - want["fvu"].toDouble()) < 1e-4);
    QCOMPARE(f["positions"].toArray()[3].toObject()["top"].toArray().size(), want["features"].toArray()[3].toArray().size());
}

void TestCliFeatures::badInvocations() {
    const QString exe = attnscope::test::attnscopeExe();
    CliRun r = runCli(exe, {"--model", "demo", "--prompt", "x", "--features", "--dump-json", tmp_.filePath("a.json")});
    QCOMPARE(r.exitCode, 2); // a usage error
    QVERIFY2(r.err.contains(QStringLiteral("--features, --feature, --steer, --feature-patching and --hook go with --sae PATH")), qPrintable(r.err));
    r = runCli(exe, {"--model", "demo", "--prompt", "x y", "--sae", saePath_, "--feature-patching", "--metric", "logit: and", "--dump-json",
                     tmp_.filePath("f.json")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("--feature-patching needs --corrupt-prompt TEXT (or --corrupt-token-ids)")), qPrintable(r.err));
    r = runCli(exe, {"--model", "demo", "--prompt", "x", "--sae", saePath_, "--features"});
    QVERIFY2(r.err.contains(QStringLiteral("--sae adds to the --dump-json output: give --dump-json FILE too")), qPrintable(r.err));
    r = runCli(exe, {"--model", "demo", "--prompt", "x", "--sae", saePath_, "--hook", "blocks.9.hook_resid_post", "--features",
                     "--dump-json", tmp_.filePath("b.json")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(QStringLiteral("hook blocks.9.hook_resid_post names layer 9 but the model has 2 layers (0..1)")), qPrintable(r.err));
    r = runCli(exe, {"--model", "demo", "--prompt", "x", "--sae", saePath_, "--steer", "7=far", "--dump-json", tmp_.filePath("c.json")});
    QVERIFY2(r.err.contains(QStringLiteral("\"7=far\" is not a feature edit")), qPrintable(r.err));
    r = runCli(exe, {"--model", "demo", "--prompt", "x", "--sae", saePath_, "--feature", "80", "--dump-json", tmp_.filePath("d.json")});
    QVERIFY2(r.err.contains(QStringLiteral("feature 80 is out of range: the dictionary has 80 features (0..79)")), qPrintable(r.err));
    r = runCli(exe, {"--model", "demo", "--prompt", "x", "--sae", tmp_.filePath("nothing"), "--features", "--dump-json", tmp_.filePath("e.json")});
    QVERIFY2(r.err.contains(QStringLiteral("nothing: no such file or folder")), qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(tmp_.filePath("e.json")));
}

QTEST_GUILESS_MAIN(TestCliFeatures)
#include "tst_cli_features.moc"
