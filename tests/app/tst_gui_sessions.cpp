// Sessions, offscreen: every setting of the window and of every panel survives a save and a restore
// into a fresh window; a corrupt file, a file with bad values, a newer version and a missing model each
// give their message and restore what they can; the last session is what the next start restores; the
// window layout (splitters) is remembered; a llama2.c checkpoint's separate tokenizer.bin is stored and restored.

#include "app/main_window.h"
#include "app/session_controller.h"
#include "app/session_file.h"
#include "app/startup_model.h"
#include "app/window_layout.h"
#include "model/analysis/attention/attention_sandbox.h"
#include "model/transformer/prompt.h"
#include "support/modal_closer.h"
#include "support/safetensors_writer.h"
#include "support/test_paths.h"
#include "views/residual/ablation_panel.h"
#include "views/attention/attention_sandbox_panel.h"
#include "views/attention/attention_steps_panel.h"
#include "views/attention/head_detectors_panel.h"
#include "views/embedding_space/logit_lens_panel.h"
#include "views/comparison/model_compare_panel.h"
#include "views/embedding_space/projections_panel.h"
#include "views/residual/residual_panel.h"
#include "views/common/token_picker.h"
#include "views/common/token_picker.h"

#include <QJsonDocument>
#include <QSignalSpy>
#include <QSplitter>
#include <QTableWidget>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

template <typename T> T* panelOf(MainWindow& w, const char* id) {
    auto* p = qobject_cast<T*>(w.panel(QString::fromLatin1(id)));
    if (!p) qFatal("no panel %s", id);
    return p;
}

/// Opens `model` in `w` with `prompt` and waits for the forward pass.
void openAndRun(MainWindow& w, const QString& model, const QString& prompt) {
    w.show();
    QSignalSpy ran(&w.session(), &ModelSession::forwardFinished);
    w.openModel(model, prompt);
    if (!ran.wait(30000)) qFatal("the prompt did not run");
}

/// Runs a restore to its end; returns the problems it reported.
QStringList restoreAndWait(MainWindow& w, const std::function<void()>& start) {
    QSignalSpy restored(&w.sessions(), &SessionController::restored);
    start();
    if (restored.isEmpty() && !restored.wait(30000)) qFatal("the restore did not finish");
    w.waitForIdle();
    return restored.first().first().toStringList();
}

} // namespace

class TestGuiSessions : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void roundTripsEverySetting();
    void corruptFileChangesNothing();
    void badValuesAreReportedAndTheRestRestored();
    void newerVersionRestoresWhatItKnows();
    void missingModelKeepsTheOpenOne();
    void restoredAblationRunsAtItsPosition();
    void lastSessionIsTheStartupPlan();
    void splittersAreRemembered();
    void llama2cTokenizerRoundTrips();

private:
    QString writeSession(const QJsonObject& o, const QString& name);
    QTemporaryDir tmp_;
    QString model_;
};

void TestGuiSessions::initTestCase() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    qputenv("HOME", tmp_.path().toUtf8()); // QSettings and the stores stay inside the test
    qunsetenv("XDG_CONFIG_HOME");
    QCoreApplication::setOrganizationName("AttnScopeTest");
    model_ = tmp_.filePath("tiny");
    QVERIFY(QDir().mkpath(model_));
    copyFiles(testdata("tiny-gpt2"), model_, {"config.json", "vocab.json", "merges.txt", "model.safetensors"});
}

QString TestGuiSessions::writeSession(const QJsonObject& o, const QString& name) {
    const QString path = tmp_.filePath(name);
    writeFile(path, QJsonDocument(o).toJson());
    return path;
}

void TestGuiSessions::roundTripsEverySetting() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    MainWindow a;
    openAndRun(a, model_, "The cat sat on the mat. The cat sat on the mat.");
    QSignalSpy ran(&a.session(), &ModelSession::forwardFinished);
    a.setPrependBos(false);
    a.runPrompt();
    QVERIFY(ran.wait(30000));
    a.selectHead(1, 2);

    auto* residual = panelOf<ResidualPanel>(a, "logit-attribution");
    residual->setMeasure(ResidualPanel::Measure::DlaDifference);
    residual->targetPicker()->setText("#65");
    residual->counterPicker()->setText("#66");
    residual->setPosition(3);
    residual->subTabs()->setCurrentIndex(2);
    residual->detectors()->setOverlay(HeadDetector::PreviousToken); // induction is the default
    residual->ablation()->setAblatedHeads({{0, 1}, {1, 3}});
    residual->ablation()->setKind(HeadAblation::Kind::Mean);
    auto* steps = panelOf<AttentionStepsPanel>(a, "attention-steps");
    steps->setCurrentIndex(10);
    const QString stepName = steps->steps().at(10).name;
    auto* sandbox = panelOf<AttentionSandboxPanel>(a, "attention-by-hand");
    SandboxInputs in = defaultSandboxInputs();
    in.X(0, 0) = 7;
    in.W_V(1, 2) = -2;
    in.causal = true;
    sandbox->setInputs(in);
    sandbox->setConvention(SandboxConvention::Rows);
    sandbox->setWorksheetArithmetic(true);
    auto* lens = panelOf<LogitLensPanel>(a, "logit-lens");
    lens->setTopK(7);
    lens->targetField()->setText("#70");
    lens->setTargetToken(70);
    lens->setColouring(LogitLensPanel::Colouring::TopProbability);
    lens->waitForIdle();
    lens->selectCell(2, 3);
    lens->findChild<QTabWidget*>()->setCurrentIndex(1); // the rankings table
    auto* proj = panelOf<ProjectionsPanel>(a, "embedding-space");
    proj->setProjection(ProjectionsPanel::Kind::QK, 1, 3);
    proj->setTopK(12);
    proj->queryRowToken(10);
    proj->reverseSearchFor(11);
    auto* cmp = panelOf<ModelComparePanel>(a, "compare-models");
    cmp->openSecondModel(testdata("tiny-gpt2"));
    cmp->waitForIdle();
    cmp->setSimilarityKind(NeuronVectorKind::FFKey);
    cmp->setDifference(ModelComparePanel::Parameter::OV, 1, 2);
    a.showView("logit-lens");
    a.waitForIdle();

    const QString file = tmp_.filePath("all.attnscope");
    QCOMPARE(a.sessions().saveFile(file), QString());
    const QJsonObject saved = QJsonDocument::fromJson(readFile(file)).object();
    QCOMPARE(saved["format"].toString(), QString("attnscope-session"));
    QCOMPARE(saved["version"].toInt(), kSessionVersion);
    QCOMPARE(saved["model"].toString(), model_);
    QCOMPARE(saved["panels"].toObject().keys(),
             QStringList({"attention-by-hand", "attention-steps", "circuits", "compare-models", "embedding-space", "features", "graphs",
                          "logit-attribution", "logit-lens"}));

    QSettings().clear(); // a fresh window with the defaults (a saved its settings)
    MainWindow b;
    b.show();
    QCOMPARE(b.prependBos(), true);
    const QStringList problems = restoreAndWait(b, [&] { QCOMPARE(b.sessions().openFile(file), QString()); });
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join('\n')));
    QCOMPARE(b.session().model()->info().path, model_);
    QCOMPARE(b.prompt(), QString("The cat sat on the mat. The cat sat on the mat."));
    QCOMPARE(b.prependBos(), false);
    QCOMPARE(b.session().cache()->tokens, a.session().cache()->tokens);
    QCOMPARE(b.layer(), 1);
    QCOMPARE(b.head(), 2);
    QCOMPARE(b.currentViewId(), QString("logit-lens"));

    auto* residual2 = panelOf<ResidualPanel>(b, "logit-attribution");
    QCOMPARE(residual2->measure(), ResidualPanel::Measure::DlaDifference);
    QCOMPARE(residual2->targetToken(), 65);
    QCOMPARE(residual2->counterToken(), 66);
    QCOMPARE(residual2->position(), 3);
    QCOMPARE(residual2->subTabs()->currentIndex(), 2);
    QCOMPARE(residual2->detectors()->overlay(), std::optional(HeadDetector::PreviousToken));
    QCOMPARE(residual2->ablation()->ablatedHeads(), (std::vector<std::pair<int, int>>{{0, 1}, {1, 3}}));
    QCOMPARE(residual2->ablation()->kind(), HeadAblation::Kind::Mean);
    auto* steps2 = panelOf<AttentionStepsPanel>(b, "attention-steps");
    QCOMPARE(steps2->steps().at(size_t(steps2->currentIndex())).name, stepName);
    auto* sandbox2 = panelOf<AttentionSandboxPanel>(b, "attention-by-hand");
    QCOMPARE(sandbox2->inputs().X, in.X);
    QCOMPARE(sandbox2->inputs().W_V, in.W_V);
    QCOMPARE(sandbox2->inputs().causal, true);
    QCOMPARE(sandbox2->convention(), SandboxConvention::Rows);
    QCOMPARE(sandbox2->worksheetArithmetic(), true);
    auto* lens2 = panelOf<LogitLensPanel>(b, "logit-lens");
    QCOMPARE(lens2->targetToken(), 70);
    QCOMPARE(lens2->topTokensTable().at(0).at(0).size(), size_t(7));
    QCOMPARE(lens2->targetRanks().at(0).size(), size_t(b.session().cache()->nPositions()));
    QCOMPARE(lens2->findChild<QTabWidget*>()->currentIndex(), 1);
    auto* proj2 = panelOf<ProjectionsPanel>(b, "embedding-space");
    QCOMPARE(proj2->kind(), ProjectionsPanel::Kind::QK);
    QCOMPARE(proj2->rowField()->tokenId(), std::optional(10));
    QCOMPARE(proj2->reverseField()->tokenId(), std::optional(11));
    QCOMPARE(proj2->reverseHeadsTable()->rowCount(), 8); // the reverse search ran: every head, k = 12 ≥ 8
    auto* cmp2 = panelOf<ModelComparePanel>(b, "compare-models");
    QVERIFY(cmp2->secondModel());
    QCOMPARE(cmp2->secondModel()->info().path, testdata("tiny-gpt2"));
    QVERIFY(cmp2->differenceIsIdentical()); // the same weights: "identical", not rounding noise
    // and everything else: the restored window saves exactly what the first one saved
    QCOMPARE(sessionToJson(b.sessions().capture()), saved);
}

void TestGuiSessions::corruptFileChangesNothing() {
    MainWindow w;
    openAndRun(w, model_, "unchanged");
    QSignalSpy restored(&w.sessions(), &SessionController::restored);
    writeFile(tmp_.filePath("bad.attnscope"), "{\"format\": \"attnscope-session\", \"prompt\": ");
    const QString e = w.sessions().openFile(tmp_.filePath("bad.attnscope"));
    QVERIFY2(e.startsWith(tmp_.filePath("bad.attnscope") + ": not valid JSON"), qPrintable(e));
    writeFile(tmp_.filePath("other.attnscope"), R"({"layers": []})");
    const QString e2 = w.sessions().openFile(tmp_.filePath("other.attnscope"));
    QVERIFY2(e2.contains("not an AttnScope session"), qPrintable(e2));
    QVERIFY(w.sessions().openFile(tmp_.filePath("absent.attnscope")).contains("file not found"));
    QCOMPARE(w.prompt(), QString("unchanged"));
    QVERIFY(!w.sessions().isRestoring());
    QVERIFY(restored.isEmpty());
    QCOMPARE(readFile(tmp_.filePath("bad.attnscope")), QByteArray("{\"format\": \"attnscope-session\", \"prompt\": "));
}

void TestGuiSessions::badValuesAreReportedAndTheRestRestored() {
    MainWindow w;
    w.show();
    QJsonObject o{{"format", "attnscope-session"}, {"version", 1}, {"model", model_}, {"prompt", "kept prompt"},
                  {"prependBos", "yes"}, {"layer", 1}, {"head", 9}, {"tab", "no-such-view"},
                  {"panels", QJsonObject{{"logit-lens", QJsonObject{{"topK", 5000}, {"colouring", "rainbow"}}},
                                         {"embedding-space", QJsonObject{{"kind", "ov"}, {"layer", 7}, {"topK", 4}}},
                                         {"logit-attribution", QJsonObject{{"target", "#99999"}, {"measure", "norm"},
                                                                           {"ablatedHeads", QJsonArray{QJsonValue(QJsonArray{5, 0})}}}},
                                         {"attention-by-hand", QJsonObject{{"X", QJsonArray{QJsonArray{1, 2}, QJsonArray{3}}}}},
                                         {"compare-models", "not an object"}}}};
    const QString file = writeSession(o, "badvalues.attnscope");
    const QStringList problems = restoreAndWait(w, [&] { QCOMPARE(w.sessions().openFile(file), QString()); });
    const QString all = problems.join('\n');
    for (const char* expected : {"session: prependBos must be true or false, not \"yes\"",
                                 "head L1H9 is not in tiny", "there is no view \"no-such-view\"",
                                 "Logit lens: topK = 5000 is not an integer in 1..100",
                                 "Logit lens: colouring = \"rainbow\" is not one of top-probability, target-rank",
                                 "Embedding space: layer = 7 is not an integer in 0..1",
                                 "Logit attribution: target token \"#99999\" is not a token of this model",
                                 "Logit attribution: ablated head [5,0] is not a head of this model",
                                 "Attention by hand: X: row 1 has 1 values, row 0 has 2",
                                 "Compare models: the saved settings are not a JSON object"})
        QVERIFY2(all.contains(QString::fromUtf8(expected)), qPrintable(QString("missing '%1' in:\n%2").arg(expected, all)));
    QCOMPARE(problems.size(), 10);
    // the valid values are restored
    QCOMPARE(w.prompt(), QString("kept prompt"));
    QCOMPARE(w.prependBos(), true);
    QCOMPARE(w.layer(), 1);
    QCOMPARE(w.head(), 3); // the nearest head
    QCOMPARE(panelOf<ProjectionsPanel>(w, "embedding-space")->kind(), ProjectionsPanel::Kind::OV);
    QCOMPARE(panelOf<ResidualPanel>(w, "logit-attribution")->measure(), ResidualPanel::Measure::Norm);
    QCOMPARE(panelOf<AttentionSandboxPanel>(w, "attention-by-hand")->inputs().X, defaultSandboxInputs().X);
}

void TestGuiSessions::newerVersionRestoresWhatItKnows() {
    MainWindow w;
    w.show();
    QJsonObject o{{"format", "attnscope-session"}, {"version", 99}, {"model", model_}, {"prompt", "from the future"},
                  {"layer", 0}, {"head", 1}, {"tab", "logit-lens"}, {"hologram", true},
                  {"panels", QJsonObject{{"logit-lens", QJsonObject{{"topK", 3}, {"sparkle", 1}}}, {"hologram", QJsonObject{}}}}};
    const QString file = writeSession(o, "newer.attnscope");
    const QStringList problems = restoreAndWait(w, [&] { QCOMPARE(w.sessions().openFile(file), QString()); });
    QCOMPARE(problems.size(), 2);
    QVERIFY2(problems[0].contains("written by a newer AttnScope (session version 99; this one reads version 1)"),
             qPrintable(problems[0]));
    QCOMPARE(problems[1], QString("settings of an unknown view \"hologram\" were ignored"));
    QCOMPARE(w.prompt(), QString("from the future"));
    QCOMPARE(w.head(), 1);
    QCOMPARE(w.currentViewId(), QString("logit-lens"));
    QCOMPARE(panelOf<LogitLensPanel>(w, "logit-lens")->topTokensTable().at(0).at(0).size(), size_t(3));
    // no "prependBos": the session leaves BOS to the model's default, and saving it again does not invent one
    SessionState parsed;
    QStringList parseProblems;
    QString parseError;
    QVERIFY(sessionFromJson(o, &parsed, &parseProblems, &parseError));
    QVERIFY(!parsed.prependBos.has_value());
    QVERIFY(!sessionToJson(parsed).contains("prependBos"));
    QCOMPARE(w.prependBos(), w.session().model()->tokenizer().addsBos());
}

void TestGuiSessions::missingModelKeepsTheOpenOne() {
    MainWindow w;
    openAndRun(w, model_, "first");
    const auto before = w.session().model();
    QJsonObject o{{"format", "attnscope-session"}, {"version", 1}, {"model", tmp_.filePath("gone")},
                  {"prompt", "The cat"}, {"layer", 1}, {"head", 0}};
    const QString file = writeSession(o, "missing.attnscope");
    const QStringList problems = restoreAndWait(w, [&] { QCOMPARE(w.sessions().openFile(file), QString()); });
    QCOMPARE(problems, QStringList{QString("the session's model %1 was not found; its settings were applied to tiny")
                                       .arg(tmp_.filePath("gone"))});
    QCOMPARE(w.session().model(), before);
    QCOMPARE(w.prompt(), QString("The cat"));
    QCOMPARE(w.session().cache()->tokens,
             tokenizePrompt(before->tokenizer(), QStringLiteral("The cat"), true)); // the session's prompt ran
    QCOMPARE(w.layer(), 1);
}

void TestGuiSessions::restoredAblationRunsAtItsPosition() {
    // the guide's ablation (docs/guide.md): the induction heads of the demo, at the second " God"
    MainWindow w;
    w.show();
    QJsonObject o{{"format", "attnscope-session"}, {"version", 1}, {"model", demoDir()}, // (":/demo" is in the binary only)
                  {"prompt", "In the beginning God created the heaven and the earth. In the beginning God created the heaven and the earth."},
                  {"panels", QJsonObject{{"logit-attribution",
                                          QJsonObject{{"position", 15}, {"measure", "dla-difference"}, {"target", " created"},
                                                      {"counter", " said"},
                                                      {"ablatedHeads", QJsonArray{QJsonArray{1, 1}, QJsonArray{1, 2}, QJsonArray{1, 3}}}}}}}};
    const QString file = writeSession(o, "ablation.attnscope");
    const QStringList problems = restoreAndWait(w, [&] { QCOMPARE(w.sessions().openFile(file), QString()); });
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join('\n')));
    auto* residual = panelOf<ResidualPanel>(w, "logit-attribution");
    QCOMPARE(residual->position(), 15);
    QVERIFY(residual->attribution()->total > 5); // the induction heads' DLA
    QSignalSpy done(residual->ablation(), &AblationView::finished);
    residual->ablation()->run(); // the window's cache holds the last position's logits only
    QVERIFY(done.wait(30000));
    const auto& preview = residual->ablation()->preview();
    QVERIFY2(preview, qPrintable(residual->ablation()->resultText()));
    QCOMPARE(preview->position, 15);
    QVERIFY2(std::abs(preview->before - residual->attribution()->logit) < 1e-3, qPrintable(residual->ablation()->resultText()));
    QVERIFY2(preview->delta < -5, qPrintable(residual->ablation()->resultText()));
}

void TestGuiSessions::lastSessionIsTheStartupPlan() {
    QSettings().remove("lastSession");
    QSettings().remove("lastModel");
    StartupPlan first = planStartup(QString());
    QCOMPARE(first.action, StartupPlan::Action::OpenModel);
    QCOMPARE(first.model, QString("demo"));
    QVERIFY(first.showPicker);
    {
        MainWindow w;
        openAndRun(w, model_, "remember me");
        panelOf<LogitLensPanel>(w, "logit-lens")->setTopK(4);
        w.selectHead(1, 1);
        w.close();
    }
    const StartupPlan plan = planStartup(QString());
    QCOMPARE(plan.action, StartupPlan::Action::RestoreLastSession);
    QVERIFY(!plan.showPicker);
    QCOMPARE(plan.lastSession.model, model_);
    QCOMPARE(plan.lastSession.prompt, QString("remember me"));
    QCOMPARE(plan.lastSession.head, 1);
    QCOMPARE(plan.lastSession.panels["logit-lens"].toObject()["topK"].toInt(), 4);
    QCOMPARE(planStartup("gpt2").model, QString("gpt2"));
    QCOMPARE(planStartup("x.attnscope").action, StartupPlan::Action::OpenSessionFile);
    // the last session's model is gone: fall back (to the demo, as lastModel is gone too)
    const QString moved = tmp_.filePath("moved");
    QVERIFY(QDir().rename(model_, moved));
    QCOMPARE(planStartup(QString()).model, QString("demo"));
    QVERIFY(QDir().rename(moved, model_));
}

void TestGuiSessions::splittersAreRemembered() {
    QList<int> sizes;
    {
        MainWindow w;
        w.show();
        auto* split = w.findChild<QSplitter*>("attentionSplitter");
        QVERIFY(split);
        split->setSizes({300, 900});
        sizes = split->sizes();
        w.close(); // saves the layout
    }
    MainWindow again;
    again.show();
    QCOMPARE(again.findChild<QSplitter*>("attentionSplitter")->sizes(), sizes);
}

/// stories260K.bin with its tokenizer elsewhere under another name (--tokenizer tokenizers/tok512.bin, relative):
/// the session stores the tokenizer's absolute path, and a fresh window restores the model with it (without
/// it the checkpoint does not open: there is no tokenizer.bin beside it).
void TestGuiSessions::llama2cTokenizerRoundTrips() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const QString weights = tmp_.filePath("stories"), tokenizers = tmp_.filePath("tokenizers");
    QVERIFY(QDir().mkpath(weights) && QDir().mkpath(tokenizers));
    copyFiles(testdata("stories260K"), weights, {"stories260K.bin"});
    copyFiles(testdata("stories260K"), tokenizers, {"tok512.bin"});
    const QString tokenizer = tokenizers + "/tok512.bin", file = tmp_.filePath("stories.attnscope");
    const std::vector<int> runC{1, 403, 407, 261, 378}; // run.c's ids of "Once upon a time" (tst_gui_open_model)
    {
        MainWindow a;
        a.show();
        const QString before = QDir::currentPath();
        QVERIFY(QDir::setCurrent(tmp_.path()));
        QSignalSpy ran(&a.session(), &ModelSession::forwardFinished);
        a.openModel(weights + "/stories260K.bin", "Once upon a time", "tokenizers/tok512.bin");
        QDir::setCurrent(before);
        QVERIFY(ran.wait(30000));
        QCOMPARE(a.session().cache()->tokens, runC);
        QCOMPARE(a.sessions().capture().tokenizer, tokenizer);
        QCOMPARE(a.sessions().saveFile(file), QString());
    }
    QFile f(file);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject json = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(json["tokenizer"].toString(), tokenizer);
    QCOMPARE(json["model"].toString(), weights + "/stories260K.bin");
    MainWindow b;
    b.show();
    const QStringList problems = restoreAndWait(b, [&] { QCOMPARE(b.sessions().openFile(file), QString()); });
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join('\n')));
    QCOMPARE(b.session().model()->info().path, weights + "/stories260K.bin");
    QCOMPARE(b.session().model()->info().tokenizerPath, tokenizer);
    QCOMPARE(b.session().model()->tokenizer().vocabSize(), 512);
    QCOMPARE(b.session().cache()->tokens, runC);
    // a model with its tokenizer inside stores none
    openAndRun(b, model_, "The cat");
    QCOMPARE(b.sessions().capture().tokenizer, QString());
    QVERIFY(!sessionToJson(b.sessions().capture()).contains("tokenizer"));
    // the stored tokenizer gone: the restore says which file (also in the window's error box and its restore box), and
    // the open model stays
    QVERIFY(QFile::remove(tokenizer));
    const ModalCloser closer;
    const QStringList gone = restoreAndWait(b, [&] { QCOMPARE(b.sessions().openFile(file), QString()); });
    QVERIFY2(gone.size() == 1 && gone[0] == QStringLiteral("the session's model could not be opened: %1: no such tokenizer file").arg(tokenizer),
             qPrintable(gone.join('\n')));
    QCOMPARE(b.session().model()->info().path, model_);
    QTRY_COMPARE_WITH_TIMEOUT(closer.texts.size(), 2, 5000); // the error box, then the restore's (opened, not exec'd)
    QVERIFY2(closer.texts[0].startsWith(tokenizer + ": no such tokenizer file"), qPrintable(closer.texts[0]));
    QVERIFY2(closer.texts[1].startsWith("The session was restored except for:\n• " + gone[0]), qPrintable(closer.texts[1]));
}

QTEST_MAIN(TestGuiSessions)
#include "tst_gui_sessions.moc"
