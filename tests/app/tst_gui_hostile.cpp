// The main window, offscreen, under hostile input: awkward prompts (empty, whitespace only, control
// characters, right-to-left, emoji, combining marks) run with sensible labels; a prompt longer than
// n_ctx asks whether to run its last n_ctx tokens (both answers); a 100 KB paste is kept whole; a
// model with NaN weights opens, warns naming the tensor and still draws its heatmap; and the last
// model, prompt, layer and head come back on the next start (QSettings in a temporary folder).

#include "app/main_window.h"
#include "app/startup_model.h"
#include "model/formats/safetensors_file.h"
#include "model/transformer/prompt.h"
#include "support/safetensors_writer.h"
#include "support/test_paths.h"
#include "views/attention/attention_heatmap.h"

#include <QCheckBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>
#include <cstring>
#include <limits>

using namespace attnscope;
using namespace attnscope::test;

namespace {

QString statusText(MainWindow& w) {
    const QList<QLabel*> labels = w.statusBar()->findChildren<QLabel*>();
    return labels.isEmpty() ? QString() : labels.first()->text();
}

/// Answers the next modal message box by clicking the button whose text starts with `button`,
/// remembering the box's text in *seen.
class BoxAnswerer : public QObject {
public:
    BoxAnswerer(QString button, QString* seen) : button_(std::move(button)), seen_(seen) {
        connect(&timer_, &QTimer::timeout, this, [this] {
            auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
            if (!box) return;
            *seen_ = box->text();
            for (QAbstractButton* b : box->buttons())
                if (b->text().remove(QLatin1Char('&')).startsWith(button_)) {
                    b->click();
                    return;
                }
            box->reject();
        });
        timer_.start(30);
    }

private:
    QString button_;
    QString* seen_;
    QTimer timer_;
};

} // namespace

class TestGuiHostile : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QVERIFY(settingsDir_.isValid());
        // settings go to a temporary folder, never to the user's
        QCoreApplication::setOrganizationName(QStringLiteral("AttnScopeHostileTest"));
        QCoreApplication::setApplicationName(QStringLiteral("AttnScope"));
        QSettings::setDefaultFormat(QSettings::IniFormat);
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settingsDir_.path());
        QSettings().clear();
        model_ = copyTiny(QStringLiteral("tiny"));
        w_ = std::make_unique<MainWindow>();
        w_->show();
        QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
        w_->openModel(model_, QStringLiteral("hello"));
        QVERIFY(ran.wait(30000));
    }

    void awkwardPromptsRun_data() {
        QTest::addColumn<QString>("text");
        QTest::newRow("empty") << QString();
        QTest::newRow("whitespace only") << QStringLiteral("  \t  ");
        QTest::newRow("control chars") << QStringLiteral("a\x01\x02\x7f\rb");
        QTest::newRow("right-to-left") << QStringLiteral("مرحبا שלום");
        QTest::newRow("emoji") << QStringLiteral("🙂👍🏽");
        QTest::newRow("combining marks") << QStringLiteral("e\u0301\u0302 n\u0303");
    }

    void awkwardPromptsRun() {
        QFETCH(QString, text);
        QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
        w_->setPrompt(text);
        w_->runPrompt();
        QVERIFY(ran.wait(30000));
        const auto model = w_->session().model();
        const std::vector<int> expected = tokenizePrompt(model->tokenizer(), text, true);
        QCOMPARE(w_->session().cache()->tokens, expected);
        const QStringList labels = w_->session().tokenLabels();
        QCOMPARE(labels.size(), qsizetype(expected.size()));
        for (const QString& l : labels) {
            QVERIFY(!l.isEmpty());
            for (QChar c : l) QVERIFY2(c.category() != QChar::Other_Control, qPrintable(l));
        }
        QCOMPARE(w_->heatmap()->pattern().rows(), Eigen::Index(expected.size()));
        QCOMPARE(statusText(*w_), QStringLiteral("Ran %1 tokens.").arg(expected.size()));
    }

    void emptyPromptWithoutBosShowsTheMessage() {
        w_->setPrompt(QString());
        auto* bos = w_->findChild<QCheckBox*>();
        QVERIFY(bos);
        QString seen;
        BoxAnswerer answer(QStringLiteral("OK"), &seen);
        QSignalSpy failed(&w_->session(), &ModelSession::forwardFailed);
        bos->setChecked(false); // re-runs the prompt
        QVERIFY(failed.wait(10000));
        QTRY_COMPARE(seen, QStringLiteral("The prompt is empty: there are no tokens to run."));
        bos->setChecked(true);
        QTRY_VERIFY(!w_->session().isBusy());
        w_->session().waitForIdle();
    }

    void tooLongPromptOffersTruncation() {
        QString text;
        while (text.toUtf8().size() < 100 * 1024) text += QStringLiteral("The cat sat on the mat. שלום 🙂 ");
        w_->setPrompt(text);
        QCOMPARE(w_->findChild<QLineEdit*>()->text().size(), text.size()); // the 100 KB paste is kept whole
        const std::vector<int> all = tokenizePrompt(w_->session().model()->tokenizer(), text, true);

        // Cancel: nothing runs, the status says why
        QString seen;
        {
            BoxAnswerer answer(QStringLiteral("Cancel"), &seen);
            QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
            w_->runPrompt();
            QCOMPARE(seen, QStringLiteral("The prompt has %1 tokens but the model's context (n_ctx) is 64 tokens.").arg(all.size()));
            QVERIFY(!ran.wait(500));
            QCOMPARE(statusText(*w_), QStringLiteral("Not run: the prompt has %1 tokens, more than n_ctx = 64.").arg(all.size()));
        }
        // Run the last 64 tokens: BOS first, then the end of the prompt
        {
            BoxAnswerer answer(QStringLiteral("Run the Last 64 Tokens"), &seen);
            QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
            QElapsedTimer timer;
            timer.start();
            w_->runPrompt();
            QVERIFY(ran.wait(30000));
            qInfo("100 KB prompt: tokenized, asked and run in %lld ms", timer.elapsed());
            const auto cache = w_->session().cache();
            QCOMPARE(cache->nPositions(), 64);
            QCOMPARE(cache->tokens.front(), 511);
            QCOMPARE(std::vector<int>(cache->tokens.begin() + 1, cache->tokens.end()),
                     std::vector<int>(all.end() - 63, all.end()));
            QCOMPARE(w_->heatmap()->pattern().rows(), Eigen::Index(64));
        }
    }

    void nanWeightsWarnAndStillDraw() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const QString dir = copyTiny(QStringLiteral("nan"));
        QByteArray bytes = readFile(dir + QStringLiteral("/model.safetensors"));
        const SafetensorsHeader h = parseSafetensorsHeader(bytes, bytes.size(), QStringLiteral("model.safetensors"));
        const float nan = std::numeric_limits<float>::quiet_NaN();
        for (const SafetensorsTensor& t : h.tensors)
            if (t.name == QLatin1String("h.1.attn.c_attn.weight")) std::memcpy(bytes.data() + h.dataOffset + t.begin, &nan, 4);
        writeFile(dir + QStringLiteral("/model.safetensors"), bytes);

        QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
        w_->openModel(dir, QStringLiteral("The cat sat"));
        QVERIFY(ran.wait(30000));
        QCOMPARE(statusText(*w_), QStringLiteral("Warning: the logits contain NaN or Inf; NaN/Inf weights in blocks.1.attn.W_Q."));
        // layer 0 is finite and drawn; layer 1 head 0 is all NaN and still renders (as masked cells)
        for (int layer : {0, 1}) {
            w_->selectHead(layer, 0);
            const QImage img = w_->heatmap()->grab().toImage();
            QVERIFY(!img.isNull() && img.width() > 100);
            QSet<QRgb> colours;
            for (int y = 0; y < img.height(); y += 4)
                for (int x = 0; x < img.width(); x += 4) colours.insert(img.pixel(x, y));
            QVERIFY2(colours.size() > 3, qPrintable(QString::number(colours.size())));
        }
        QVERIFY(std::isnan(w_->heatmap()->pattern()(1, 0)));
    }

    void lastSessionIsRestored() {
        QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
        w_->openModel(model_, QStringLiteral("restore me, please"));
        QVERIFY(ran.wait(30000));
        w_->selectHead(1, 2);
        w_->close();
        w_.reset();

        QCOMPARE(startupModelPath(QString()), model_);
        QCOMPARE(startupModelPath(QStringLiteral("/some/other")), QStringLiteral("/some/other"));
        QCOMPARE(startupModelPath(QStringLiteral("demo")), QStringLiteral(":/demo"));
        MainWindow again;
        QCOMPARE(again.findChild<QLineEdit*>()->text(), QStringLiteral("restore me, please"));
        QSignalSpy ran2(&again.session(), &ModelSession::forwardFinished);
        again.openModel(startupModelPath(QString()));
        QVERIFY(ran2.wait(30000));
        QCOMPARE(again.session().model()->info().path, model_);
        QCOMPARE(again.layer(), 1);
        QCOMPARE(again.head(), 2);
        QVERIFY(again.heatmap()->title().contains(QStringLiteral("layer 1, head 2")));
        QCOMPARE(again.session().cache()->tokens,
                 tokenizePrompt(again.session().model()->tokenizer(), QStringLiteral("restore me, please"), true));

        // the last model is gone: the demo model opens instead
        QVERIFY(QDir(model_).removeRecursively());
        QCOMPARE(startupModelPath(QString()), QStringLiteral(":/demo"));
    }

private:
    QString copyTiny(const QString& name) {
        const QString dir = tmp_.filePath(name);
        QDir().mkpath(dir);
        copyFiles(testdata(QStringLiteral("tiny-gpt2")), dir,
                  {"config.json", "vocab.json", "merges.txt", "model.safetensors"});
        return dir;
    }

    QTemporaryDir settingsDir_;
    QTemporaryDir tmp_;
    QString model_;
    std::unique_ptr<MainWindow> w_;
};

QTEST_MAIN(TestGuiHostile)
#include "tst_gui_hostile.moc"
