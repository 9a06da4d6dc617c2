// BackgroundTool (views/common/background_tool.h), the base of the background tool views, in a small view of
// its own built the way the patching or flow views are: inputs (n, mode), Run, a job on a worker thread that
// computes the n × n table of i·j (or i + j) row by row behind a gate the test opens, a MatrixHeatmap for the
// result and a status line. Checked: Run starts the job and the progress reaches the bar; the result equals the
// table computed here; Cancel stops the job and the status line says so; a second Run replaces the first (the
// first's result is never shown); a failure shows its message; an input problem (reject) and a new context drop
// the running job; the settings are saved under their keys and restored with the inputs' signals blocked, with a
// problem line for each value that cannot be used; a view destroyed mid-job waits for it.

#include "model/core/errors.h"
#include "support/time_scale.h"
#include "views/common/background_tool.h"
#include "views/figures/matrix_heatmap.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QThread>
#include <QVBoxLayout>
#include <QtTest>
#include <atomic>
#include <memory>

using namespace attnscope;
using namespace attnscope::test;

namespace {

/// A background tool view as a future one would be written: inputs, Run, progress, Cancel, a heatmap.
class TableView : public QWidget {
public:
    TableView() : tool_(QStringLiteral("Run"), QStringLiteral("Pick n, then Run.")) {
        n_ = new QSpinBox;
        n_->setRange(1, 50);
        n_->setValue(4);
        mode_ = new QComboBox;
        mode_->addItems({QStringLiteral("product"), QStringLiteral("sum"), QStringLiteral("fail")});
        heatmap_ = new MatrixHeatmap;
        heatmap_->setEmptyText(QStringLiteral("Run to fill the table."));
        tool_.addTo(new QVBoxLayout(this), {n_, mode_}, heatmap_);
        tool_.settings().add(QStringLiteral("n"), n_);
        tool_.settings().add(QStringLiteral("mode"), mode_, {QStringLiteral("product"), QStringLiteral("sum"), QStringLiteral("fail")});
        connect(&tool_, &BackgroundTool::runRequested, this, [this] { run(); });
    }

    /// Starts the job; it computes row r only once the gate is above r.
    void run() {
        if (n_->value() > 40) return tool_.reject(QStringLiteral("n = %1 is too large: at most 40").arg(n_->value()));
        const int n = n_->value(), mode = mode_->currentIndex();
        auto gate = gate_;
        tool_.start(QStringLiteral("Computing…"), [this, n, mode, gate](const BackgroundTask::Context& ctx) -> std::function<void()> {
            if (mode == 2) throw InputError(QStringLiteral("/tmp/table.bin: not a matrix file"));
            Matrix m(n, n);
            for (int r = 0; r < n; ++r) {
                ctx.progress.step(r, n, QStringLiteral("row"));
                QElapsedTimer waited;
                waited.start();
                while (gate->load() <= r) { // the test opens the gate row by row
                    ctx.progress.checkCancelled();
                    if (waited.elapsed() > 20000 * kTimeScale) throw std::runtime_error("the gate never opened");
                    QThread::msleep(1);
                }
                for (int c = 0; c < n; ++c) m(r, c) = float(mode == 0 ? r * c : r + c);
            }
            ctx.progress.step(n, n, QStringLiteral("row"));
            return [this, m, n] {
                MatrixFigure f;
                f.values = m;
                f.title = QStringLiteral("%1 × %1").arg(n);
                heatmap_->setFigure(f);
                ++applied_;
                tool_.setStatus(QStringLiteral("Done: %1 × %1.").arg(n));
            };
        });
    }

    BackgroundTool tool_;
    std::shared_ptr<std::atomic<int>> gate_ = std::make_shared<std::atomic<int>>(0);
    QSpinBox* n_;
    QComboBox* mode_;
    MatrixHeatmap* heatmap_;
    int applied_ = 0; ///< results shown
};

QPushButton* button(QWidget& w, const QString& text) {
    for (QPushButton* b : w.findChildren<QPushButton*>())
        if (b->text() == text) return b;
    return nullptr;
}

} // namespace

class TestGuiBackgroundTool : public QObject {
    Q_OBJECT
private slots:
    void runShowsProgressThenTheResult() {
        TableView v;
        v.show();
        auto* bar = v.findChild<QProgressBar*>();
        QPushButton* cancel = button(v, "Cancel");
        QVERIFY(bar && cancel);
        QVERIFY(!bar->isVisible());
        QVERIFY(!cancel->isEnabled());
        QCOMPARE(v.tool_.statusText(), QString("Pick n, then Run."));
        // the widgets in the order addTo promises: n, mode, Run, bar, Cancel in one row; status; heatmap
        auto* row = qobject_cast<QHBoxLayout*>(v.layout()->itemAt(0)->layout());
        QVERIFY(row);
        QCOMPARE(row->itemAt(0)->widget(), v.n_);
        QCOMPARE(row->itemAt(1)->widget(), v.mode_);
        QCOMPARE(row->itemAt(2)->widget(), v.tool_.runButton());
        QCOMPARE(row->itemAt(3)->widget(), bar);
        QCOMPARE(row->itemAt(4)->widget(), cancel);
        QCOMPARE(v.layout()->itemAt(1)->widget(), v.tool_.statusLabel());
        QCOMPARE(v.layout()->itemAt(2)->widget(), v.heatmap_);

        QTest::mouseClick(v.tool_.runButton(), Qt::LeftButton); // Run → runRequested → run()
        QVERIFY(v.tool_.isRunning());
        QCOMPARE(v.tool_.statusText(), QString("Computing…"));
        QVERIFY(bar->isVisible());
        QVERIFY(cancel->isEnabled());
        v.gate_->store(2); // rows 0 and 1, then the job waits before row 2
        QTRY_COMPARE_WITH_TIMEOUT(bar->value(), 2, int(5000 * kTimeScale));
        QCOMPARE(bar->maximum(), 4);
        QCOMPARE(bar->format(), QString("row %p%"));
        QCOMPARE(bar->text(), QString("row 50%"));
        QVERIFY(v.tool_.isRunning());
        QCOMPARE(v.applied_, 0);

        v.gate_->store(100);
        v.tool_.waitForIdle();
        QVERIFY(!v.tool_.isRunning());
        QVERIFY(!bar->isVisible());
        QVERIFY(!cancel->isEnabled());
        QCOMPARE(v.applied_, 1);
        QCOMPARE(v.tool_.statusText(), QString("Done: 4 × 4."));
        const Matrix& m = v.heatmap_->figure().values;
        QCOMPARE(m.rows(), Eigen::Index(4));
        QCOMPARE(m.cols(), Eigen::Index(4));
        for (int r = 0; r < 4; ++r)
            for (int c = 0; c < 4; ++c) QCOMPARE(m(r, c), float(r * c));
        QCOMPARE(m(3, 2), 6.0f);
    }

    void cancelStopsTheJobAndSaysSo() {
        TableView v;
        v.show();
        v.run();
        v.gate_->store(1);
        auto* bar = v.findChild<QProgressBar*>();
        QTRY_COMPARE_WITH_TIMEOUT(bar->value(), 1, int(5000 * kTimeScale)); // the job waits before row 1
        QTest::mouseClick(button(v, "Cancel"), Qt::LeftButton);
        v.tool_.waitForIdle();
        QVERIFY(!v.tool_.isRunning());
        QCOMPARE(v.tool_.statusText(), QString("Cancelled."));
        QCOMPARE(v.applied_, 0);
        QCOMPARE(v.heatmap_->figure().values.size(), Eigen::Index(0)); // nothing of the cancelled job shown
        QVERIFY(!bar->isVisible());

        // a view's own words for a cancel, as the patching view counts its cells
        qint64 rowsDone = -1;
        connect(&v.tool_.task(), &BackgroundTask::progressChanged, this, [&](qint64 done, qint64, const QString&) { rowsDone = done; });
        v.tool_.setCancelledHandler([&] { v.tool_.setStatus(QStringLiteral("Cancelled after %1 rows.").arg(rowsDone)); });
        v.gate_->store(2);
        v.run();
        QTRY_COMPARE_WITH_TIMEOUT(bar->value(), 2, int(5000 * kTimeScale));
        v.tool_.cancel();
        v.tool_.waitForIdle();
        QCOMPARE(v.tool_.statusText(), QString("Cancelled after 2 rows."));
        QCOMPARE(v.applied_, 0);
    }

    void aSecondRunReplacesTheFirst() {
        TableView v;
        v.run(); // n = 4, held at row 0
        QVERIFY(v.tool_.isRunning());
        v.n_->setValue(3);
        v.mode_->setCurrentIndex(1); // i + j
        v.run(); // replaces it: the first is cancelled silently and its result dropped
        v.gate_->store(100);
        v.tool_.waitForIdle();
        QCOMPARE(v.applied_, 1);
        QCOMPARE(v.tool_.statusText(), QString("Done: 3 × 3."));
        const Matrix& m = v.heatmap_->figure().values;
        QCOMPARE(m.rows(), Eigen::Index(3));
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) QCOMPARE(m(r, c), float(r + c));
    }

    void aFailureShowsItsMessage() {
        TableView v;
        v.mode_->setCurrentIndex(2);
        v.run();
        v.tool_.waitForIdle();
        QCOMPARE(v.tool_.statusText(), QString("/tmp/table.bin: not a matrix file"));
        QCOMPARE(v.applied_, 0);
        QVERIFY(!v.tool_.isRunning());
        // a view's own words for a failure
        v.tool_.setFailedHandler([&v](const QString& m) { v.tool_.setStatus("Cannot compute the table: " + m); });
        v.run();
        v.tool_.waitForIdle();
        QCOMPARE(v.tool_.statusText(), QString("Cannot compute the table: /tmp/table.bin: not a matrix file"));
    }

    void anInputProblemDropsTheRunningJob() {
        TableView v;
        v.show();
        v.run(); // held at row 0
        QVERIFY(v.tool_.isRunning());
        v.n_->setValue(41);
        v.run(); // reject: the message, and the running job is dropped at once
        QCOMPARE(v.tool_.statusText(), QString("n = 41 is too large: at most 40"));
        QVERIFY(!v.tool_.isRunning());
        QVERIFY(!v.findChild<QProgressBar*>()->isVisible());
        v.gate_->store(100); // it could finish now; nothing of it is shown
        v.tool_.waitForIdle();
        QCOMPARE(v.applied_, 0);
        QCOMPARE(v.tool_.statusText(), QString("n = 41 is too large: at most 40"));
    }

    void aNewContextDropsTheRunningJob() {
        TableView v;
        v.run();
        QCOMPARE(v.tool_.statusText(), QString("Computing…"));
        v.tool_.newContext(); // e.g. another model opened
        QVERIFY(!v.tool_.isRunning());
        QCOMPARE(v.tool_.statusText(), QString("Pick n, then Run."));
        v.gate_->store(100);
        v.tool_.waitForIdle();
        QCOMPARE(v.applied_, 0);
        QCOMPARE(v.heatmap_->figure().values.size(), Eigen::Index(0));
        // after it, a run is shown as usual
        v.run();
        v.tool_.waitForIdle();
        QCOMPARE(v.applied_, 1);
        QCOMPARE(v.heatmap_->figure().values(3, 3), 9.0f);
    }

    void settingsRoundTripThroughASession() {
        TableView v;
        v.n_->setValue(7);
        v.mode_->setCurrentIndex(1);
        QJsonObject saved{{"other", 1}};
        v.tool_.settings().save(saved);
        QCOMPARE(saved, (QJsonObject{{"other", 1}, {"n", 7}, {"mode", "sum"}}));

        TableView w;
        int emitted = 0;
        connect(w.n_, &QSpinBox::valueChanged, this, [&] { ++emitted; });
        connect(w.mode_, &QComboBox::currentIndexChanged, this, [&] { ++emitted; });
        QStringList problems;
        w.tool_.settings().restore(PanelStateReader(saved, "Table", &problems));
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join("; ")));
        QCOMPARE(w.n_->value(), 7);
        QCOMPARE(w.mode_->currentIndex(), 1);
        QCOMPARE(emitted, 0); // restored with the signals blocked: no job per value

        // values it cannot use: each named, the inputs as they were; absent keys are fine
        w.tool_.settings().restore(PanelStateReader(QJsonObject{{"n", 99}, {"mode", "cube"}}, "Table", &problems));
        QCOMPARE(problems, (QStringList{"Table: n = 99 is not an integer in 1..50",
                                        "Table: mode = \"cube\" is not one of product, sum, fail"}));
        QCOMPARE(w.n_->value(), 7);
        QCOMPARE(w.mode_->currentIndex(), 1);
        problems.clear();
        w.tool_.settings().restore(PanelStateReader(QJsonObject{}, "Table", &problems));
        QVERIFY(problems.isEmpty());
        QCOMPARE(w.n_->value(), 7);
    }

    void theStatusLineIsPlainText() {
        TableView v;
        v.tool_.setStatus("<s> is a token, not markup");
        QCOMPARE(v.tool_.statusLabel()->textFormat(), Qt::PlainText);
        QVERIFY(v.tool_.statusLabel()->wordWrap());
        QCOMPARE(v.tool_.statusText(), QString("<s> is a token, not markup"));
        // without a run text there is no Run button, and the row is the inputs, the bar and Cancel
        BackgroundTool bare;
        QVERIFY(!bare.runButton());
        QHBoxLayout* row = bare.controlRow({});
        QVERIFY(qobject_cast<QProgressBar*>(row->itemAt(0)->widget()));
        QCOMPARE(qobject_cast<QPushButton*>(row->itemAt(1)->widget())->text(), QString("Cancel"));
        QWidget holder;
        holder.setLayout(row);
        // a view's own label as the status line (the head detectors' bar): failures and cancels go there
        QLabel own;
        bare.useStatusLabel(&own);
        bare.start([](const BackgroundTask::Context&) -> std::function<void()> { throw InputError("weights.bin: truncated"); });
        bare.waitForIdle();
        QCOMPARE(own.text(), QString("weights.bin: truncated"));
        QCOMPARE(bare.statusText(), QString("weights.bin: truncated"));
    }

    void aViewDestroyedMidJobWaitsForIt() {
        auto v = std::make_unique<TableView>();
        v->run(); // the gate stays closed: only the cancel on destruction ends the job
        QVERIFY(v->tool_.isRunning());
        QElapsedTimer t;
        t.start();
        v.reset();
        QVERIFY(t.elapsed() < 5000 * kTimeScale);
    }
};

QTEST_MAIN(TestGuiBackgroundTool)
#include "tst_gui_background_tool.moc"
