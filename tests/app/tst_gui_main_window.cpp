// The main window, offscreen: open a model, run a prompt, move between heads with the keyboard,
// click the head grid, export the current heatmap as PNG/SVG/PDF and all heads; values shown are
// the forward cache's (checked against the picoGPT reference pattern of tiny-gpt2 L1H3, 1e-5); a finished
// job's status message goes away, an error stays until the next job starts.

#include "app/main_window.h"
#include "app/status_line.h"
#include "support/reference_json.h"
#include "support/test_paths.h"
#include "views/attention/attention_heatmap.h"
#include "views/attention/head_grid.h"

#include <QImage>
#include <QMessageBox>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

class TestGuiMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void opensRunsAndShowsHeads();
    void keyboardMovesBetweenHeads();
    void exportsCurrentAndAllHeads();
    void failedLoadKeepsPreviousModel();
    void finishedJobMessagesAreTemporary();
    void newJobClearsTheLastMessage();

private:
    std::unique_ptr<MainWindow> w_;
};

void TestGuiMainWindow::initTestCase() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QCoreApplication::setOrganizationName("AttnScopeTest"); // keep the user's settings untouched
    w_ = std::make_unique<MainWindow>();
    w_->show();
    QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
    const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
    w_->openModel(testdata("tiny-gpt2"), ref["prompt"].toString());
    QVERIFY(ran.wait(30000));
}

void TestGuiMainWindow::opensRunsAndShowsHeads() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const auto cache = w_->session().cache();
    QVERIFY(cache);
    QCOMPARE(cache->nPositions(), 18); // BOS on by default
    // tiny-gpt2's 255 merges split " cat" into " c" + "at"
    QCOMPARE(w_->session().tokenLabels().at(2), QString::fromUtf8("␣c"));
    QCOMPARE(w_->session().tokenLabels().at(3), QString::fromUtf8("at"));
    w_->selectHead(1, 3);
    const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
    const Matrix refPattern = matrixFromJson(ref["variants"].toObject()["float32"].toObject()["attention_layer1_head3"].toArray());
    QVERIFY(maxAbsDiff(w_->heatmap()->pattern(), refPattern) <= 1e-5);
    QVERIFY(w_->heatmap()->title().contains("layer 1, head 3"));
}

void TestGuiMainWindow::keyboardMovesBetweenHeads() {
    w_->selectHead(0, 0);
    QWidget* target = w_->heatmap();
    target->setFocus();
    QTest::keyClick(target, Qt::Key_Right);
    QCOMPARE(w_->head(), 1);
    QTest::keyClick(target, Qt::Key_Down);
    QCOMPARE(w_->layer(), 1);
    QTest::keyClick(target, Qt::Key_PageUp);
    QCOMPARE(w_->layer(), 0);
    QTest::keyClick(target, Qt::Key_Left);
    QCOMPARE(w_->head(), 0);
    // the heatmap follows the selection
    QVERIFY(maxAbsDiff(w_->heatmap()->pattern(), w_->session().cache()->layers[0].pattern[0]) == 0.0);
}

void TestGuiMainWindow::exportsCurrentAndAllHeads() {
    QTemporaryDir dir;
    w_->selectHead(1, 2);
    QCOMPARE(w_->exportCurrentHeatmap(dir.filePath("h.png"), QSize(700, 600), 2.0), QString());
    QCOMPARE(w_->exportCurrentHeatmap(dir.filePath("h.svg"), QSize(700, 600), 1.0), QString());
    QCOMPARE(w_->exportCurrentHeatmap(dir.filePath("h.pdf"), QSize(700, 600), 1.0), QString());
    const QImage png(dir.filePath("h.png"));
    QCOMPARE(png.size(), QSize(1400, 1200));
    QSet<QRgb> colours;
    for (int y = 0; y < png.height(); y += 4)
        for (int x = 0; x < png.width(); x += 4) colours.insert(png.pixel(x, y));
    QVERIFY(colours.size() > 30);
    QFile svg(dir.filePath("h.svg"));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    QVERIFY(svg.readAll().contains("layer 1, head 2"));
    QFile pdf(dir.filePath("h.pdf"));
    QVERIFY(pdf.open(QIODevice::ReadOnly));
    QCOMPARE(pdf.read(5), QByteArray("%PDF-"));

    QTemporaryDir all;
    QCOMPARE(w_->exportAllHeads(all.path(), "png", QSize(400, 360), 1.0), QString());
    QCOMPARE(QDir(all.path()).entryList(QDir::Files).size(), 8);
    QCOMPARE(QImage(all.filePath("L0_H3.png")).size(), QSize(400, 360));
}

void TestGuiMainWindow::failedLoadKeepsPreviousModel() {
    QTemporaryDir dir;
    const auto before = w_->session().model();
    QSignalSpy failed(&w_->session(), &ModelSession::modelLoadFailed);
    // the error dialog is modal: close it as soon as it shows, remembering its text
    QString dialogText;
    QTimer closer;
    connect(&closer, &QTimer::timeout, [&] {
        if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
            dialogText = box->text();
            box->accept();
        }
    });
    closer.start(50);
    w_->session().openModel(dir.path());
    QVERIFY(failed.wait(10000));
    QVERIFY2(failed.first().first().toString().contains(dir.path()), qPrintable(failed.first().first().toString()));
    QCOMPARE(dialogText, failed.first().first().toString());
    QCOMPARE(w_->session().model(), before);
    QVERIFY(w_->session().cache());
}

void TestGuiMainWindow::finishedJobMessagesAreTemporary() {
    auto* status = w_->statusBar()->findChild<StatusLine*>();
    QVERIFY(status);
    QCOMPARE(status->finishedTimeout(), StatusLine::kFinishedMs);
    status->setFinishedTimeout(300); // the test's patience, not the app's 6 s
    QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
    w_->setPrompt("The cat sat");
    w_->runPrompt();
    QVERIFY(ran.wait(30000));
    // "Ran 4 tokens." (or a panel's job that finished right after it, such as the logit lens)
    QVERIFY2(status->isTemporary() && !status->text().isEmpty(), qPrintable(status->text()));
    QTRY_COMPARE_WITH_TIMEOUT(status->text(), QString(), 5000); // cleared: it no longer describes the last job
    status->showFinished("Exported x.png");
    QCOMPARE(status->text(), QString("Exported x.png"));
    QTRY_COMPARE_WITH_TIMEOUT(status->text(), QString(), 5000);
    // a message that is no job's result (progress, a warning, an error) stays until replaced
    status->showMessage("Warning: kept");
    QVERIFY(!status->isTemporary());
    QTest::qWait(600);
    QCOMPARE(status->text(), QString("Warning: kept"));
    // a finished message replaced by progress: the progress is not cleared by the old timer
    status->showFinished("Exported x.png");
    status->showMessage("Computing layer 1…");
    QTest::qWait(600);
    QCOMPARE(status->text(), QString("Computing layer 1…"));
    status->setFinishedTimeout(StatusLine::kFinishedMs);
}

void TestGuiMainWindow::newJobClearsTheLastMessage() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    auto* status = w_->statusBar()->findChild<StatusLine*>();
    QVERIFY(status);
    // a warning stays while nothing happens, and goes as soon as the prompt runs again
    status->showMessage("Warning: the logits contain NaN or Inf.");
    QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
    w_->setPrompt("The cat sat");
    w_->runPrompt();
    QVERIFY(w_->session().isBusy());
    QCOMPARE(status->text(), QString()); // cleared when the job started (its progress is queued, not shown yet)
    QVERIFY(ran.wait(30000));
    QVERIFY2(!status->text().contains("Warning"), qPrintable(status->text()));
    // likewise opening a model: an error of the last job is replaced by what the new one does
    status->showMessage("Cannot run the prompt: something");
    QSignalSpy loaded(&w_->session(), &ModelSession::modelLoaded);
    w_->openModel(testdata("tiny-gpt2"));
    QCOMPARE(status->text(), QString("Opening %1…").arg(testdata("tiny-gpt2")));
    QVERIFY(loaded.wait(30000));
    QVERIFY(ran.wait(30000)); // the prompt runs after the model opened
    w_->session().waitForIdle();
    QVERIFY2(!status->text().contains("Cannot run"), qPrintable(status->text()));
}

QTEST_MAIN(TestGuiMainWindow)
#include "tst_gui_main_window.moc"
