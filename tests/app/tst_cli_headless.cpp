// The headless command line, run as a real process (no display): --dump-json values against the
// picoGPT reference for tiny-gpt2 (tolerances as in tst_forward: 1e-4 logits, 1e-5 attention),
// --export files by name, pixel size and content, and errors by message and exit code.

#include "support/reference_json.h"
#include "support/cli_process.h"
#include "support/image_checks.h"
#include "support/test_paths.h"

#include <QImage>
#include <QJsonArray>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {
using Run = CliRun;

Run runExe(const QStringList& args) { return runCli(attnscope::test::attnscopeExe(), args); }

} // namespace

class TestCliHeadless : public QObject {
    Q_OBJECT
private slots:
    void dumpJsonMatchesReference();
    void dumpJsonWithoutBos();
    void exportsAllHeadsAsPng();
    void exportsOneHeadAsSvgAndPdf();
    void reportsErrors();
    void refusesToOverwriteWithoutForce();
    void dumpStepsMatchesDumpJson();
    void memoryBudgetFromTheEnvironment();
};

void TestCliHeadless::dumpJsonMatchesReference() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QTemporaryDir dir;
    const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
    const QString out = dir.filePath("dump.json");
    const Run r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", ref["prompt"].toString(), "--layer", "1",
                          "--head", "3", "--dump-json", out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject dump = readJsonObject(out);
    QCOMPARE(intsFromJson(dump["token_ids"].toArray()), intsFromJson(ref["token_ids"].toArray()));
    QCOMPARE(dump["tokens"].toArray().size(), 18);
    QCOMPARE(dump["tokens"].toArray().at(1).toString(), QString("The"));
    const QJsonObject f32 = ref["variants"].toObject()["float32"].toObject();
    const Matrix refLogits = matrixFromJson(f32["logits"].toArray());
    const QJsonArray last = dump["logits_last"].toArray();
    QCOMPARE(last.size(), 512);
    double maxDiff = 0;
    for (int v = 0; v < 512; ++v) maxDiff = std::max(maxDiff, std::abs(last[v].toDouble() - refLogits(17, v)));
    QVERIFY2(maxDiff <= 1e-4, qPrintable(QString::number(maxDiff)));
    const QJsonArray top = dump["top_next_tokens"].toArray();
    QCOMPARE(top.size(), 10);
    QCOMPARE(top[0].toObject()["id"].toInt(), f32["argmax_per_position"].toArray()[17].toInt());
    for (int i = 1; i < 10; ++i)
        QVERIFY(top[i - 1].toObject()["logit"].toDouble() >= top[i].toObject()["logit"].toDouble());
    const QJsonObject attn = dump["attention"].toObject();
    QCOMPARE(attn["layer"].toInt(), 1);
    QCOMPARE(attn["head"].toInt(), 3);
    const Matrix pattern = matrixFromJson(attn["pattern"].toArray());
    QVERIFY(maxAbsDiff(pattern, matrixFromJson(f32["attention_layer1_head3"].toArray())) <= 1e-5);
}

void TestCliHeadless::dumpJsonWithoutBos() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QTemporaryDir dir;
    const QString out = dir.filePath("dump.json");
    const Run r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "Hello world", "--no-bos", "--dump-json", out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject dump = readJsonObject(out);
    // tiny-gpt2 reference tokenizer case: "Hello world" -> [39, 68, 297, 78, 476, 335], no BOS
    QCOMPARE(intsFromJson(dump["token_ids"].toArray()), (std::vector<int>{39, 68, 297, 78, 476, 335}));
    QVERIFY(!dump.contains("attention"));
}

void TestCliHeadless::exportsAllHeadsAsPng() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QTemporaryDir dir;
    const Run r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "The cat sat on the mat.", "--export",
                          dir.path(), "--width", "640", "--height", "560", "--scale", "2"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QStringList expected;
    for (int l = 0; l < 2; ++l)
        for (int h = 0; h < 4; ++h) expected << QString("L%1_H%2.png").arg(l).arg(h);
    QStringList files = QDir(dir.path()).entryList(QDir::Files, QDir::Name);
    expected.sort();
    QCOMPARE(files, expected);
    const QImage img(dir.filePath("L1_H3.png"));
    QCOMPARE(img.size(), QSize(1280, 1120));
    QVERIFY(distinctColours(img) > 30);
}

void TestCliHeadless::exportsOneHeadAsSvgAndPdf() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QTemporaryDir dir;
    for (const QString fmt : {"svg", "pdf"}) {
        const Run r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "a <b> & c", "--layer", "0", "--head", "2",
                              "--export", dir.path(), "--format", fmt});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    }
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files, QDir::Name), (QStringList{"L0_H2.pdf", "L0_H2.svg"}));
    QFile svg(dir.filePath("L0_H2.svg"));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    const QByteArray s = svg.readAll();
    QVERIFY(s.contains("<svg"));
    QVERIFY(s.contains("&lt;") || s.contains("&#60;")); // the "<" of token "<" is escaped
    QVERIFY(s.contains("layer 0, head 2"));
    QFile pdf(dir.filePath("L0_H2.pdf"));
    QVERIFY(pdf.open(QIODevice::ReadOnly));
    QVERIFY(pdf.read(5) == "%PDF-");
    QVERIFY(pdf.size() > 2000);
}

void TestCliHeadless::reportsErrors() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QTemporaryDir dir;
    Run r = runExe({"--model", dir.filePath("nope"), "--prompt", "x", "--dump-json", dir.filePath("o.json")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(dir.filePath("nope")), qPrintable(r.err));
    r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "x", "--layer", "2", "--head", "0", "--dump-json",
                dir.filePath("o.json")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("--layer 2 is out of range") && r.err.contains("2 layers"), qPrintable(r.err));
    r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", QString(200, 'x').replace("x", "ab "), "--dump-json",
                dir.filePath("o.json")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("context (n_ctx) is 64"), qPrintable(r.err));
    r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "x", "--layer", "1", "--dump-json", "o.json"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("--layer and --head go together"), qPrintable(r.err));
    r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "x", "--export", dir.path(), "--format", "gif"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.err.contains("png, svg or pdf"));
    QVERIFY(!QFileInfo::exists(dir.filePath("o.json")));
}

void TestCliHeadless::refusesToOverwriteWithoutForce() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QTemporaryDir dir;
    const QString out = dir.filePath("dump.json");
    {
        QFile f(out);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("keep me");
    }
    Run r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "x", "--dump-json", out});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("already exists (use --force to overwrite)"), qPrintable(r.err));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("keep me"));
    f.close();
    r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "x", "--dump-json", out, "--force"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(readJsonObject(out).contains("logits_last"));
}

// --dump-steps: steps in the documented order, shapes with S = 18, masked cells as null, and the
// pattern step equal to --dump-json's attention pattern (and so to the picoGPT reference).
void TestCliHeadless::dumpStepsMatchesDumpJson() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QTemporaryDir dir;
    const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
    const QString steps = dir.filePath("steps.json"), dump = dir.filePath("dump.json");
    const QStringList common{"--model", testdata("tiny-gpt2"), "--prompt", ref["prompt"].toString(), "--layer", "1",
                             "--head", "3"};
    Run r = runExe(common + QStringList{"--dump-steps", steps});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY(r.out.contains("wrote " + steps));
    r = runExe(common + QStringList{"--dump-json", dump});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject s = readJsonObject(steps);
    QCOMPARE(s["layer"].toInt(), 1);
    QCOMPARE(s["head"].toInt(), 3);
    const QJsonArray list = s["steps"].toArray();
    QStringList names;
    for (const QJsonValue& v : list) names << v.toObject()["name"].toString();
    QCOMPARE(names, (QStringList{"embed", "pos_embed", "resid_pre", "ln1", "q", "k", "v", "scores", "scaled", "masked",
                                 "pattern", "z", "concat", "attn_out", "head_result_0", "head_result_1",
                                 "head_result_2", "head_result_3", "attn_out_additive", "resid_mid"}));
    const QJsonObject q = list[4].toObject();
    QCOMPARE(q["shape"].toArray(), (QJsonArray{18, 16}));
    QCOMPARE(q["values"].toArray().size(), 18);
    QCOMPARE(q["values"].toArray()[0].toArray().size(), 16);
    const QJsonArray masked = list[9].toObject()["values"].toArray();
    QVERIFY(masked[0].toArray()[1].isNull());
    QVERIFY(masked[1].toArray()[0].isDouble());
    const Matrix pattern = matrixFromJson(list[10].toObject()["values"].toArray());
    const Matrix fromDump = matrixFromJson(readJsonObject(dump)["attention"].toObject()["pattern"].toArray());
    QCOMPARE(pattern.rows(), Eigen::Index(18));
    QVERIFY2(maxAbsDiff(pattern, fromDump) <= 1e-6, qPrintable(QString::number(maxAbsDiff(pattern, fromDump))));
    const QJsonObject f32 = ref["variants"].toObject()["float32"].toObject();
    QVERIFY(maxAbsDiff(pattern, matrixFromJson(f32["attention_layer1_head3"].toArray())) <= 1e-5);
    // refuses to overwrite, and --layer/--head are required
    r = runExe(common + QStringList{"--dump-steps", steps});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(steps + ": already exists (use --force to overwrite)"), qPrintable(r.err));
    r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "hi", "--dump-steps", dir.filePath("x.json")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("--dump-steps needs --layer L and --head H"), qPrintable(r.err));
}

// ATTNSCOPE_MEMORY_BUDGET: a value that is not a positive integer stops before any work (exit 1, as a bad
// ATTNSCOPE_ISA does); a budget too small for the cache is refused naming the variable as its source.
void TestCliHeadless::memoryBudgetFromTheEnvironment() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QTemporaryDir dir;
    const QString out = dir.filePath("o.json");
    struct Unset {
        ~Unset() { qunsetenv("ATTNSCOPE_MEMORY_BUDGET"); }
    } unset;
    qputenv("ATTNSCOPE_MEMORY_BUDGET", "abc"); // inherited by the process
    Run r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "x", "--dump-json", out});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(QStringLiteral("attnscope: ATTNSCOPE_MEMORY_BUDGET=abc is not a number of bytes: give a positive "
                                           "integer, e.g. ATTNSCOPE_MEMORY_BUDGET=4000000000 for 4 GB, or unset it for half of "
                                           "the available memory.\n")),
             qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(out));
    qputenv("ATTNSCOPE_MEMORY_BUDGET", "1000");
    r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "The cat sat", "--dump-json", out});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("but the budget is 1000 bytes (set by ATTNSCOPE_MEMORY_BUDGET). Use a shorter prompt."), qPrintable(r.err));
    QVERIFY2(!r.err.contains("half of the available memory"), qPrintable(r.err));
    qputenv("ATTNSCOPE_MEMORY_BUDGET", "100000000");
    r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "The cat", "--dump-json", out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QCOMPARE(readJsonObject(out)["token_ids"].toArray().size(), 4);
}

QTEST_GUILESS_MAIN(TestCliHeadless)
#include "tst_cli_headless.moc"
