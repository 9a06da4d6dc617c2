// The Compare tab's Stitch and Fine-tuning directions views (issue 15), offscreen:
//  - the second model is opened by the window's model session (off the GUI thread) and handed to the panel,
//    never loaded by the panel itself; a failure is shown in the panel;
//  - the Stitch view sweeps k in the background for the four variants (labelled), and shows the numbers of
//    stitchSweep, A's and B's own losses, the map's rank and rcond, per-position distributions; a model
//    stitched onto itself is said to be the identity; a rank-deficient E is reported with its rank; a
//    vocabulary mismatch is shown; a long sweep is cancelled without freezing the GUI thread;
//  - the Fine-tuning view ranks the demo against its fine-tuned copy, projects a clicked component, exports
//    CSV and PNG, and refuses other architectures by name;
//  - their settings go into the panel's session state and come back.

#include "app/main_window.h"
#include "app/status_line.h"
#include "model/analysis/comparison/finetune_directions.h"
#include "model/analysis/comparison/stitching.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/transformer/prompt.h"
#include "support/fake_model_stores.h"
#include "support/handmade_model.h"
#include "support/safetensors_writer.h"
#include "support/test_paths.h"
#include "support/time_scale.h"
#include "views/figures/chart_figure.h"
#include "views/comparison/finetune_view.h"
#include "views/figures/matrix_heatmap.h"
#include "views/comparison/model_compare_panel.h"
#include "views/common/panel_state.h"
#include "views/comparison/stitch_view.h"
#include "views/figures/table_figure.h"

#include <QElapsedTimer>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

const QString kPrompt = QStringLiteral("In the beginning God created the heaven and the earth. And the earth was without form.");

ModelComparePanel* comparePanel(MainWindow& w) { return qobject_cast<ModelComparePanel*>(w.panel(QStringLiteral("compare-models"))); }

void openAndRun(MainWindow& w, const QString& model, const QString& prompt) {
    w.show();
    QSignalSpy ran(&w.session(), &ModelSession::forwardFinished);
    w.openModel(model, prompt);
    if (!ran.wait(30000)) qFatal("the prompt did not run");
}

/// "" when every column of `t` is as wide as its contents (the last one does not spread over the free width),
/// else which column is not.
QString columnsFitContents(QTableWidget* t) {
    QCoreApplication::processEvents(); // the header sizes its sections on the next layout
    int used = 0;
    for (int c = 0; c < t->columnCount(); ++c) {
        const int width = t->columnWidth(c);
        t->resizeColumnToContents(c); // the width its cells and header need
        const int want = t->columnWidth(c);
        used += width;
        if (std::abs(width - want) > 2)
            return QStringLiteral("column %1 (%2) is %3 px wide, its contents %4 px")
                .arg(c).arg(t->horizontalHeaderItem(c)->text()).arg(width).arg(want);
    }
    if (t->horizontalHeader()->stretchLastSection()) return QStringLiteral("the last column stretches");
    if (used <= 0 || used >= t->viewport()->width()) // free width is left: what a stretched column would take
        return QStringLiteral("columns %1 px in a %2 px table").arg(used).arg(t->viewport()->width());
    return {};
}

} // namespace

class TestGuiStitch : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void secondModelComesFromTheSession();
    void secondModelFailureIsShown();
    void secondModelByName();
    void stitchSweepShowsTheNumbers();
    void selfStitchIsTheIdentity();
    void rankDeficientEmbeddingIsReported();
    void vocabularyMismatchIsShown();
    void longSweepIsCancelled();
    void finetuneRanksProjectsAndExports();
    void finetuneRefusesOtherArchitectures();
    void settingsRoundTrip();

private:
    QTemporaryDir tmp_;
    std::shared_ptr<const Model> demo_, variant_;
};

void TestGuiStitch::initTestCase() {
    qputenv("HOME", tmp_.path().toUtf8());
    qunsetenv("XDG_CONFIG_HOME");
    QCoreApplication::setOrganizationName("AttnScopeTest");
    demo_ = loadModel(demoDir());
    variant_ = loadModel(demoDir() + "/../demo-variant");
}

void TestGuiStitch::secondModelComesFromTheSession() {
    MainWindow w(nullptr, MainWindow::Mode::Offscreen);
    openAndRun(w, demoDir(), kPrompt);
    ModelComparePanel* cmp = comparePanel(w);
    QSignalSpy loaded(&w.session(), &ModelSession::secondModelLoaded);
    QSignalSpy progress(&w.session(), &ModelSession::secondModelProgress);
    cmp->openSecondModel(demoDir() + "/../demo-variant");
    QVERIFY(w.session().isLoadingSecondModel()); // returned at once: the load runs on a worker thread
    cmp->waitForIdle();
    QCOMPARE(loaded.count(), 1);
    QVERIFY(progress.count() >= 1);
    QVERIFY(cmp->secondModel());
    QCOMPARE(cmp->secondModel().get(), w.session().secondModel().get()); // the session's model, handed over
    QCOMPARE(cmp->stitchView()->modelB().get(), w.session().secondModel().get());
    QCOMPARE(cmp->stitchView()->modelA().get(), w.session().model().get());
    QVERIFY2(cmp->secondModelInfo()->text().startsWith("Model B:"), qPrintable(cmp->secondModelInfo()->text()));
    // the main model's prompt keeps running meanwhile and the second model stays
    QSignalSpy ran(&w.session(), &ModelSession::forwardFinished);
    w.runPrompt();
    QVERIFY(ran.wait(30000));
    QCOMPARE(cmp->secondModel().get(), w.session().secondModel().get());
}

void TestGuiStitch::secondModelFailureIsShown() {
    MainWindow w(nullptr, MainWindow::Mode::Offscreen);
    openAndRun(w, demoDir(), kPrompt);
    ModelComparePanel* cmp = comparePanel(w);
    const QString broken = tmp_.filePath("broken");
    QDir().mkpath(broken);
    writeFile(broken + "/config.json", "{\"model_type\": \"gpt2\", \"n_layer\": 2}");
    cmp->openSecondModel(broken);
    cmp->waitForIdle();
    QVERIFY(!cmp->secondModel());
    QVERIFY2(cmp->secondModelInfo()->text().startsWith("Cannot open the second model:"), qPrintable(cmp->secondModelInfo()->text()));
    // the panel asks with the name as typed and the window's session resolves it (views never look models up):
    // a name that names nothing fails at once, before anything loads
    QSignalSpy asked(cmp, &AnalysisPanel::secondModelRequested);
    QSignalSpy failed(&w.session(), &ModelSession::secondModelLoadFailed);
    cmp->openSecondModel("nobody/none");
    QCOMPARE(asked.count(), 1);
    QCOMPARE(asked.first().first().toString(), QString("nobody/none"));
    QCOMPARE(failed.count(), 1);
    QCOMPARE(failed.first().first().toString(), QString("nobody/none"));
    QVERIFY(!w.session().isLoadingSecondModel());
    QVERIFY2(cmp->secondModelInfo()->text().startsWith("Cannot open the second model: nobody/none: no such file or folder, and "
                                                       "not in the Hugging Face cache"),
             qPrintable(cmp->secondModelInfo()->text()));
    // the window's status line says the failure
    auto* status = w.statusBar()->findChild<StatusLine*>();
    QVERIFY(status);
    QCOMPARE(status->text(), QString("Cannot open the second model: %1").arg(failed.first().at(1).toString()));
    cmp->waitForIdle(); // nothing pending
    // ... and a session naming it reports it among the restore's problems
    QStringList problems;
    cmp->restoreState(QJsonObject{{"secondModel", "nobody/none"}}, &problems);
    QCOMPARE(problems.size(), 1);
    QVERIFY2(problems[0].contains("second model: nobody/none: no such file or folder"), qPrintable(problems[0]));
    // outside a window the panel cannot open anything, and says so
    ModelComparePanel alone;
    alone.openSecondModel(demoDir());
    QVERIFY2(alone.secondModelInfo()->text().contains("opened by the window's model session"), qPrintable(alone.secondModelInfo()->text()));
    alone.waitForIdle(); // nothing pending
}

/// A second model asked for by name (the Hugging Face cache's "gpt2"): the session resolves and opens the
/// snapshot, and the panel's request settles although the model's path is not the name it asked with.
void TestGuiStitch::secondModelByName() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const FakeStores stores = buildFakeStores(tmp_.filePath("stores"));
    useFakeStores(stores);
    MainWindow w(nullptr, MainWindow::Mode::Offscreen);
    openAndRun(w, testdata("tiny-gpt2"), "The cat sat"); // the cached "gpt2" is a copy of tiny-gpt2: comparable
    ModelComparePanel* cmp = comparePanel(w);
    QSignalSpy loaded(&w.session(), &ModelSession::secondModelLoaded);
    cmp->openSecondModel("gpt2");
    cmp->waitForIdle(); // returns: the request settled
    QCOMPARE(loaded.count(), 1);
    QVERIFY(cmp->secondModel());
    QCOMPARE(cmp->secondModel()->info().path, stores.gpt2Newest);
    QCOMPARE(cmp->secondModel()->info().name, QString("gpt2"));
    QVERIFY2(cmp->secondModelInfo()->text().startsWith("Model B: " + stores.gpt2Newest), qPrintable(cmp->secondModelInfo()->text()));
    qputenv("HOME", tmp_.path().toUtf8()); // as initTestCase left it for the other tests
    qunsetenv("HF_HOME");
    qunsetenv("OLLAMA_MODELS");
}

void TestGuiStitch::stitchSweepShowsTheNumbers() {
    MainWindow w(nullptr, MainWindow::Mode::Offscreen);
    openAndRun(w, demoDir(), kPrompt);
    ModelComparePanel* cmp = comparePanel(w);
    cmp->openSecondModel(demoDir() + "/../demo-variant");
    cmp->waitForIdle();
    w.showView(QStringLiteral("compare-models"));
    cmp->subTabs()->setCurrentIndex(1); // shown: the sweep starts
    StitchView* s = cmp->stitchView();
    QVERIFY(s->isRunning());
    s->waitForIdle();
    QCOMPARE(int(s->sweeps().size()), 4);
    QStringList ids;
    for (const StitchSweep& x : s->sweeps()) ids << x.variant.id();
    QCOMPARE(ids, QStringList({"pinv", "pinv+ln_final_A", "transpose", "transpose+ln_final_A"}));
    // the numbers are the model function's on the window's tokens
    const auto a = w.session().model(), b = w.session().secondModel();
    const std::vector<int>& tokens = w.session().cache()->tokens;
    const StitchBase base = stitchBase(*a, *b, tokens);
    const StitchSweep ref = stitchSweep(*a, *b, base, std::make_shared<const StitchMap>(computeStitchMap(*a, *b)), StitchVariant{},
                                        allStitchLayers(*a));
    QCOMPARE(int(s->sweeps()[0].points.size()), 3);
    for (int k = 0; k < 3; ++k) {
        QCOMPARE(s->sweeps()[0].points[size_t(k)].loss, ref.points[size_t(k)].loss);
        QCOMPARE(s->sweeps()[0].points[size_t(k)].agreeB, ref.points[size_t(k)].agreeB);
    }
    QTableWidget* t = s->layerTable();
    QCOMPARE(t->rowCount(), 3);
    QCOMPARE(t->item(1, 1)->data(Qt::UserRole).toDouble(), ref.points[1].loss);
    QCOMPARE(t->item(1, 4)->data(Qt::UserRole).toDouble(), ref.points[1].agreeB);
    QVERIFY2(w.isVisible() && t->isVisible(), "the stitch table is not on screen");
    QString fit = columnsFitContents(t);
    QVERIFY2(fit.isEmpty(), qPrintable(fit));
    QVERIFY(s->lossChart()->hasFigureData());
    QVERIFY(s->agreementChart()->hasFigureData());
    const ValueTable v = s->lossChart()->figureValues();
    QCOMPARE(int(v.cells.size()), 3);
    QCOMPARE(v.colLabels.mid(0, 3), QStringList({"loss_a", "loss_b", "loss pinv"}));
    QCOMPARE(v.cells[0][2], exactNumber(ref.points[0].loss));
    // labels: the variants in the legend, rcond and both ranks above, the A and B losses in the summary
    const QString legend = s->lossChart()->plot()->graph(2)->name();
    QVERIFY2(legend.contains("(E_Bᵀ)⁺") && legend.contains("rcond 1e-05"), qPrintable(legend));
    QVERIFY2(s->mapInfo()->text().contains("E_A 128 of 128") && s->mapInfo()->text().contains("E_B 128 of 128"), qPrintable(s->mapInfo()->text()));
    QVERIFY2(s->mapInfo()->text().contains("both models are tied"), qPrintable(s->mapInfo()->text()));
    QVERIFY2(s->summary()->text().contains(QString::number(base.a.loss(), 'f', 3)), qPrintable(s->summary()->text()));
    // per position: A, B and the stitched model side by side (top 10), at the last k by default
    QCOMPARE(s->positionTable()->rowCount(), 10);
    s->showPosition(3);
    QCOMPARE(s->positionTable()->item(0, 1)->data(Qt::UserRole).toInt(), base.a.top[3][0].id);
    QCOMPARE(s->positionTable()->item(0, 3)->data(Qt::UserRole).toInt(), base.b.top[3][0].id);
    QCOMPARE(s->positionTable()->item(0, 5)->data(Qt::UserRole).toInt(), ref.points[2].predictions.top[3][0].id);
    fit = columnsFitContents(s->positionTable());
    QVERIFY2(fit.isEmpty(), qPrintable(fit));
    // CSV: every variant's points
    const QString csv = tmp_.filePath("stitch.csv");
    QCOMPARE(s->exportCsv(csv), QString());
    QCOMPARE(readFile(csv).count('\n'), 1 + 4 * 3);
}

void TestGuiStitch::selfStitchIsTheIdentity() {
    StitchView s;
    s.resize(1400, 900);
    ForwardOptions o;
    const std::vector<int> tokens = tokenizePrompt(demo_->tokenizer(), kPrompt, true);
    auto cache = std::make_shared<const ActivationCache>(runForward(*demo_, tokens, o));
    s.setInverseChoice(StitchView::Choice::First);
    s.setNormChoice(StitchView::Choice::First);
    s.setModels(demo_, demo_, cache);
    s.run();
    s.waitForIdle();
    QCOMPARE(int(s.sweeps().size()), 1);
    for (const StitchPoint& p : s.sweeps()[0].points) {
        QVERIFY(std::abs(p.loss - p.lossA) < 1e-5);
        QCOMPARE(p.agreeA, 1.0);
    }
    QVERIFY2(s.mapInfo()->text().contains("A and B are the same model") && s.mapInfo()->text().contains("reproduces the model at every k"),
             qPrintable(s.mapInfo()->text()));
}

void TestGuiStitch::rankDeficientEmbeddingIsReported() {
    HandmadeWeights w = randomWeights(gpt2Config(1, 2, 16, 8, 30), 9, 0.3f);
    w.W_E.col(5) = w.W_E.col(4);
    w.W_E.col(9) = 2 * w.W_E.col(1) - w.W_E.col(3);
    const auto m = makeModel(std::move(w));
    StitchView s;
    s.setInverseChoice(StitchView::Choice::First);
    s.setNormChoice(StitchView::Choice::First);
    s.setText(QString()); // no window prompt: ids below
    auto cache = std::make_shared<const ActivationCache>(runForward(*m, std::vector<int>{1, 2, 3, 4, 5}));
    s.setModels(m, m, cache);
    s.run();
    s.waitForIdle();
    QVERIFY2(s.mapInfo()->text().contains("E_B is rank-deficient: numerical rank 14 of 16"), qPrintable(s.mapInfo()->text()));
    QVERIFY2(s.mapInfo()->text().contains("not reproduced exactly"), qPrintable(s.mapInfo()->text()));
    QVERIFY(!s.mapInfo()->text().contains("reproduces the model at every k"));
}

void TestGuiStitch::vocabularyMismatchIsShown() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const auto gpt2 = loadModel(testdata("tiny-gpt2")), llama = loadModel(testdata("stories260K/stories260K.gguf"));
    StitchView s;
    s.setText(QStringLiteral("Once upon a time"));
    s.setModels(gpt2, llama, nullptr);
    s.run();
    s.waitForIdle();
    QVERIFY2(s.summary()->text().startsWith("Cannot stitch: The models do not share a tokenizer: both have 512 tokens, but token 0 is"),
             qPrintable(s.summary()->text()));
    QVERIFY(s.lossChart()->isShowingEmptyState());
    QVERIFY(s.sweeps().empty());
}

void TestGuiStitch::longSweepIsCancelled() {
    ModelConfig c = gpt2Config(12, 8, 384, 512, 3000);
    const auto a = makeModel(randomWeights(c, 1, 0.05f)), b = makeModel(randomWeights(c, 2, 0.05f));
    std::vector<int> ids;
    for (int i = 0; i < 500; ++i) ids.push_back((i * 37) % 3000);
    auto cache = std::make_shared<const ActivationCache>(runForward(*a, ids));
    StitchView s;
    s.setModels(a, b, cache);
    QElapsedTimer t;
    t.start();
    s.run();
    QVERIFY(t.elapsed() < 2000 * kTimeScale); // the GUI thread only starts it: the sweep takes far longer
    QVERIFY(s.isRunning());
    QTest::qWait(50);
    QCoreApplication::processEvents();
    QVERIFY(s.isRunning());
    const QList<QPushButton*> cancel = s.findChildren<QPushButton*>();
    QPushButton* button = nullptr;
    for (QPushButton* p : cancel)
        if (p->text() == QStringLiteral("Cancel")) button = p;
    QVERIFY(button && button->isEnabled());
    button->click();
    s.waitForIdle();
    QVERIFY2(s.summary()->text().startsWith("Cancelled"), qPrintable(s.summary()->text()));
    QVERIFY(s.sweeps().size() < 4);
}

void TestGuiStitch::finetuneRanksProjectsAndExports() {
    FinetuneView f;
    f.resize(1400, 900);
    f.show();
    f.setModels(demo_, variant_);
    f.rank();
    f.waitForIdle();
    QVERIFY(f.ranking());
    const QString fit = columnsFitContents(f.rankingTable()); // no column spreads over the free width
    QVERIFY2(fit.isEmpty(), qPrintable(fit));
    QVERIFY(!f.tensorTable()->horizontalHeader()->stretchLastSection()); // (on a tab not shown)
    const FinetuneRanking ref = rankFinetuneChanges(*demo_, *variant_);
    QCOMPARE(f.rankingTable()->rowCount(), FinetuneView::kShownRows);
    QCOMPARE(f.rankingTable()->item(0, 1)->text(), ref.components().front().name());
    QCOMPARE(f.rankingTable()->item(0, 4)->data(Qt::UserRole).toDouble(), ref.components().front().relative);
    QVERIFY2(f.summary()->text().contains("Most changed head " + ref.heads.front().name()), qPrintable(f.summary()->text()));
    QCOMPARE(f.headOverview()->figure().values.rows(), Eigen::Index(2));
    QCOMPARE(f.headOverview()->figure().values.cols(), Eigen::Index(4));
    QCOMPARE(f.neuronOverview()->figure().values.cols(), Eigen::Index(512));
    QCOMPARE(f.tensorTable()->rowCount(), int(ref.tensors.size()));
    // the most changed component was projected at once and is the selected row
    const ComponentChange first = ref.components().front();
    QVERIFY2(f.projectionSummary()->text().contains(" of " + first.name()), qPrintable(f.projectionSummary()->text()));
    QCOMPARE(f.projectionTop()->rowCount(), 20);
    QCOMPARE(f.rankingTable()->selectionModel()->selectedRows().value(0).row(), 0);
    // now click the first head in the heads filter
    f.setFilter(FinetuneView::Filter::Heads);
    QCOMPARE(f.rankingTable()->rowCount(), 8);
    f.rankingTable()->selectRow(0);
    f.waitForIdle();
    const ComponentChange& h = ref.heads.front();
    const PairDiff d = diffPairs(*demo_, *variant_, PairProjectionKind::OV, h.layer, h.index, 20);
    QCOMPARE(f.projectionTop()->rowCount(), 20);
    QCOMPARE(f.projectionTop()->item(0, 1)->data(Qt::UserRole).toInt(), d.top[0].row);
    QCOMPARE(f.projectionTop()->item(0, 2)->data(Qt::UserRole).toInt(), d.top[0].col);
    QVERIFY2(f.projectionSummary()->text().contains("ΔW_OV of " + h.name()), qPrintable(f.projectionSummary()->text()));
    QVERIFY(f.projectionSummary()->text().contains("E = A's W_E"));
    // a neuron from the overview
    f.showComponent(ComponentChange::Kind::Neuron, 1, 7, ChangedParameter::FFValue);
    f.waitForIdle();
    const NeuronDiff n = diffNeuron(*demo_, *variant_, NeuronVectorKind::FFValue, 1, 7, 20);
    QCOMPARE(f.projectionTop()->item(0, 1)->data(Qt::UserRole).toInt(), n.top[0].id);
    QCOMPARE(f.projectionBottom()->item(0, 1)->data(Qt::UserRole).toInt(), n.bottom[0].id);
    // exports
    const QString csv = tmp_.filePath("ranking.csv");
    QCOMPARE(f.exportCsv(csv), QString());
    QCOMPARE(readFile(csv).count('\n'), 1 + 8 + 1024);
    QVERIFY(readFile(tmp_.filePath("ranking_tensors.csv")).count('\n') > 20);
    const QString png = tmp_.filePath("finetune.png");
    QCOMPARE(f.exportPng(png), QString());
    for (const char* part : {"heads", "neurons", "ranking"}) {
        const QImage img(tmp_.filePath(QStringLiteral("finetune_%1.png").arg(part)));
        QVERIFY2(!img.isNull() && img.width() > 300, part);
    }
}

void TestGuiStitch::finetuneRefusesOtherArchitectures() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    FinetuneView f;
    f.setModels(demo_, loadModel(testdata("tiny-gpt2")));
    f.rank();
    f.waitForIdle();
    QVERIFY(!f.ranking());
    QVERIFY2(f.summary()->text().startsWith("Cannot rank the changes: The two models differ in n_heads") ||
                 f.summary()->text().startsWith("Cannot rank the changes: The two models differ in"),
             qPrintable(f.summary()->text()));
    QVERIFY(tableFigureOf(f.rankingTable())->isShowingEmptyState());
}

void TestGuiStitch::settingsRoundTrip() {
    ModelComparePanel a;
    a.subTabs()->setCurrentIndex(2);
    a.stitchView()->setSwapped(true);
    a.stitchView()->setText(QStringLiteral("And God said"));
    a.stitchView()->setInverseChoice(StitchView::Choice::Second);
    a.stitchView()->setNormChoice(StitchView::Choice::Both);
    a.stitchView()->setSide(EmbeddingSide::Output);
    a.stitchView()->setRcond(1e-6);
    a.finetuneView()->setFilter(FinetuneView::Filter::Neurons);
    a.finetuneView()->showComponent(ComponentChange::Kind::Neuron, 1, 7, ChangedParameter::FFKey);
    const QJsonObject state = a.saveState();
    QCOMPARE(state["subTab"].toString(), QString("finetune"));
    const QJsonObject st = state["stitch"].toObject();
    QCOMPARE(st["inverse"].toString(), QString("transpose"));
    QCOMPARE(st["side"].toString(), QString("W_U"));
    QCOMPARE(st["rcond"].toDouble(), 1e-6);
    QCOMPARE(state["finetune"].toObject()["component"].toString(), QString("L1N7"));
    QCOMPARE(state["finetune"].toObject()["parameter"].toString(), QString("ffkey"));
    ModelComparePanel b;
    QStringList problems;
    b.restoreState(state, &problems);
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join("; ")));
    QCOMPARE(b.saveState(), state);
    // bad values are named, the rest restored
    QJsonObject bad = state;
    QJsonObject bst = st;
    bst["rcond"] = 0.5;
    bst["inverse"] = "sideways";
    bad["stitch"] = bst;
    QJsonObject bft = state["finetune"].toObject();
    bft["component"] = "L1X7";
    bad["finetune"] = bft;
    ModelComparePanel c;
    c.restoreState(bad, &problems);
    QCOMPARE(problems.size(), 3);
    QVERIFY2(problems.join(";").contains("rcond 0.5"), qPrintable(problems.join("; ")));
    QVERIFY(problems.join(";").contains("L1X7"));
    QCOMPARE(c.saveState()["stitch"].toObject()["side"].toString(), QString("W_U"));
}

QTEST_MAIN(TestGuiStitch)
#include "tst_gui_stitch.moc"
