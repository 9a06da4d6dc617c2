// The command line's --stitch and --finetune-diff (issue 15), run as a real process:
//  - --stitch writes the documented "stitch" object for every k (--layer all) or one k, with --text FILE;
//    a model stitched onto itself gives its own loss at every k and its own last logits; the variants are
//    labelled; a rank-deficient embedding (a tiny-gpt2 copy with two equal columns of wte) reports its rank;
//  - neither model file changes (bytes and modification times), whatever is stitched;
//  - bad input: a vocabulary mismatch names the first differing token, an out-of-range k its range, bad
//    options their values;
//  - --finetune-diff writes the ranking (all, or --top K).

#include "support/cli_process.h"
#include "support/safetensors_writer.h"
#include "support/test_paths.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

CliRun runExe(const QStringList& args) { return runCli(attnscope::test::attnscopeExe(), args); }
QJsonObject readJson(const QString& path) { return QJsonDocument::fromJson(readFile(path)).object(); }

const QString kText = QStringLiteral("In the beginning God created the heaven and the earth. And the earth was without form, "
                                     "and void; and darkness was upon the face of the deep.");

/// Content hash and modification time of every file in a folder.
QStringList fingerprint(const QString& dir) {
    QStringList out;
    for (const QFileInfo& f : QDir(dir).entryInfoList(QDir::Files, QDir::Name))
        out << f.fileName() + QLatin1Char(' ') + QString::fromLatin1(QCryptographicHash::hash(readFile(f.filePath()), QCryptographicHash::Sha256).toHex()) +
                   QLatin1Char(' ') + QString::number(f.lastModified().toMSecsSinceEpoch());
    return out;
}

} // namespace

class TestCliStitch : public QObject {
    Q_OBJECT
private slots:
    void stitchesEveryLayer();
    void selfStitchIsTheModel();
    void variantsAreLabelled();
    void rankDeficientEmbeddingIsReported();
    void modelFilesNeverChange();
    void reportsBadInput();
    void finetuneDiffWritesTheRanking();
    void bundledVariantByName();

private:
    QTemporaryDir dir_;
};

void TestCliStitch::stitchesEveryLayer() {
    const QString text = dir_.filePath("genesis.txt");
    writeFile(text, kText.toUtf8());
    const QString out = dir_.filePath("stitch.json");
    const CliRun r = runExe({"--model", "demo", "--stitch", demoDir() + "/../demo-variant", "--layer", "all", "--text", text,
                             "--dump-json", out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject dump = readJson(out);
    QVERIFY(dump.contains("token_ids") && dump.contains("logits_last")); // the usual dump of model A, plus "stitch"
    const QJsonObject s = dump["stitch"].toObject();
    QCOMPARE(s["model_b"].toString(), demoDir() + "/../demo-variant");
    QCOMPARE(s["inverse"].toString(), QString("pinv"));
    QCOMPARE(s["variant"].toString(), QString("pinv"));
    QCOMPARE(s["embedding"].toString(), QString("W_E"));
    QCOMPARE(s["final_norm_a"].toBool(), false);
    QCOMPARE(s["rcond"].toDouble(), 1e-5);
    QCOMPARE(s["rank_b"].toInt(), 128);
    QVERIFY(s["full_rank_b"].toBool());
    QVERIFY(s["identity_error"].isNull());
    const QJsonArray layers = s["layers"].toArray();
    QCOMPARE(layers.size(), 3); // k = 0, 1, 2 for the 2-layer demo
    for (int k = 0; k < 3; ++k) {
        const QJsonObject l = layers[k].toObject();
        QCOMPARE(l["k"].toInt(), k);
        for (const char* key : {"loss", "loss_a", "loss_b", "agree_a", "agree_b", "norm_ratio"}) QVERIFY2(l[key].isDouble(), key);
        QVERIFY(l["loss"].toDouble() > 0 && l["loss"].toDouble() < 20);
        QVERIFY(l["agree_a"].toDouble() >= 0 && l["agree_b"].toDouble() <= 1);
        QCOMPARE(l["logits_last"].toArray().size(), 4096);
        QCOMPARE(l["loss_a"].toDouble(), layers[0].toObject()["loss_a"].toDouble());
    }
    // one k only
    const CliRun one = runExe({"--model", "demo", "--stitch", demoDir() + "/../demo-variant", "--layer", "1", "--prompt", kText,
                               "--dump-json", dir_.filePath("one.json")});
    QVERIFY2(one.exitCode == 0, qPrintable(one.err));
    const QJsonArray l1 = readJson(dir_.filePath("one.json"))["stitch"].toObject()["layers"].toArray();
    QCOMPARE(l1.size(), 1);
    QCOMPARE(l1[0].toObject()["k"].toInt(), 1);
    QCOMPARE(l1[0].toObject()["loss"].toDouble(), layers[1].toObject()["loss"].toDouble()); // --text FILE = --prompt TEXT
}

void TestCliStitch::selfStitchIsTheModel() {
    const QString out = dir_.filePath("self.json");
    const CliRun r = runExe({"--model", "demo", "--stitch", "demo", "--layer", "all", "--prompt", kText, "--dump-json", out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject dump = readJson(out);
    const QJsonObject s = dump["stitch"].toObject();
    QVERIFY(s["identity_error"].isNull()); // two loads of the demo are two models: M is still I to float rounding
    const QJsonArray own = dump["logits_last"].toArray();
    for (const QJsonValue& v : s["layers"].toArray()) {
        const QJsonObject l = v.toObject();
        QVERIFY2(std::abs(l["loss"].toDouble() - l["loss_a"].toDouble()) < 1e-5, qPrintable(QString::number(l["loss"].toDouble())));
        QCOMPARE(l["agree_a"].toDouble(), 1.0);
        const QJsonArray last = l["logits_last"].toArray();
        double worst = 0;
        for (int i = 0; i < own.size(); ++i) worst = std::max(worst, std::abs(last[i].toDouble() - own[i].toDouble()));
        QVERIFY2(worst < 1e-4, qPrintable(QString::number(worst)));
    }
}

void TestCliStitch::variantsAreLabelled() {
    const QString out = dir_.filePath("variant.json");
    const CliRun r = runExe({"--model", "demo", "--stitch", demoDir() + "/../demo-variant", "--layer", "2", "--prompt", kText,
                             "--inverse", "transpose", "--stitch-final-norm", "--stitch-embedding", "W_U", "--dump-json", out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject s = readJson(out)["stitch"].toObject();
    QCOMPARE(s["inverse"].toString(), QString("transpose"));
    QCOMPARE(s["final_norm_a"].toBool(), true);
    QCOMPARE(s["embedding"].toString(), QString("W_U"));
    QCOMPARE(s["variant"].toString(), QString("transpose+ln_final_A@W_U"));
    QVERIFY2(s["variant_label"].toString().startsWith("ln_final_A(h)·E_Aᵀ·E_B"), qPrintable(s["variant_label"].toString()));
    QVERIFY(s["layers"].toArray()[0].toObject()["norm_ratio"].toDouble() > 10); // the transpose rescales h
}

void TestCliStitch::rankDeficientEmbeddingIsReported() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    // tiny-gpt2 with column 1 of wte equal to column 0: rank 63 of d_model 64
    const QString folder = dir_.filePath("deficient");
    QDir().mkpath(folder);
    copyFiles(testdata("tiny-gpt2"), folder, {"config.json", "vocab.json", "merges.txt"});
    std::vector<FixtureTensor> tensors = readSafetensors(testdata("tiny-gpt2/model.safetensors"));
    for (FixtureTensor& t : tensors)
        if (t.name == "wte.weight") {
            auto* f = reinterpret_cast<float*>(t.data.data());
            for (qint64 r = 0; r < t.shape[0]; ++r) f[r * t.shape[1] + 1] = f[r * t.shape[1]];
        }
    writeFile(folder + "/model.safetensors", buildSafetensors(tensors));
    const QString out = dir_.filePath("deficient.json");
    const CliRun r = runExe({"--model", folder, "--stitch", folder, "--layer", "0", "--prompt", "Hello world, hello", "--dump-json", out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject s = readJson(out)["stitch"].toObject();
    QCOMPARE(s["rank_b"].toInt(), 63);
    QCOMPARE(s["rank_a"].toInt(), 63);
    QCOMPARE(s["full_rank_b"].toBool(), false);
    QCOMPARE(s["d_model_b"].toInt(), 64);
}

void TestCliStitch::modelFilesNeverChange() {
    const QString a = dir_.filePath("demo-copy"), b = dir_.filePath("variant-copy");
    QDir().mkpath(a);
    QDir().mkpath(b);
    const QStringList files{"config.json", "vocab.json", "merges.txt", "model.safetensors"};
    copyFiles(demoDir(), a, files);
    copyFiles(demoDir() + "/../demo-variant", b, files);
    const QStringList before = fingerprint(a) + fingerprint(b);
    for (const QStringList& extra : {QStringList{"--layer", "all"}, QStringList{"--layer", "1", "--inverse", "transpose", "--stitch-final-norm"},
                                     QStringList{"--layer", "all", "--stitch-embedding", "W_U"}}) {
        const CliRun r = runExe(QStringList{"--model", a, "--stitch", b, "--prompt", kText, "--dump-json", dir_.filePath("x.json"), "--force"} + extra);
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    }
    const CliRun f = runExe({"--model", a, "--finetune-diff", b, "--dump-json", dir_.filePath("f.json"), "--force"});
    QVERIFY2(f.exitCode == 0, qPrintable(f.err));
    QCOMPARE(fingerprint(a) + fingerprint(b), before);
}

void TestCliStitch::reportsBadInput() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const QString out = dir_.filePath("bad.json");
    struct Case { QStringList args; int code; QString err; };
    const QList<Case> cases{
        {{"--model", testdata("tiny-gpt2"), "--stitch", testdata("stories260K/stories260K.gguf"), "--layer", "all", "--prompt", "Hi there",
          "--dump-json", out},
         1, "The models do not share a tokenizer: both have 512 tokens, but token 0 is “"},
        {{"--model", "demo", "--stitch", testdata("tiny-gpt2"), "--layer", "all", "--prompt", "In the beginning", "--dump-json", out},
         1, "The models do not share a tokenizer: d_vocab is 4096 in model A (demo) vs 512 in model B (tiny-gpt2)."},
        {{"--model", "demo", "--stitch", "demo", "--layer", "5", "--prompt", "In the beginning", "--dump-json", out}, 1,
         "--layer 5 is out of range: with --stitch, K counts model A's blocks that run (0 … 2), or give --layer all"},
        {{"--model", "demo", "--stitch", "demo", "--prompt", "In the beginning", "--dump-json", out}, 2, "--stitch needs --layer K"},
        {{"--model", "demo", "--stitch", "demo", "--layer", "all", "--dump-json", out}, 2, "--stitch needs the text to stitch on"},
        {{"--model", "demo", "--stitch", "demo", "--layer", "0", "--prompt", "In the", "--inverse", "inverse", "--dump-json", out}, 2,
         "--inverse must be pinv or transpose, got 'inverse'"},
        {{"--model", "demo", "--stitch", "demo", "--layer", "0", "--prompt", "In the", "--rcond", "2", "--dump-json", out}, 2,
         "--rcond must be a number in (0, 1), got '2'"},
        {{"--model", "demo", "--stitch", "demo", "--layer", "0", "--prompt", "In the", "--stitch-embedding", "W_X", "--dump-json", out}, 2,
         "--stitch-embedding must be W_E or W_U, got 'W_X'"},
        {{"--model", "demo", "--prompt", "In the", "--inverse", "pinv", "--dump-json", out}, 2, "go with --stitch"},
        {{"--model", "demo", "--stitch", "demo", "--layer", "0", "--text", dir_.filePath("missing.txt"), "--dump-json", out}, 1,
         "missing.txt: cannot read"},
        {{"--model", "demo", "--stitch", "demo", "--layer", "0", "--text", "x.txt", "--prompt", "In", "--dump-json", out}, 2,
         "give --prompt, --text or --token-ids, not two of them"},
        {{"--model", "demo", "--stitch", "demo", "--layer", "0", "--prompt", "In", "--no-bos", "--dump-json", out}, 1,
         "The text has 1 token(s): the next-token loss needs at least 2."},
        {{"--model", "demo", "--finetune-diff", testdata("tiny-gpt2"), "--dump-json", out}, 1, "The two models differ in"},
        {{"--model", "demo", "--finetune-diff", "demo", "--prompt", "x", "--dump-json", out}, 2, "--finetune-diff MODEL_B needs --dump-json FILE"},
        {{"--model", "demo", "--stitch", "no-such-model-anywhere", "--layer", "0", "--prompt", "In the", "--dump-json", out}, 1, "no-such-model-anywhere"},
    };
    for (const Case& c : cases) {
        const CliRun r = runExe(c.args);
        QVERIFY2(r.exitCode == c.code, qPrintable(c.args.join(' ') + " → " + QString::number(r.exitCode) + ": " + r.err));
        QVERIFY2(r.err.contains(c.err), qPrintable(c.args.join(' ') + " → " + r.err));
    }
    QVERIFY(!QFileInfo::exists(out)); // nothing half-written
}

void TestCliStitch::finetuneDiffWritesTheRanking() {
    const QString out = dir_.filePath("ranking.json");
    const CliRun r = runExe({"--model", "demo", "--finetune-diff", demoDir() + "/../demo-variant", "--dump-json", out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject f = readJson(out)["finetune_diff"].toObject();
    QCOMPARE(f["model_b"].toString(), demoDir() + "/../demo-variant");
    const QJsonArray heads = f["heads"].toArray(), neurons = f["neurons"].toArray();
    QCOMPARE(heads.size(), 8);
    QCOMPARE(neurons.size(), 1024);
    for (int i = 1; i < heads.size(); ++i) QVERIFY(heads[i - 1].toObject()["relative"].toDouble() >= heads[i].toObject()["relative"].toDouble());
    const QJsonObject h0 = heads[0].toObject();
    for (const char* key : {"layer", "head", "delta", "norm", "relative", "parts"}) QVERIFY2(h0.contains(key), key);
    QCOMPARE(h0["relative"].toDouble(), h0["delta"].toDouble() / h0["norm"].toDouble());
    QVERIFY(neurons[0].toObject().contains("neuron"));
    QVERIFY(f["tensors"].toArray().size() > 20);
    const CliRun top = runExe({"--model", "demo", "--finetune-diff", demoDir() + "/../demo-variant", "--top", "3", "--dump-json",
                               dir_.filePath("top.json")});
    QVERIFY2(top.exitCode == 0, qPrintable(top.err));
    const QJsonObject t = readJson(dir_.filePath("top.json"))["finetune_diff"].toObject();
    QCOMPARE(t["heads"].toArray().size(), 3);
    QCOMPARE(t["neurons"].toArray().size(), 3);
    QCOMPARE(t["heads"].toArray()[0].toObject(), h0);
}

/// The installed program has no resources/ folder: "demo-variant" names the copy inside the executable
/// (app/CMakeLists.txt), from any working directory, and gives the numbers of the source folder.
void TestCliStitch::bundledVariantByName() {
    QTemporaryDir empty; // the working directory: no demo-variant folder here
    const QString before = QDir::currentPath();
    QVERIFY(QDir::setCurrent(empty.path()));
    const CliRun byName = runExe({"--model", "demo", "--finetune-diff", "demo-variant", "--top", "3", "--dump-json", "name.json"});
    const CliRun stitch = runExe({"--model", "demo", "--stitch", "demo-variant", "--layer", "1", "--prompt", kText.left(60),
                                  "--dump-json", "stitch.json"});
    QDir::setCurrent(before);
    QVERIFY2(byName.exitCode == 0, qPrintable(byName.err));
    QVERIFY2(stitch.exitCode == 0, qPrintable(stitch.err));
    const CliRun byPath = runExe({"--model", "demo", "--finetune-diff", demoDir() + "/../demo-variant", "--top", "3", "--dump-json",
                                  dir_.filePath("path.json")});
    QVERIFY2(byPath.exitCode == 0, qPrintable(byPath.err));
    const QJsonObject n = readJson(empty.filePath("name.json"))["finetune_diff"].toObject(),
                      p = readJson(dir_.filePath("path.json"))["finetune_diff"].toObject();
    QCOMPARE(n["model_b"].toString(), QString("demo-variant"));
    QCOMPARE(n["heads"].toArray().size(), 3);
    QCOMPARE(n["heads"], p["heads"]);
    QCOMPARE(n["neurons"], p["neurons"]);
    QCOMPARE(readJson(empty.filePath("stitch.json"))["stitch"].toObject()["model_b"].toString(), QString("demo-variant"));
}

QTEST_MAIN(TestCliStitch)
#include "tst_cli_stitch.moc"
