// Opening models in the window, offscreen: a simulated drop of a folder or a session file, File → Open
// Recent (newest first, ten at most, stale entries marked and disabled), the reload question when the
// open model's files change on disk, the Open dialog accepting model folders, Ctrl+1…9 for the tabs,
// the keyboard-shortcut list and the per-tab guides behind the "?" buttons.

#include "app/help_browser.h"
#include "app/keyboard_shortcuts.h"
#include "app/main_window.h"
#include "app/model_drop.h"
#include "app/model_file_watcher.h"
#include "app/model_open_dialog.h"
#include "app/recent_models.h"
#include "app/session_controller.h"
#include "model/formats/open_support.h"
#include "support/modal_closer.h"
#include "support/safetensors_writer.h"
#include "support/test_paths.h"

#include <QAction>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QMenu>
#include <QMimeData>
#include <QSignalSpy>
#include <QTabBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QToolButton>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

class TestGuiOpenModel : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void dropOpensModelFolder();
    void dropOpensSessionFile();
    void dropOfNothingUsableIsRefused();
    void recentModels();
    void llama2cWithTokenizerFromTheCommandLine();
    void reloadIsOfferedWhenTheModelChanges();
    void openDialogAcceptsModelFolders();
    void unsupportedModelSaysWhy();
    void ctrlNumberSelectsTabs();
    void shortcutListCoversTheMenus();
    void everyTabHasAGuide();

private:
    QString copyTiny(const QString& name);
    /// Sends a drag-enter and a drop of `urls` to the window; returns whether the drop was accepted.
    bool drop(const QList<QUrl>& urls);
    QTemporaryDir tmp_;
    std::unique_ptr<MainWindow> w_;
};

void TestGuiOpenModel::initTestCase() {
    qputenv("HOME", tmp_.path().toUtf8()); // QSettings (recent models) stays inside the test
    for (const char* v : {"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE", "OLLAMA_MODELS"}) qunsetenv(v);
    QCoreApplication::setOrganizationName("AttnScopeTest");
    clearRecentModels();
    w_ = std::make_unique<MainWindow>();
    w_->show();
    w_->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w_.get()));
}

QString TestGuiOpenModel::copyTiny(const QString& name) {
    const QString dir = tmp_.filePath(name);
    QDir().mkpath(dir);
    copyFiles(testdata("tiny-gpt2"), dir, {"config.json", "vocab.json", "merges.txt", "model.safetensors"});
    return dir;
}

bool TestGuiOpenModel::drop(const QList<QUrl>& urls) {
    QMimeData mime;
    mime.setUrls(urls);
    QDragEnterEvent enter(QPoint(200, 200), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(w_.get(), &enter);
    if (!enter.isAccepted()) return false;
    QDropEvent dropEvent(QPointF(200, 200), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(w_.get(), &dropEvent);
    return dropEvent.isAccepted();
}

void TestGuiOpenModel::dropOpensModelFolder() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const QString dir = copyTiny("dropped");
    QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
    QVERIFY(drop({QUrl::fromLocalFile(dir)}));
    QVERIFY(ran.wait(30000));
    QCOMPARE(w_->session().model()->info().path, dir);
    QCOMPARE(w_->session().model()->config().n_layers, 2);
    QCOMPARE(w_->windowTitle(), QString("AttnScope — dropped"));
    // a dropped weight file opens too (its folder's config and tokenizer)
    QVERIFY(drop({QUrl::fromLocalFile(dir + "/model.safetensors")}));
    QVERIFY(ran.wait(30000));
    QCOMPARE(w_->session().model()->info().path, dir + "/model.safetensors");
}

void TestGuiOpenModel::dropOpensSessionFile() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const QString dir = copyTiny("for-session");
    SessionState s;
    s.model = dir;
    s.prompt = "dropped session";
    s.layer = 1;
    s.head = 3;
    s.tab = "attention-steps";
    QString error;
    QVERIFY(writeSessionFile(tmp_.filePath("d.attnscope"), s, &error));
    QSignalSpy restored(&w_->sessions(), &SessionController::restored);
    QVERIFY(drop({QUrl("https://example.com/x"), QUrl::fromLocalFile(tmp_.filePath("d.attnscope"))}));
    QVERIFY(restored.wait(30000));
    QCOMPARE(restored.first().first().toStringList(), QStringList());
    QCOMPARE(w_->session().model()->info().path, dir);
    QCOMPARE(w_->prompt(), QString("dropped session"));
    QCOMPARE(w_->head(), 3);
    QCOMPARE(w_->currentViewId(), QString("attention-steps"));
}

void TestGuiOpenModel::dropOfNothingUsableIsRefused() {
    const auto before = w_->session().model();
    QVERIFY(!drop({QUrl("https://huggingface.co/gpt2")}));
    QVERIFY(!drop({QUrl::fromLocalFile(tmp_.filePath("does-not-exist"))}));
    QMimeData text;
    text.setText("hello");
    QCOMPARE(droppedModelPath(&text), QString());
    QCOMPARE(droppedModelPath(nullptr), QString());
    QCOMPARE(w_->session().model(), before);
}

void TestGuiOpenModel::recentModels() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    clearRecentModels();
    const QString a = copyTiny("recent-a"), b = copyTiny("recent-b");
    QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
    w_->openModel(a);
    QVERIFY(ran.wait(30000));
    w_->openModel(b);
    QVERIFY(ran.wait(30000));
    QCOMPARE(attnscope::recentModels(), QStringList({b, a}));
    w_->openModel(a); // moves to the front, no duplicate
    QVERIFY(ran.wait(30000));
    QCOMPARE(attnscope::recentModels(), QStringList({a, b}));
    for (int i = 0; i < 12; ++i) addRecentModel(tmp_.filePath(QString("m%1").arg(i)));
    QCOMPARE(attnscope::recentModels().size(), kMaxRecentModels);
    QCOMPARE(attnscope::recentModels().first(), tmp_.filePath("m11"));
    QVERIFY(!attnscope::recentModels().contains(a)); // pushed out
    clearRecentModels();
    addRecentModel(a);
    addRecentModel(b);
    QVERIFY(QDir(b).removeRecursively()); // b is now stale
    emit w_->recentMenu()->aboutToShow();
    const QList<QAction*> actions = w_->recentMenu()->actions();
    QVERIFY(actions.size() >= 2);
    QVERIFY2(actions[0]->text().contains(b) && actions[0]->text().contains("(missing)"), qPrintable(actions[0]->text()));
    QVERIFY(!actions[0]->isEnabled());
    QVERIFY(actions[1]->text().contains(a) && !actions[1]->text().contains("(missing)"));
    QVERIFY(actions[1]->isEnabled());
    actions[1]->trigger(); // opens a
    QVERIFY(ran.wait(30000));
    QCOMPARE(w_->session().model()->info().path, a);
    QVERIFY(isStaleRecentModel(b));
    QVERIFY(!isStaleRecentModel("demo"));
}

/// `attnscope stories260K.bin --tokenizer tok512.bin` in window mode: the tokenizer reaches the loader (it
/// was used by the headless modes only, and the window said "no tokenizer").
void TestGuiOpenModel::llama2cWithTokenizerFromTheCommandLine() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
    w_->openModel(testdata("stories260K/stories260K.bin"), "Once upon a time", testdata("stories260K/tok512.bin"));
    QVERIFY(ran.wait(30000));
    QCOMPARE(w_->session().model()->info().path, testdata("stories260K/stories260K.bin"));
    QCOMPARE(w_->session().model()->tokenizer().vocabSize(), 512);
    QCOMPARE(w_->session().cache()->tokens, (std::vector<int>{1, 403, 407, 261, 378})); // run.c's ids
}

void TestGuiOpenModel::reloadIsOfferedWhenTheModelChanges() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const QString dir = copyTiny("watched");
    QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
    w_->openModel(dir, "The cat sat");
    QVERIFY(ran.wait(30000));
    w_->selectHead(1, 2);
    QCOMPARE(w_->fileWatcher()->watched(), QStringList({dir + "/config.json", dir + "/model.safetensors"}));
    w_->fileWatcher()->setSettleTime(50);
    QSignalSpy loaded(&w_->session(), &ModelSession::modelLoaded);
    QSignalSpy changed(w_->fileWatcher(), &ModelFileWatcher::changed);

    // "Keep": nothing reloads
    ModalCloser keep("Keep the Loaded Model");
    writeFile(dir + "/config.json", readFile(testdata("tiny-gpt2/config.json")));
    QVERIFY(changed.wait(5000));
    QTRY_COMPARE(keep.texts.size(), 1);
    QVERIFY2(keep.texts[0].contains(dir + "/config.json changed on disk") && keep.texts[0].contains("Reload the model?"),
             qPrintable(keep.texts[0]));
    QTest::qWait(200);
    QCOMPARE(loaded.size(), 0);

    // "Reload": the model opens again, the prompt and head stay
    keep.setAnswer("Reload");
    const auto old = w_->session().model();
    // a tool that saves by writing a new file and renaming it over the old one
    writeFile(dir + "/config.json.tmp", readFile(testdata("tiny-gpt2/config.json")));
    QVERIFY(QFile::remove(dir + "/config.json"));
    QVERIFY(QFile::rename(dir + "/config.json.tmp", dir + "/config.json"));
    QVERIFY(loaded.wait(10000));
    QVERIFY(ran.wait(30000));
    QCOMPARE(keep.texts.size(), 2);
    QVERIFY(w_->session().model() != old);
    QCOMPARE(w_->session().model()->info().path, dir);
    QCOMPARE(w_->prompt(), QString("The cat sat"));
    QTRY_COMPARE(w_->head(), 2);
    // the replaced file is watched again
    QVERIFY(w_->fileWatcher()->watched().contains(dir + "/config.json"));
    changed.clear();
    keep.setAnswer("Keep the Loaded Model");
    writeFile(dir + "/config.json", readFile(testdata("tiny-gpt2/config.json")));
    QVERIFY(changed.wait(5000));
    QTRY_COMPARE(keep.texts.size(), 3);
    // the demo in the binary has no files to watch
    QCOMPARE(modelFilesOnDisk(ModelInfo{"demo", ":/demo", "F32", 0, {"model.safetensors"}, false, {}}), QStringList());
}

void TestGuiOpenModel::openDialogAcceptsModelFolders() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const QString dir = copyTiny("pick-me");
    QVERIFY(QDir(tmp_.path()).mkpath("plain/inner"));
    writeFile(tmp_.filePath("plain/w.gguf"), "GGUF");
    {
        ModelOpenDialog d(nullptr, tmp_.path());
        d.selectFile("pick-me");
        d.accept();
        QCOMPARE(d.result(), int(QDialog::Accepted));
        QCOMPARE(d.chosenPath(), dir);
    }
    {
        ModelOpenDialog d(nullptr, dir);
        d.selectFile("config.json"); // stands for its folder
        d.accept();
        QCOMPARE(d.chosenPath(), dir);
    }
    {
        ModelOpenDialog d(nullptr, dir); // inside the model folder, nothing selected: the folder
        d.accept();
        QCOMPARE(d.chosenPath(), dir);
    }
    {
        ModelOpenDialog d(nullptr, tmp_.filePath("plain"));
        d.selectFile("w.gguf");
        d.accept();
        QCOMPARE(d.chosenPath(), tmp_.filePath("plain/w.gguf"));
    }
    {
        ModelOpenDialog d(nullptr, tmp_.filePath("plain")); // a plain folder is entered, not chosen
        d.selectFile("inner");
        d.accept();
        QCOMPARE(d.chosenPath(), QString());
        QVERIFY(d.result() != int(QDialog::Accepted));
    }
    QVERIFY(ModelOpenDialog::isModelFolder(dir));
    QVERIFY(!ModelOpenDialog::isModelFolder(tmp_.filePath("plain")));
}

void TestGuiOpenModel::unsupportedModelSaysWhy() {
    const auto before = w_->session().model();
    QVERIFY(QDir(tmp_.path()).mkpath("llama"));
    writeFile(tmp_.filePath("llama/config.json"), R"({"model_type": "mamba"})");
    writeFile(tmp_.filePath("llama/model.safetensors"), buildSafetensors({{"a", "F32", {1}, floatBytes({1})}}));
    QSignalSpy failed(&w_->session(), &ModelSession::modelLoadFailed);
    ModalCloser ok;
    w_->openModel(tmp_.filePath("llama"));
    QVERIFY(failed.wait(10000));
    QCOMPARE(failed.first().first().toString(), tmp_.filePath("llama") + ": model type 'mamba' is not supported yet (supported: " +
                                                    openableHfModelTypes().join(", ") + ")");
    QTRY_COMPARE(ok.texts.size(), 1);
    QVERIFY(ok.texts[0].contains("model type 'mamba'"));
    // a name that resolves to nothing: the dialog says where it looked, the open model stays
    w_->openModel("nobody/nothing-here");
    QTRY_COMPARE(ok.texts.size(), 2);
    QVERIFY2(ok.texts[1].contains("nobody/nothing-here: no such file or folder, and not in the Hugging Face cache"),
             qPrintable(ok.texts[1]));
    QCOMPARE(w_->session().model(), before);
}

void TestGuiOpenModel::ctrlNumberSelectsTabs() {
    w_->activateWindow(); // shortcuts go to the active window; the dialogs before took that away
    QVERIFY(QTest::qWaitForWindowActive(w_.get()));
    QTabWidget* tabs = w_->tabs();
    QCOMPARE(tabs->count(), 10);
    for (int i : {2, 6, 8, 0, 4}) {
        QTest::keyClick(w_.get(), Qt::Key(Qt::Key_1 + i), Qt::ControlModifier);
        QCOMPARE(tabs->currentIndex(), i);
    }
    QTest::keyClick(w_.get(), Qt::Key_0, Qt::ControlModifier); // the tenth tab
    QCOMPARE(w_->currentViewId(), QString("graphs"));
    QTest::keyClick(w_.get(), Qt::Key_5, Qt::ControlModifier);
    QCOMPARE(w_->currentViewId(), QString("logit-lens"));
}

void TestGuiOpenModel::shortcutListCoversTheMenus() {
    const QList<ShortcutEntry> all = windowShortcuts(w_.get());
    auto find = [&](const QString& what) -> QString {
        for (const ShortcutEntry& e : all)
            if (e.what == what) return e.keys + " @ " + e.where;
        return {};
    };
    QCOMPARE(find("Open…"), QString("Ctrl+O @ File"));
    QCOMPARE(find("Save Session…"), QString("Ctrl+S @ File"));
    QCOMPARE(find("Logit lens"), QString("Ctrl+5 @ View"));
    QCOMPARE(find("Compare models"), QString("Ctrl+7 @ View"));
    QCOMPARE(find("Circuits"), QString("Ctrl+8 @ View"));
    QCOMPARE(find("Features"), QString("Ctrl+9 @ View"));
    QCOMPARE(find("Next Head"), QString("Right @ Navigate"));
    QCOMPARE(find("About This View"), QString("F1 @ Help"));
    QCOMPARE(find("Next step"), QString("Alt+Right, N @ Attention steps tab"));
    const QString html = shortcutsHtml(all);
    QVERIFY(html.contains("<b>Ctrl+Shift+O</b>"));
}

void TestGuiOpenModel::everyTabHasAGuide() {
    // a phrase each guide must teach
    const QMap<QString, QString> key{{"attention", "Olsson et al. 2022"},
                                     {"logit-attribution", "Σ_c DLA(c) = logit[t] − (ln_final.b · W_U[:, t] + b_U[t])"},
                                     {"attention-steps", "concat · W_O = [z^0 ∣ … ∣ z^{H−1}] · [W_O^0 ; … ; W_O^{H−1}] = Σ_h z^h · W_O^h"},
                                     {"attention-by-hand", "scores = Kᵀ·Q"},
                                     {"logit-lens", "nostalgebraist 2020"},
                                     {"embedding-space", "E · W_V^h · W_O^h · Eᵀ"},
                                     {"compare-models", "Interpreting fine-tuning"},
                                     {"circuits", "(m_patched − m_corrupt) / (m_clean − m_corrupt)"},
                                     {"features", "ReLU(pre)·(pre > θ)"},
                                     {"graphs", "A[t, s] = v_s · ∂value_t/∂x"}};
    QTabWidget* tabs = w_->tabs();
    for (int i = 0; i < tabs->count(); ++i) {
        const QString id = w_->viewIdAt(i);
        QVERIFY2(key.contains(id), qPrintable(id));
        auto* button = qobject_cast<QToolButton*>(tabs->tabBar()->tabButton(i, QTabBar::RightSide));
        QVERIFY2(button && button->text() == "?", qPrintable(id));
        button->click();
        QVERIFY(w_->helpBrowser()->isVisible());
        QCOMPARE(w_->helpBrowser()->topic(), id);
        const QString shown = w_->helpBrowser()->browser()->toPlainText();
        QVERIFY2(shown.contains(key[id]), qPrintable(id + ": " + shown.left(200)));
        QVERIFY(HelpBrowser::guideText(id).size() > 600);
    }
    // F1 shows the guide of the current tab; the index links every guide
    tabs->setCurrentIndex(3);
    w_->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w_.get()));
    QTest::keyClick(w_.get(), Qt::Key_F1);
    QCOMPARE(w_->helpBrowser()->topic(), QString("attention-by-hand"));
    const QString index = HelpBrowser::guideText("index");
    for (const QString& id : key.keys()) QVERIFY2(index.contains("(" + id + ".md)"), qPrintable(id));
    w_->showHelp("no-such-view");
    QCOMPARE(w_->helpBrowser()->topic(), QString("index"));
    // a link between guides opens the other guide
    w_->showHelp("attention");
    w_->helpBrowser()->browser()->setSource(QUrl("attention-steps.md"));
    QCOMPARE(w_->helpBrowser()->topic(), QString("attention-steps"));
    QVERIFY(w_->helpBrowser()->browser()->toPlainText().contains("Multi-head attention is a sum of per-head writes"));
}

QTEST_MAIN(TestGuiOpenModel)
#include "tst_gui_open_model.moc"
