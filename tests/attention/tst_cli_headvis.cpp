// attnscope --headvis DIR --feature-contexts CORPUS as a real process on the demo model: every file of Neuronpedia's
// HeadVis layout is there and parses, with the documented fields and types (README "Output tree", the writers of
// compute-head-metrics.py), its metrics equal the library's over the same windows (head_metrics.h), and bad input
// gets its message.

#include "model/analysis/attention/head_metrics.h"
#include "model/formats/model_loader.h"
#include "support/cli_process.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

CliRun runExe(const QStringList& args) { return runCli(attnscope::test::attnscopeExe(), args); }

QJsonValue readJson(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    QJsonParseError e;
    const QJsonDocument d = QJsonDocument::fromJson(f.readAll(), &e);
    if (e.error != QJsonParseError::NoError) return {};
    return d.isArray() ? QJsonValue(d.array()) : QJsonValue(d.object());
}

bool allOf(const QJsonArray& a, bool (QJsonValue::*is)() const) {
    for (const QJsonValue& v : a)
        if (!(v.*is)()) return false;
    return true;
}

} // namespace

class TestCliHeadVis : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void writesTheLayout();
    void reportsBadInput();

private:
    QTemporaryDir tmp_;
    QString corpus_;
};

void TestCliHeadVis::initTestCase() {
    QVERIFY(tmp_.isValid());
    corpus_ = tmp_.filePath(QStringLiteral("kjv.txt"));
    QFile in(sourceFile(QStringLiteral("docs/genesis1.txt"))), out(corpus_);
    QVERIFY(in.open(QIODevice::ReadOnly) && out.open(QIODevice::WriteOnly));
    const QByteArray text = in.readAll();
    for (int i = 0; i < 4; ++i) out.write(text);
}

void TestCliHeadVis::writesTheLayout() {
    const QString dir = tmp_.filePath(QStringLiteral("headvis"));
    CliRun r = runExe({"--model", "demo", "--headvis", dir, "--feature-contexts", corpus_, "--window", "24", "--sequences", "30"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains(QStringLiteral("wrote %1 (30 sequences of up to 24 tokens, 8 heads, 12 files").arg(dir)), qPrintable(r.out));
    QStringList expected{"config.json", "scatter_data.json", "server_config.json", "attributions/manifest.json"};
    for (int l = 0; l < 2; ++l)
        for (int h = 0; h < 4; ++h) expected << QStringLiteral("heads/L%1H%2.json").arg(l).arg(h);
    for (const QString& f : expected) QVERIFY2(readJson(QDir(dir).filePath(f)).isObject() || readJson(QDir(dir).filePath(f)).isArray(), qPrintable(f));

    const QJsonObject config = readJson(QDir(dir).filePath("config.json")).toObject();
    for (const char* k : {"model_name", "np_model_id", "dataset_name", "head_data_pattern"}) QVERIFY2(config[k].isString(), k);
    for (const char* k : {"n_layers", "n_heads", "n_intervals"}) QVERIFY2(config[k].isDouble(), k);
    for (const char* k : {"heads", "metrics", "umap_heads", "custom_plots", "custom_tables"}) QVERIFY2(config[k].isArray(), k);
    for (const char* k : {"metric_descriptions", "statistics_display", "pipeline_config"}) QVERIFY2(config[k].isObject(), k);
    QVERIFY(config["has_umap"].isBool());
    QCOMPARE(config["dataset_name"].toString(), QStringLiteral("kjv.txt"));
    QCOMPARE(config["n_intervals"].toInt(), 5);
    QStringList keys;
    for (HeadMetric m : allHeadMetrics()) keys << headMetricKey(m);
    QCOMPARE(config["metrics"].toVariant().toStringList(), keys);
    QCOMPARE(keys, (QStringList{"self_attention_score", "prev_token_score", "pattern_entropy", "qk_distance",
                                "qk_distance_variance", "induction_score"}));
    const QJsonObject pc = config["pipeline_config"].toObject();
    QCOMPARE(pc["n_sequences"].toInt(), 30);
    QCOMPARE(pc["actual_sequences_processed"].toInt(), 30);
    QCOMPARE(pc["seq_len"].toInt(), 25);
    QCOMPARE(pc["num_hidden_layers"].toInt(), 2);
    QCOMPARE(pc["num_attention_heads"].toInt(), 4);

    // scatter_data.json: the library's numbers over the same 30 windows of 24 tokens
    const QJsonArray scatter = readJson(QDir(dir).filePath("scatter_data.json")).toArray();
    QCOMPARE(scatter.size(), 8);
    CorpusPassOptions o;
    o.corpus = corpus_;
    o.windowTokens = 24;
    o.maxSequences = 30;
    const HeadMetrics lib = headMetricsOverCorpus(*loadModel(demoDir()), o);
    QCOMPARE(lib.sequences, qint64(30));
    for (int i = 0; i < scatter.size(); ++i) {
        const QJsonObject row = scatter[i].toObject();
        QCOMPARE(row["layer"].toInt(), i / 4);
        QCOMPARE(row["head"].toInt(), i % 4);
        for (const QString& k : keys) {
            QVERIFY2(row[k].isDouble(), qPrintable(k));
            const HeadMetric m = allHeadMetrics()[size_t(keys.indexOf(k))];
            QVERIFY2(std::abs(row[k].toDouble() - lib[m](i / 4, i % 4)) <= 0.5e-4 + 1e-9,
                     qPrintable(QStringLiteral("%1 L%2H%3: %4 vs %5").arg(k).arg(i / 4).arg(i % 4).arg(row[k].toDouble()).arg(lib[m](i / 4, i % 4))));
        }
    }

    // heads/L{l}H{h}.json: fields and types
    for (int l = 0; l < 2; ++l)
        for (int h = 0; h < 4; ++h) {
            const QJsonObject head = readJson(QDir(dir).filePath(QStringLiteral("heads/L%1H%2.json").arg(l).arg(h))).toObject();
            const QJsonArray seqs = head["sequences"].toArray();
            QVERIFY(!seqs.isEmpty());
            for (const QJsonValue& v : seqs) {
                const QJsonObject s = v.toObject();
                for (const char* k : {"sequence_id", "interval", "seq_len", "max_activation"}) QVERIFY2(s[k].isDouble(), k);
                QVERIFY(allOf(s["tokens"].toArray(), &QJsonValue::isString));
                QVERIFY(allOf(s["attention_indices"].toArray(), &QJsonValue::isDouble));
                QVERIFY(allOf(s["attention_values"].toArray(), &QJsonValue::isDouble));
                QCOMPARE(s["tokens"].toArray().size(), s["seq_len"].toInt());
                QCOMPARE(s["tokens"].toArray()[0].toString(), QStringLiteral("<|endoftext|>")); // the window's BOS
                for (const QJsonValue& i : s["attention_indices"].toArray())
                    QVERIFY(i.toInt() >= 0 && i.toInt() < s["seq_len"].toInt() * s["seq_len"].toInt());
            }
            for (const char* k : {"qk_distance_histogram", "histogram"}) {
                const QJsonObject hist = head[k].toObject();
                QVERIFY2(allOf(hist["bin_edges"].toArray(), &QJsonValue::isDouble), k);
                QCOMPARE(hist["bin_values"].toArray().size(), hist["bin_edges"].toArray().size() - 1);
            }
            for (const char* k : {"top_query_tokens", "top_key_tokens"})
                for (const QJsonValue& t : head[k].toArray()) QVERIFY2(t.toObject()["token"].isString() && t.toObject()["weight"].isDouble(), k);
            QCOMPARE(head["statistics"].toObject()["n_samples"].toInt(), seqs.size());
            QVERIFY(head["statistics"].toObject()["mean_max_activation"].isDouble());
        }

    // the folder exists now: without --force it is kept
    r = runExe({"--model", "demo", "--headvis", dir, "--feature-contexts", corpus_, "--sequences", "3"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(QStringLiteral("config.json: already exists (use --force to overwrite)")), qPrintable(r.err));
    r = runExe({"--model", "demo", "--headvis", dir, "--feature-contexts", corpus_, "--sequences", "3", "--force"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QCOMPARE(readJson(QDir(dir).filePath("config.json")).toObject()["pipeline_config"].toObject()["actual_sequences_processed"].toInt(), 3);
}

void TestCliHeadVis::reportsBadInput() {
    const QString dir = tmp_.filePath(QStringLiteral("bad"));
    struct Case {
        QStringList args;
        const char* message;
        int exitCode; ///< 2: a usage error; 1: the run failed
    };
    const std::vector<Case> cases{
        {{"--model", "demo", "--headvis", dir}, "--headvis DIR needs --feature-contexts CORPUS", 2},
        {{"--model", "demo", "--headvis", dir, "--feature-contexts", tmp_.filePath("missing.txt")}, "missing.txt: no such corpus file or folder", 1},
        {{"--model", "demo", "--headvis", dir, "--feature-contexts", corpus_, "--prompt", "hi"}, "it takes --model, --feature-contexts CORPUS", 2},
        {{"--model", "demo", "--headvis", dir, "--feature-contexts", corpus_, "--sequences", "-1"}, "--sequences must be an integer ≥ 0", 2},
        {{"--model", "demo", "--sequences", "5", "--feature-contexts", corpus_}, "--sequences goes with --headvis DIR", 2},
    };
    for (const Case& c : cases) {
        const CliRun r = runExe(c.args);
        QCOMPARE(r.exitCode, c.exitCode);
        QVERIFY2(r.err.contains(QString::fromUtf8(c.message)), qPrintable(c.args.join(' ') + " -> " + r.err));
    }
    QVERIFY(!QFileInfo::exists(QDir(dir).filePath("config.json")));
}

QTEST_MAIN(TestCliHeadVis)
#include "tst_cli_headvis.moc"
