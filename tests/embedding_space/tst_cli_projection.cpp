// The command line's embedding-space outputs, run as a real process: --project ov/qk/ffkey/ffvalue
// top-k against brute-force dense E·W·Eᵀ (d_vocab × d_vocab) and E·x (d_vocab) products in double
// precision on tiny-gpt2, and --logit-lens whose last boundary must rank tokens as the picoGPT
// reference logits do (with softmax probabilities from those logits).

#include "model/formats/model_loader.h"
#include "support/brute_force_topk.h"
#include "support/reference_json.h"
#include "support/cli_process.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {
using Run = CliRun;

Run runExe(const QStringList& args) { return runCli(attnscope::test::attnscopeExe(), args); }

std::vector<ScoredPair> pairsFromJson(const QJsonArray& a) {
    std::vector<ScoredPair> out;
    for (const QJsonValue& v : a) {
        const QJsonObject o = v.toObject();
        out.push_back({o["row_token_id"].toInt(-1), o["col_token_id"].toInt(-1), float(o["score"].toDouble())});
    }
    return out;
}

/// Every entry of `a` carries the text of its `idKey` token under `textKey` ("" when all do).
QString missingTokenText(const Tokenizer& tok, const QJsonArray& a, const QString& idKey, const QString& textKey) {
    if (a.isEmpty()) return QStringLiteral("no entries");
    for (const QJsonValue& v : a) {
        const QJsonObject o = v.toObject();
        const QString want = QString::fromUtf8(tok.tokenBytes(o[idKey].toInt(-1)));
        if (!o[textKey].isString() || o[textKey].toString() != want)
            return QStringLiteral("%1 %2: %3 is '%4', not '%5'").arg(idKey).arg(o[idKey].toInt(-1)).arg(textKey, o[textKey].toString(), want);
    }
    return {};
}

std::vector<ScoredToken> tokensFromJson(const QJsonArray& a) {
    std::vector<ScoredToken> out;
    for (const QJsonValue& v : a) out.push_back({v.toObject()["token_id"].toInt(-1), float(v.toObject()["score"].toDouble())});
    return out;
}
} // namespace

class TestCliProjection : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { ATTNSCOPE_REQUIRE_TESTDATA(); tiny_ = loadModel(testdata("tiny-gpt2")); }
    void pairProjectionMatchesBruteForce_data();
    void pairProjectionMatchesBruteForce();
    void neuronProjectionMatchesBruteForce_data();
    void neuronProjectionMatchesBruteForce();
    void logitLensLastBoundaryIsTheLogits();
    void reportsErrors();

private:
    std::shared_ptr<const Model> tiny_;
    QTemporaryDir dir_;
};

void TestCliProjection::pairProjectionMatchesBruteForce_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<int>("layer");
    QTest::addColumn<int>("head");
    QTest::newRow("ov L0H0") << "ov" << 0 << 0;
    QTest::newRow("ov L1H3") << "ov" << 1 << 3;
    QTest::newRow("qk L0H2") << "qk" << 0 << 2;
    QTest::newRow("qk L1H1") << "qk" << 1 << 1;
}

void TestCliProjection::pairProjectionMatchesBruteForce() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QFETCH(QString, kind);
    QFETCH(int, layer);
    QFETCH(int, head);
    const QString out = dir_.filePath(QStringLiteral("%1_%2_%3.json").arg(kind).arg(layer).arg(head));
    const Run r = runExe({"--model", testdata("tiny-gpt2"), "--project", kind, "--layer", QString::number(layer),
                          "--head", QString::number(head), "--top", "25", "--dump-json", out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject json = readJsonObject(out);
    QCOMPARE(json["projection"].toString(), kind);
    QCOMPARE(json["layer"].toInt(), layer);
    QCOMPARE(json["head"].toInt(), head);
    const MatrixD S = denseCircuitScores(*tiny_, kind == "ov" ? PairProjectionKind::OV : PairProjectionKind::QK, layer, head);
    QCOMPARE(S.rows(), Eigen::Index(512));
    const QString err = compareTopK(pairsFromJson(json["top"].toArray()), sortedCells(S), S, 25,
                                    1e-4 * S.cwiseAbs().maxCoeff());
    QVERIFY2(err.isEmpty(), qPrintable(err));
    // the token texts beside the ids, as --dump-json's "tokens"
    for (const char* side : {"row", "col"}) {
        const QString e = missingTokenText(tiny_->tokenizer(), json["top"].toArray(), side + QStringLiteral("_token_id"),
                                           side + QStringLiteral("_token"));
        QVERIFY2(e.isEmpty(), qPrintable(e));
    }
}

void TestCliProjection::neuronProjectionMatchesBruteForce_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<int>("layer");
    QTest::addColumn<int>("neuron");
    QTest::newRow("ffkey L0N7") << "ffkey" << 0 << 7;
    QTest::newRow("ffvalue L1N255") << "ffvalue" << 1 << 255;
    QTest::newRow("ffvalue L0N100") << "ffvalue" << 0 << 100;
}

void TestCliProjection::neuronProjectionMatchesBruteForce() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QFETCH(QString, kind);
    QFETCH(int, layer);
    QFETCH(int, neuron);
    const QString out = dir_.filePath(QStringLiteral("%1_%2_%3.json").arg(kind).arg(layer).arg(neuron));
    const Run r = runExe({"--model", testdata("tiny-gpt2"), "--project", kind, "--layer", QString::number(layer),
                          "--neuron", QString::number(neuron), "--top", "12", "--dump-json", out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject json = readJsonObject(out);
    QCOMPARE(json["projection"].toString(), kind);
    QCOMPARE(json["neuron"].toInt(), neuron);
    const Eigen::VectorXd v =
        denseNeuronScores(*tiny_, kind == "ffkey" ? NeuronVectorKind::FFKey : NeuronVectorKind::FFValue, layer, neuron);
    const double tol = 1e-4 * v.cwiseAbs().maxCoeff();
    QString err = compareTopK(tokensFromJson(json["top"].toArray()), sortedEntries(v, true), v, 12, tol);
    QVERIFY2(err.isEmpty(), qPrintable("top: " + err));
    err = compareTopK(tokensFromJson(json["bottom"].toArray()), sortedEntries(v, false), v, 12, tol);
    QVERIFY2(err.isEmpty(), qPrintable("bottom: " + err));
    for (const char* list : {"top", "bottom"}) {
        const QString e = missingTokenText(tiny_->tokenizer(), json[list].toArray(), "token_id", "token");
        QVERIFY2(e.isEmpty(), qPrintable(list + QStringLiteral(": ") + e));
    }
}

void TestCliProjection::logitLensLastBoundaryIsTheLogits() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
    const QString out = dir_.filePath("lens.json");
    const Run r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", ref["prompt"].toString(), "--logit-lens",
                          "--top", "5", "--dump-json", out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject dump = readJsonObject(out);
    const QJsonArray lens = dump["logit_lens"].toArray();
    const int S = 18, nb = 5; // 2 layers: embed, L0attn, L0mlp, L1attn, L1mlp
    QCOMPARE(lens.size(), nb * S);
    const QStringList names{"embed", "L0attn", "L0mlp", "L1attn", "L1mlp"};
    for (int i = 0; i < lens.size(); ++i) {
        const QJsonObject cell = lens[i].toObject();
        QCOMPARE(cell["layer"].toString(), names[i / S]);
        QCOMPARE(cell["position"].toInt(), i % S);
        QCOMPARE(cell["top"].toArray().size(), 5);
        const QString e = missingTokenText(tiny_->tokenizer(), cell["top"].toArray(), "token_id", "token");
        QVERIFY2(e.isEmpty(), qPrintable(QStringLiteral("cell %1: ").arg(i) + e));
    }
    const Matrix logits = matrixFromJson(ref["variants"].toObject()["float32"].toObject()["logits"].toArray());
    for (int p = 0; p < S; ++p) {
        const Eigen::VectorXd l = logits.row(p).transpose().cast<double>();
        const double z = (l.array() - l.maxCoeff()).exp().sum();
        const std::vector<RefCell> sorted = sortedEntries(l, true);
        const QJsonArray top = lens[(nb - 1) * S + p].toObject()["top"].toArray();
        for (int i = 0; i < 5; ++i) {
            const QJsonObject t = top[i].toObject();
            const int id = t["token_id"].toInt();
            const bool tie = std::abs(sorted[size_t(i)].score - l(id)) <= 2e-4;
            QVERIFY2(id == sorted[size_t(i)].col || tie,
                     qPrintable(QString("position %1 rank %2: %3 vs reference %4").arg(p).arg(i).arg(id).arg(sorted[size_t(i)].col)));
            const double prob = std::exp(l(id) - l.maxCoeff()) / z;
            QVERIFY2(std::abs(t["prob"].toDouble() - prob) <= 1e-5,
                     qPrintable(QString("prob %1 vs %2").arg(t["prob"].toDouble()).arg(prob)));
        }
    }
    // The lens does not replace the rest of the dump.
    QCOMPARE(dump["top_next_tokens"].toArray()[0].toObject()["id"].toInt(),
             lens[(nb - 1) * S + S - 1].toObject()["top"].toArray()[0].toObject()["token_id"].toInt());
}

void TestCliProjection::reportsErrors() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const QString out = dir_.filePath("never.json");
    Run r = runExe({"--model", testdata("tiny-gpt2"), "--project", "vo", "--layer", "0", "--head", "0", "--dump-json", out});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("--project must be ov, qk, ffkey or ffvalue, got 'vo'"), qPrintable(r.err));
    r = runExe({"--model", testdata("tiny-gpt2"), "--project", "ov", "--layer", "0", "--neuron", "3", "--dump-json", out});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("--project ov needs --layer L and --head H"), qPrintable(r.err));
    r = runExe({"--model", testdata("tiny-gpt2"), "--project", "ffvalue", "--layer", "0", "--neuron", "3"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("--project needs --dump-json FILE"), qPrintable(r.err));
    r = runExe({"--model", testdata("tiny-gpt2"), "--project", "ffvalue", "--layer", "0", "--neuron", "3",
                "--prompt", "hi", "--dump-json", out});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("takes no --prompt"), qPrintable(r.err));
    r = runExe({"--model", testdata("tiny-gpt2"), "--project", "ov", "--layer", "5", "--head", "0", "--dump-json", out});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("Layer 5 is outside [0, 2)"), qPrintable(r.err));
    r = runExe({"--model", testdata("tiny-gpt2"), "--project", "ffkey", "--layer", "0", "--neuron", "256", "--dump-json", out});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("256"), qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(out));
}

QTEST_GUILESS_MAIN(TestCliProjection)
#include "tst_cli_projection.moc"
