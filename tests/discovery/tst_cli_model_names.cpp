// The command line as a real process (no display): models by name in the headless modes (the
// Hugging Face snapshot of "gpt2" in a fake cache, Ollama names, names that resolve to nothing),
// --screenshot of several views (PNG of the requested size with real content, views that differ),
// its usage errors, and --help listing every mode with an example.

#include "model/formats/open_support.h"
#include "model/formats/model_probe.h"
#include "support/cli_process.h"
#include "support/image_checks.h"
#include "support/fake_model_stores.h"
#include "support/safetensors_writer.h"
#include "support/test_paths.h"

#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {
CliRun runExe(const QStringList& args) { return runCli(attnscope::test::attnscopeExe(), args); }

QJsonObject readJson(const QString& path) { return QJsonDocument::fromJson(readFile(path)).object(); }
} // namespace

class TestCliModelNames : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void namesResolveInEveryHeadlessMode();
    void unresolvableNamesAreClearErrors();
    void screenshotsHaveTheSizeAndContent();
    void screenshotOfASession();
    void screenshotUsageErrors();
    void screenshotSizeTokenizerAndContext();
    void helpListsEveryMode();

private:
    QTemporaryDir tmp_;
    FakeStores stores_;
};

void TestCliModelNames::initTestCase() {
    // without ../shared/testdata the gpt2 snapshot's files are empty: the cases that open them skip
    stores_ = buildFakeStores(tmp_.path());
    useFakeStores(stores_); // inherited by the attnscope processes
}

void TestCliModelNames::namesResolveInEveryHeadlessMode() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    // --dump-json by repo name: the snapshot refs/main names (tiny-gpt2's files)
    const QString byName = tmp_.filePath("byname.json"), byPath = tmp_.filePath("bypath.json");
    CliRun r = runExe({"--model", "gpt2", "--prompt", "The cat", "--dump-json", byName, "--layer", "1", "--head", "2"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "The cat", "--dump-json", byPath, "--layer", "1", "--head", "2"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject a = readJson(byName), b = readJson(byPath);
    QCOMPARE(a["token_ids"].toArray().size(), 4); // BOS, The, ␣c, at
    QCOMPARE(a["logits_last"].toArray().size(), 512);
    QCOMPARE(a, b); // the same model, found by name
    // hf: prefix, --project (no prompt), --export and --dump-steps with the name
    r = runExe({"--model", "hf:gpt2", "--project", "ov", "--layer", "0", "--head", "1", "--top", "3", "--dump-json", tmp_.filePath("ov.json")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QCOMPARE(readJson(tmp_.filePath("ov.json"))["top"].toArray().size(), 3);
    r = runExe({"--model", "gpt2", "--prompt", "The cat", "--export", tmp_.filePath("heads")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QCOMPARE(QDir(tmp_.filePath("heads")).entryList(QDir::Files).size(), 8);
    r = runExe({"--model", "gpt2", "--prompt", "The cat", "--layer", "0", "--head", "0", "--dump-steps", tmp_.filePath("steps.json")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QCOMPARE(readJson(tmp_.filePath("steps.json"))["layer"].toInt(), 0);
    // the positional name works in a headless mode too
    r = runExe({"gpt2", "--screenshot", "attention", "--out", tmp_.filePath("pos.png"), "--width", "1600", "--height", "1000"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("wrote " + tmp_.filePath("pos.png")), qPrintable(r.out));
}

void TestCliModelNames::unresolvableNamesAreClearErrors() {
    CliRun r = runExe({"--model", "someone/nothing", "--prompt", "x", "--dump-json", tmp_.filePath("n.json")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("someone/nothing: no such file or folder, and not in the Hugging Face cache (" + stores_.hubCache +
                            " has no models--someone--nothing)"),
             qPrintable(r.err));
    r = runExe({"--model", "ollama:qwen2:0.5b", "--prompt", "x", "--dump-json", tmp_.filePath("n.json")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("Ollama model 'qwen2:0.5b' is not in " + stores_.ollama) && r.err.contains("ollama pull qwen2:0.5b"),
             qPrintable(r.err));
    // found, but not openable yet: the reason, naming the blob
    r = runExe({"--model", "ollama:llama3.2:1b", "--prompt", "x", "--dump-json", tmp_.filePath("n.json")});
    if (!canOpen(probeModel(stores_.ollamaBlob)).ok) {
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(stores_.ollamaBlob + ": GGUF files cannot be opened yet"), qPrintable(r.err));
    }
    r = runExe({"--model", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "--prompt", "x", "--dump-json", tmp_.filePath("n.json")});
    if (!openableHfModelTypes().contains("llama")) {
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(stores_.tinyLlamaSnapshot + ": model type 'llama' is not supported yet"), qPrintable(r.err));
    }
    QVERIFY(!QFileInfo::exists(tmp_.filePath("n.json")));
}

void TestCliModelNames::screenshotsHaveTheSizeAndContent() {
    QMap<QString, QImage> shots;
    for (const QString view : {"attention", "logit-attribution", "head-detectors", "logit-lens", "embedding-space", "attention-steps"}) {
        const QString png = tmp_.filePath(view + ".png");
        const CliRun r = runExe({"--screenshot", view, "--out", png, "--model", "demo", "--layer", "1", "--head", "1",
                                 "--width", "1600", "--height", "1000"});
        QVERIFY2(r.exitCode == 0, qPrintable(view + ": " + r.err));
        const QImage img(png);
        QCOMPARE(img.size(), QSize(1600, 1000));
        QVERIFY2(distinctColours(img) > 60, qPrintable(view + QString(": %1 colours").arg(distinctColours(img))));
        shots.insert(view, img);
    }
    // each view draws something else
    const QStringList views = shots.keys();
    for (int i = 0; i < views.size(); ++i)
        for (int j = i + 1; j < views.size(); ++j) QVERIFY2(shots[views[i]] != shots[views[j]], qPrintable(views[i] + " = " + views[j]));
    // the attention view shows the heatmap: viridis yellow (the attention on BOS) is on the picture
    const QImage& att = shots["attention"];
    int yellow = 0;
    for (int y = 0; y < att.height(); y += 2)
        for (int x = 0; x < att.width(); x += 2) {
            const QColor c = att.pixelColor(x, y);
            yellow += c.red() > 220 && c.green() > 200 && c.blue() < 60;
        }
    QVERIFY2(yellow > 100, qPrintable(QString::number(yellow)));
    // an existing file needs --force
    CliRun r = runExe({"--screenshot", "attention", "--out", tmp_.filePath("attention.png")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY(r.err.contains("already exists (use --force to overwrite)"));
}

void TestCliModelNames::screenshotOfASession() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    // a session picks the panel settings of the picture: the lens coloured by the rank of a target
    const QJsonObject session{{"format", "attnscope-session"}, {"version", 1}, {"model", testdata("tiny-gpt2")},
                              {"prompt", "The cat sat"}, {"layer", 0}, {"head", 0},
                              {"panels", QJsonObject{{"logit-lens", QJsonObject{{"target", "#65"}, {"view", "rankings"}}}}}};
    writeFile(tmp_.filePath("s.attnscope"), QJsonDocument(session).toJson());
    const QString plain = tmp_.filePath("lens-plain.png"), ranked = tmp_.filePath("lens-ranked.png");
    CliRun r = runExe({"--screenshot", "logit-lens", "--out", plain, "--model", testdata("tiny-gpt2"), "--prompt", "The cat sat"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    r = runExe({"--screenshot", "logit-lens", "--out", ranked, "--session-file", tmp_.filePath("s.attnscope")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(!r.err.contains("warning"), qPrintable(r.err));
    const QImage a(plain), b(ranked);
    QCOMPARE(a.size(), QSize(1600, 1000)); // the default size
    QCOMPARE(b.size(), a.size());
    QVERIFY(a != b);
    // a session value that cannot be restored is a warning, the picture is still written
    QJsonObject bad = session;
    bad["panels"] = QJsonObject{{"logit-lens", QJsonObject{{"topK", 0}}}};
    writeFile(tmp_.filePath("bad.attnscope"), QJsonDocument(bad).toJson());
    r = runExe({"--screenshot", "logit-lens", "--out", tmp_.filePath("bad.png"), "--session-file", tmp_.filePath("bad.attnscope")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.contains("warning: Logit lens: topK = 0 is not an integer in 1..100"), qPrintable(r.err));
    writeFile(tmp_.filePath("junk.attnscope"), "junk");
    r = runExe({"--screenshot", "logit-lens", "--out", tmp_.filePath("junk.png"), "--session-file", tmp_.filePath("junk.attnscope")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(tmp_.filePath("junk.attnscope") + ": not valid JSON"), qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(tmp_.filePath("junk.png")));
}

void TestCliModelNames::screenshotUsageErrors() {
    CliRun r = runExe({"--screenshot", "sideways", "--out", tmp_.filePath("x.png")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("--screenshot must be one of attention, logit-attribution, attention-steps, attention-by-hand, "
                            "logit-lens, embedding-space, compare-models, circuits, features, graphs, head-detectors, ablation, stitch, "
                            "finetune-directions, got 'sideways'"),
             qPrintable(r.err));
    r = runExe({"--screenshot", "attention"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.err.contains("--screenshot needs --out FILE.png"));
    r = runExe({"--screenshot", "attention", "--out", tmp_.filePath("x.png"), "--layer", "1"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.err.contains("--layer and --head go together"));
    r = runExe({"--model", "demo", "--prompt", "x", "--dump-json", tmp_.filePath("x.json"), "--out", tmp_.filePath("x.png")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.err.contains("--out and --session-file go with --screenshot"));
    r = runExe({"--screenshot", "attention", "--out", tmp_.filePath("x.png"), "--model", "nobody/none"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY(r.err.contains("nobody/none: no such file or folder"));
}

/// --width/--height below the window's full minimum are honoured for a view that lays out smaller, and said
/// on stderr (with the size used) where it cannot; --tokenizer reaches the model; a prompt longer than n_ctx
/// fails as --dump-json does, instead of silently showing its last n_ctx tokens.
void TestCliModelNames::screenshotSizeTokenizerAndContext() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const QString small = tmp_.filePath("small.png");
    CliRun r = runExe({"--screenshot", "attention", "--out", small, "--model", "demo", "--width", "1100", "--height", "650"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(!r.err.contains("warning"), qPrintable(r.err));
    QCOMPARE(QImage(small).size(), QSize(1100, 650));
    QVERIFY2(r.out.contains("(1100×650, attention)"), qPrintable(r.out));
    QVERIFY(distinctColours(QImage(small)) > 60);
    // too small for any layout: the picture is the smallest the view allows, and stderr says so
    const QString tiny = tmp_.filePath("tiny.png");
    r = runExe({"--screenshot", "attention", "--out", tiny, "--model", "demo", "--width", "200", "--height", "150"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QSize used = QImage(tiny).size();
    QVERIFY2(used.width() > 200 && used.height() > 150, qPrintable(QString("%1×%2").arg(used.width()).arg(used.height())));
    QVERIFY2(r.err.contains(QStringLiteral("attnscope: warning: --width 200 --height 150 is smaller than the attention view can be "
                                           "laid out; the picture is %1×%2\n").arg(used.width()).arg(used.height())),
             qPrintable(r.err));
    QVERIFY2(r.out.contains(QStringLiteral("(%1×%2, attention)").arg(used.width()).arg(used.height())), qPrintable(r.out));
    // a llama2.c checkpoint whose tokenizer is not beside it under the name tokenizer.bin
    const QString stories = tmp_.filePath("stories.png");
    r = runExe({"--screenshot", "attention", "--out", stories, "--model", testdata("stories260K/stories260K.bin"), "--tokenizer",
                testdata("stories260K/tok512.bin"), "--prompt", "Once upon a time"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QCOMPARE(QImage(stories).size(), QSize(1600, 1000));
    r = runExe({"--screenshot", "attention", "--out", tmp_.filePath("notok.png"), "--model", testdata("stories260K/stories260K.bin"),
                "--prompt", "Once upon a time"});
    QCOMPARE(r.exitCode, 1); // without it: no tokenizer, as before
    QVERIFY2(r.err.contains("tokenizer.bin"), qPrintable(r.err));
    // a model with its own tokenizer: --tokenizer is an error naming both, not dropped in silence
    r = runExe({"--screenshot", "attention", "--out", tmp_.filePath("owntok.png"), "--model", testdata("tiny-gpt2"), "--tokenizer",
                testdata("stories260K/tok512.bin")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(QStringLiteral("attnscope: %1: this model has its own tokenizer; a separate tokenizer file (%2) goes "
                                           "with a llama2.c checkpoint (.bin) only")
                                .arg(testdata("tiny-gpt2"), QFileInfo(testdata("stories260K/tok512.bin")).absoluteFilePath())),
             qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(tmp_.filePath("owntok.png")));
    // 200 tokens on tiny-gpt2 (n_ctx 64): the --dump-json message and exit code, no picture
    const QString tooLong = tmp_.filePath("long.png");
    r = runExe({"--screenshot", "attention", "--out", tooLong, "--model", testdata("tiny-gpt2"), "--prompt",
                QString(200, 'x').replace("x", "ab ")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("but the model's context (n_ctx) is 64 tokens. Shorten the prompt by"), qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(tooLong));
}

void TestCliModelNames::helpListsEveryMode() {
    const CliRun r = runExe({"--help"});
    QCOMPARE(r.exitCode, 0);
    for (const char* example : {"attnscope [MODEL | SESSION.attnscope]", "attnscope gpt2", "--export heatmaps/", "--dump-json out.json",
                                "--dla \" created\"", "--logit-lens --top 5", "--dump-steps steps.json",
                                "--project ov --layer 1 --head 1", "--screenshot logit-lens --out lens.png", "attnscope --version",
                                "ollama:NAME[:TAG]"})
        QVERIFY2(r.out.contains(QString::fromUtf8(example)), example);
    // every option is documented
    for (const char* option : {"--model", "--prompt", "--no-bos", "--layer", "--head", "--export", "--format", "--width",
                               "--height", "--scale", "--dump-json", "--dump-steps", "--force", "--dla", "--position",
                               "--project", "--neuron", "--top", "--logit-lens", "--screenshot", "--out", "--session-file"})
        QVERIFY2(r.out.contains(QString::fromLatin1(option) + " ") || r.out.contains(QString::fromLatin1(option) + ","), option);
}

QTEST_MAIN(TestCliModelNames)
#include "tst_cli_model_names.moc"
