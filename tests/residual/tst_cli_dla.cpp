// `attnscope --dla`, run as a real process: the "dla" object of --dump-json sums to the model's logit
// (difference) minus the bias term within 1e-4 (tiny-gpt2 and the demo model when it is in the tree),
// and its values equal what the GUI's "Logit attribution" panel shows for the same prompt, read from
// the panel's components table in this process. Errors are checked by message and exit code.

#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/transformer/prompt.h"
#include "support/reference_json.h"
#include "support/cli_process.h"
#include "support/test_paths.h"
#include "views/residual/residual_panel.h"
#include "views/common/token_picker.h"

#include <QFile>
#include <QJsonArray>
#include <QProcess>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {
using Run = CliRun;

Run runExe(const QStringList& args) { return runCli(attnscope::test::attnscopeExe(), args); }

const QString kTinyPrompt = QStringLiteral("The cat sat on the mat.\nIt's fun!");

/// name -> DLA value as the panel's table holds it (Qt::UserRole = the exact double).
QHash<QString, double> panelValues(const ResidualPanel& panel) {
    QHash<QString, double> out;
    const QTableWidget* t = panel.componentsTable();
    for (int r = 0; r < t->rowCount(); ++r)
        out.insert(t->item(r, ResidualPanel::NameColumn)->text(), t->item(r, ResidualPanel::DlaColumn)->data(Qt::UserRole).toDouble());
    return out;
}
} // namespace

class TestCliDla : public QObject {
    Q_OBJECT
private slots:
    void tinyGpt2TokenMatchesPanel();
    void tinyGpt2DifferenceAtPositionMatchesPanel();
    void demoModelSumsToLogit();
    void llamaTokenWithSpaceMatchesRunC();
    void reportsErrors();

private:
    /// Runs the CLI, checks the sum and that the values equal the panel's for (picker texts, position).
    void checkAgainstPanel(const QString& modelPath, const QString& prompt, const QString& dlaArg,
                           const QString& targetText, const QString& counterText, int position);
};

void TestCliDla::checkAgainstPanel(const QString& modelPath, const QString& prompt, const QString& dlaArg,
                                   const QString& targetText, const QString& counterText, int position) {
    QTemporaryDir dir;
    const QString out = dir.filePath("dump.json");
    QStringList args{"--model", modelPath, "--prompt", prompt, "--dla", dlaArg, "--dump-json", out};
    if (position >= 0) args << "--position" << QString::number(position);
    const Run r = runExe(args);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject dla = readJsonObject(out)["dla"].toObject();
    QVERIFY(!dla.isEmpty());

    const auto model = std::shared_ptr<const Model>(loadModel(modelPath));
    const ModelConfig& cfg = model->config();
    const QJsonArray comps = dla["components"].toArray();
    QCOMPARE(comps.size(), 2 + cfg.n_layers * (cfg.n_heads + 2)); // embed, pos_embed, per layer heads + b_O + MLP
    QCOMPARE(comps[0].toObject()["name"].toString(), QString("embed"));
    QCOMPARE(comps[2].toObject()["name"].toString(), QString("L0H0"));
    double sum = 0;
    for (const auto& c : comps) sum += c.toObject()["value"].toDouble();
    QVERIFY(std::abs(sum - dla["total"].toDouble()) <= 1e-4);
    const double expected = dla["logit"].toDouble() - dla["bias_term"].toDouble();
    QVERIFY2(std::abs(dla["total"].toDouble() - expected) <= 1e-4,
             qPrintable(QString("total %1 vs logit - bias %2").arg(dla["total"].toDouble()).arg(expected)));
    QVERIFY(std::abs(dla["logit"].toDouble()) > 1e-3); // a real logit, not an empty default

    // the GUI panel on the same prompt, run as ModelSession does (default ForwardOptions)
    const std::vector<int> ids = tokenizePrompt(model->tokenizer(), prompt, true);
    auto cache = std::make_shared<const ActivationCache>(runForward(*model, ids));
    ResidualPanel panel;
    panel.setContext(model, cache, tokenLabels(model->tokenizer(), cache->tokens));
    panel.setMeasure(counterText.isEmpty() ? ResidualPanel::Measure::DlaToken : ResidualPanel::Measure::DlaDifference);
    panel.targetPicker()->setText(targetText);
    if (!counterText.isEmpty()) panel.counterPicker()->setText(counterText);
    panel.setPosition(position);
    QCOMPARE(panel.targetToken(), dla["token_id"].toInt());
    QCOMPARE(panel.counterToken(), counterText.isEmpty() ? -1 : dla["counter_token_id"].toInt());
    // the token texts beside the ids, as the dump's "tokens" beside "token_ids"
    QCOMPARE(dla["token"].toString(), QString::fromUtf8(model->tokenizer().tokenBytes(panel.targetToken())));
    if (!counterText.isEmpty())
        QCOMPARE(dla["counter_token"].toString(), QString::fromUtf8(model->tokenizer().tokenBytes(panel.counterToken())));
    else
        QVERIFY(!dla.contains("counter_token") && !dla.contains("counter_token_id"));
    QCOMPARE(panel.position(), dla["position"].toInt());
    const QHash<QString, double> shown = panelValues(panel);
    QCOMPARE(shown.size(), comps.size());
    double maxDiff = 0;
    for (const auto& c : comps) {
        const QString name = c.toObject()["name"].toString();
        QVERIFY2(shown.contains(name), qPrintable(name));
        maxDiff = std::max(maxDiff, std::abs(shown[name] - c.toObject()["value"].toDouble()));
    }
    QVERIFY2(maxDiff <= 1e-4, qPrintable(QString::number(maxDiff)));
    QVERIFY(std::abs(panel.attribution()->logit - dla["logit"].toDouble()) <= 1e-4);
    QVERIFY(panel.checkText().contains(QString::number(dla["total"].toDouble(), 'f', 4).left(5)));
}

void TestCliDla::tinyGpt2TokenMatchesPanel() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    // " c" is one token of tiny-gpt2 (its 255 merges split " cat" into " c" + "at"); the picker gets
    // the display string, the CLI the decoded text
    checkAgainstPanel(testdata("tiny-gpt2"), kTinyPrompt, " c", QString::fromUtf8("␣c"), {}, -1);
}

void TestCliDla::tinyGpt2DifferenceAtPositionMatchesPanel() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    checkAgainstPanel(testdata("tiny-gpt2"), kTinyPrompt, " the,at", " the", "at", 7);
}

void TestCliDla::demoModelSumsToLogit() {
    if (!QFile::exists(demoDir() + "/model.safetensors")) QSKIP("resources/demo/model.safetensors is not in the tree yet");
    // KJV: " God" and " LORD" are single tokens of the demo vocabulary
    checkAgainstPanel(demoDir(), "In the beginning God created the heaven and the earth. And the Spirit of", " God, LORD",
                      " God", " LORD", -1);
}

// stories260K.gguf (Llama architecture, SentencePiece): " there" is the piece "▁there" (a text that SPM's
// encoder would split, since it adds its own leading space), the components are embed and per layer heads +
// MLP (no pos_embed, no b_O), they sum to the logit, and that logit is run.c's at the last prompt position
// (reference.json "main", ≤ 1e-4).
void TestCliDla::llamaTokenWithSpaceMatchesRunC() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QTemporaryDir dir;
    const QString out = dir.filePath("dump.json");
    const Run r = runExe({"--model", testdata("stories260K/stories260K.gguf"), "--prompt", "Once upon a time", "--dla", " there",
                          "--dump-json", out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject dla = readJsonObject(out)["dla"].toObject();
    const auto model = loadModel(testdata("stories260K/stories260K.gguf"));
    QCOMPARE(dla["token_id"].toInt(), model->tokenizer().tokenId(QString::fromUtf8("▁there")).value_or(-1));
    QCOMPARE(dla["token"].toString(), QString(" there")); // "▁there" in the middle of a text
    const QJsonArray comps = dla["components"].toArray();
    const ModelConfig& cfg = model->config();
    QCOMPARE(comps.size(), 1 + cfg.n_layers * (cfg.n_heads + 1));
    QCOMPARE(comps[0].toObject()["name"].toString(), QString("embed"));
    QCOMPARE(comps[1].toObject()["name"].toString(), QString("L0H0"));
    QCOMPARE(comps[cfg.n_heads + 1].toObject()["name"].toString(), QString("L0MLP"));
    double sum = 0;
    for (const auto& c : comps) sum += c.toObject()["value"].toDouble();
    QVERIFY(std::abs(sum - dla["logit"].toDouble() + dla["bias_term"].toDouble()) <= 1e-4);
    const QJsonObject ref = readJsonObject(testdata("stories260K/reference.json"))["main"].toObject();
    const QJsonArray perPosition = ref["logits_per_prompt_position"].toArray();
    const double runC = perPosition.last().toObject()["logits"].toArray()[dla["token_id"].toInt()].toDouble();
    QVERIFY2(std::abs(dla["logit"].toDouble() - runC) <= 1e-4, qPrintable(QString::number(dla["logit"].toDouble() - runC)));
}

void TestCliDla::reportsErrors() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QTemporaryDir dir;
    const QString out = dir.filePath("dump.json");
    Run r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", kTinyPrompt, "--dla", " cat", "--dump-json", out});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("' cat' is not a single token: it encodes to 2 tokens [' c', 'at']"), qPrintable(r.err));
    QVERIFY(!QFile::exists(out));
    r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", kTinyPrompt, "--dla", " c", "--position", "18",
                "--dump-json", out});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("--position 18 is out of range: the prompt has 18 tokens (0..17)"), qPrintable(r.err));
    r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", kTinyPrompt, "--dla", " c"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("give --dump-json FILE too"), qPrintable(r.err));
    r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", kTinyPrompt, "--dla", " c,zzzz", "--dump-json", out});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("'zzzz' is not a single token"), qPrintable(r.err));
}

QTEST_MAIN(TestCliDla)
#include "tst_cli_dla.moc"
