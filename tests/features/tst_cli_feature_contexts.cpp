// --feature-contexts, --shard, --merge and --contexts-db --feature run as a real process on the demo model with a
// random SAE: the summary JSON, shards merged equal to one pass, the feature card against the database, the SAE's
// files untouched with the database written beside them, and the messages for bad input.

#include "model/analysis/features/context_store.h"
#include "support/cli_process.h"
#include "support/dictionary_fixtures.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QCryptographicHash>
#include <QDirIterator>
#include <QJsonArray>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

CliRun runExe(const QStringList& args) { return runCli(attnscope::test::attnscopeExe(), args); }

/// name → SHA-256 of every file below dir.
std::map<QString, QByteArray> hashes(const QString& dir) {
    std::map<QString, QByteArray> h;
    QDirIterator it(dir, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        QFile f(it.next());
        if (f.open(QIODevice::ReadOnly)) h[f.fileName()] = QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256);
    }
    return h;
}

} // namespace

class TestCliFeatureContexts : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void passShardsMergeAndCard();
    void databaseBesideTheSaeWhichStaysUnchanged();
    void reportsBadInput();

private:
    QTemporaryDir tmp_;
    QString sae_, corpus_;
};

void TestCliFeatureContexts::initTestCase() {
    const int d = 128;
    DictionaryParams params = roundedTo(randomParams(d, 64, d, 5), QStringLiteral("F32"));
    params.W_enc *= 0.5;
    sae_ = tmp_.filePath(QStringLiteral("sae"));
    writeSaeLensFolder(sae_, params, QStringLiteral("standard"),
                       QJsonObject{{"architecture", "standard"}, {"d_in", d}, {"d_sae", 64}, {"apply_b_dec_to_input", false},
                                   {"metadata", QJsonObject{{"hook_name", "blocks.1.hook_resid_post"}}}});
    corpus_ = tmp_.filePath(QStringLiteral("corpus"));
    QVERIFY(QDir().mkpath(corpus_));
    QFile a(corpus_ + QStringLiteral("/a.txt")), b(corpus_ + QStringLiteral("/b.jsonl"));
    QVERIFY(a.open(QIODevice::WriteOnly) && b.open(QIODevice::WriteOnly));
    for (int i = 0; i < 4; ++i) a.write("In the beginning God created the heaven and the earth. And the earth was without form.\n");
    a.write("Two bad bytes: \xff and \x80.\n");
    b.write("{\"text\": \"And God said, Let there be light: and there was light.\"}\n{\"text\": \"And God saw the light.\"}\n");
}

void TestCliFeatureContexts::passShardsMergeAndCard() {
    const QString full = tmp_.filePath(QStringLiteral("full.sqlite"));
    const QStringList common{"--model", "demo", "--sae", sae_, "--feature-contexts", corpus_, "--top", "3", "--window", "16"};
    CliRun r = runExe(common + QStringList{"--contexts-db", full, "--dump-json", tmp_.filePath("full.json")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains(QStringLiteral("2 corpus byte(s) are not UTF-8")), qPrintable(r.err));
    const QJsonObject s = readJsonObject(tmp_.filePath("full.json"))["feature_contexts"].toObject();
    QCOMPARE(s["bad_utf8_bytes"].toInt(), 2);
    QCOMPARE(s["top"].toInt(), 3);
    QCOMPARE(s["window_tokens"].toInt(), 16);
    QCOMPARE(s["hook"].toString(), QStringLiteral("blocks.1.hook_resid_post"));
    QVERIFY(s["windows_total"].toInt() > 4);
    QCOMPARE(s["windows_done"].toInt(), s["windows_total"].toInt());
    QVERIFY(s["tokens"].toInt() > s["windows_total"].toInt());
    QVERIFY(s.contains("conventions") && s["db"].toString() == full);

    for (const char* shard : {"0/2", "1/2"}) {
        r = runExe(common + QStringList{"--shard", shard, "--contexts-db", tmp_.filePath(QStringLiteral("s%1.sqlite").arg(shard[0]))});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    }
    const QString merged = tmp_.filePath(QStringLiteral("merged.sqlite"));
    r = runExe({"--merge", tmp_.filePath("s0.sqlite"), tmp_.filePath("s1.sqlite"), "--contexts-db", merged, "--dump-json",
                tmp_.filePath("merged.json")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject m = readJsonObject(tmp_.filePath("merged.json"))["feature_contexts"].toObject();
    for (const char* k : {"windows_done", "windows_total", "tokens", "positions", "bad_utf8_bytes"}) QCOMPARE(m[k].toInt(), s[k].toInt());
    QCOMPARE(m["shard"].toString(), QStringLiteral("merged"));

    int feature = -1; // one with contexts
    {
        const ContextStore store(full, false);
        for (int f = 0; f < 64 && feature < 0; ++f)
            if (store.records(f).size() == 3) feature = f;
    }
    QVERIFY(feature >= 0);
    QJsonObject cards[2];
    for (int i = 0; i < 2; ++i) {
        const QString out = tmp_.filePath(QStringLiteral("card%1.json").arg(i));
        r = runExe({"--model", "demo", "--contexts-db", i ? merged : full, "--feature", QString::number(feature), "--dump-json", out});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        cards[i] = readJsonObject(out)["feature_contexts"].toObject()["feature"].toObject();
    }
    QCOMPARE(cards[0], cards[1]);
    const QJsonArray top = cards[0]["top_contexts"].toArray();
    QCOMPARE(top.size(), 3);
    const ContextStore store(full, false);
    const std::vector<FeatureContext> expected = store.topContexts(feature, 3);
    for (int i = 0; i < 3; ++i) {
        const QJsonObject c = top[i].toObject();
        QCOMPARE(c["activation"].toDouble(), double(expected[size_t(i)].activation));
        QCOMPARE(c["position"].toInt(), expected[size_t(i)].position);
        QCOMPARE(c["tokens"].toArray().size(), int(expected[size_t(i)].ids.size()));
        QCOMPARE(c["max_token"].toString(), c["tokens"].toArray()[c["position"].toInt()].toString());
        QVERIFY(i == 0 || c["activation"].toDouble() <= top[i - 1].toObject()["activation"].toDouble());
    }
    QCOMPARE(cards[0]["histogram"].toArray().size(), kHistogramBins);
}

void TestCliFeatureContexts::databaseBesideTheSaeWhichStaysUnchanged() {
    const auto before = hashes(sae_);
    const CliRun r = runExe({"--model", "demo", "--sae", sae_, "--feature-contexts", corpus_ + QStringLiteral("/b.jsonl")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QString db = QDir(sae_).filePath(QStringLiteral("attnscope-contexts.sqlite"));
    QVERIFY(QFileInfo::exists(db));
    QVERIFY(r.out.contains(db));
    auto after = hashes(sae_);
    after.erase(db);
    QCOMPARE(after, before);
}

void TestCliFeatureContexts::reportsBadInput() {
    const QStringList base{"--model", "demo", "--sae", sae_, "--contexts-db", tmp_.filePath("bad.sqlite")};
    struct Case {
        QStringList args;
        const char* message;
        int exitCode; ///< 2: a usage error; 1: the run failed
    };
    const std::vector<Case> cases{
        {base + QStringList{"--feature-contexts", tmp_.filePath("missing")}, "no such corpus file or folder", 1},
        {base + QStringList{"--feature-contexts", corpus_, "--shard", "3/2"}, "--shard must be I/N with 0 <= I < N, got '3/2'", 2},
        {base + QStringList{"--feature-contexts", corpus_, "--shard", "x"}, "--shard must be I/N", 2},
        {{"--model", "demo", "--feature-contexts", corpus_}, "--feature-contexts CORPUS needs --sae PATH", 2},
        {{"--merge", tmp_.filePath("a.sqlite")}, "--merge DB1 DB2 … needs --contexts-db OUT", 2},
        {{"--merge", tmp_.filePath("nothere.sqlite"), "--contexts-db", tmp_.filePath("m2.sqlite")}, "no such contexts database", 1},
        {base + QStringList{"--feature-contexts", corpus_, "--prompt", "hi"}, "take no prompt", 2},
    };
    for (const Case& c : cases) {
        const CliRun r = runExe(c.args);
        QCOMPARE(r.exitCode, c.exitCode);
        QVERIFY2(r.err.contains(QString::fromUtf8(c.message)), qPrintable(c.args.join(' ') + " -> " + r.err));
    }
    QVERIFY(!QFileInfo::exists(tmp_.filePath("bad.sqlite")));
}

QTEST_MAIN(TestCliFeatureContexts)
#include "tst_cli_feature_contexts.moc"
