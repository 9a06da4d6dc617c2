// The model picker, offscreen, over fake stores in a temporary HOME (HF_HOME, OLLAMA_MODELS and an
// LM Studio folder; tests/support/fake_model_stores.h): every installed model is listed with its
// source, architecture, format, dtype/quantization, size and whether it opens (and why not); recent
// entries come first; added folders are searched and remembered; Open emits the name that the window
// opens by name (the Hugging Face snapshot of "gpt2"), and the window opens names from everywhere.

#include "app/main_window.h"
#include "app/model_picker_dialog.h"
#include "app/recent_models.h"
#include "model/discovery/model_name.h"
#include "support/fake_model_stores.h"
#include "support/modal_closer.h"
#include "support/safetensors_writer.h"
#include "support/test_paths.h"

#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

/// The table's text, row by row, columns joined by " | " (in the shown order).
QStringList tableRows(const QTableView* t) {
    QStringList rows;
    const QAbstractItemModel* m = t->model();
    for (int r = 0; r < m->rowCount(); ++r) {
        QStringList cols;
        for (int c = 0; c < m->columnCount(); ++c) cols << m->index(r, c).data().toString();
        rows << cols.join(" | ");
    }
    return rows;
}

} // namespace

class TestGuiModelPicker : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void init();
    void listsEveryStore();
    void marksWhatCannotOpen();
    void filtersAndOpens();
    void recentEntriesComeFirst();
    void addedFoldersAreSearched();
    void windowOpensNames();

private:
    QTemporaryDir tmp_;
    FakeStores stores_;
};

void TestGuiModelPicker::initTestCase() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    stores_ = buildFakeStores(tmp_.path());
    useFakeStores(stores_); // before any QSettings: settings live in the fake HOME too
    qunsetenv("XDG_CONFIG_HOME");
    QCoreApplication::setOrganizationName("AttnScopeTest");
    clearRecentModels();
    ModelPickerDialog::setUserFolders({});
}

void TestGuiModelPicker::init() {
    clearRecentModels();
    ModelPickerDialog::setUserFolders({});
}

void TestGuiModelPicker::listsEveryStore() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    ModelPickerDialog d;
    d.show();
    d.waitForScan();
    QCOMPARE(d.entries().size(), 5);
    const QStringList rows = tableRows(d.table());
    QCOMPARE(rows.size(), 5);
    const QString gguf = canOpen(probeModel(stores_.ollamaBlob)).ok ? "yes" : "no: GGUF files cannot be opened yet";
    const QString llama = openableHfModelTypes().contains("llama")
                              ? QString("yes")
                              : "no: model type 'llama' is not supported yet (supported: " + openableHfModelTypes().join(", ") + ")";
    const QLocale loc;
    QCOMPARE(rows[0], "TinyLlama/TinyLlama-1.1B-Chat-v1.0 | Hugging Face cache | llama | Hugging Face folder | F16 | " +
                          loc.formattedDataSize(QFileInfo(stores_.tinyLlamaSnapshot + "/model.safetensors").size()) +
                          " | 40 | " + llama);
    QVERIFY2(rows[1].startsWith("gpt2 | Hugging Face cache | gpt2 | Hugging Face folder | F32 | " +
                                loc.formattedDataSize(QFileInfo(testdata("tiny-gpt2/model.safetensors")).size())),
             qPrintable(rows[1]));
    QVERIFY2(rows[1].endsWith(" | yes"), qPrintable(rows[1]));
    QVERIFY2(rows[2].startsWith("broken:latest | Ollama |  |  |  |  |  | no: ") && rows[2].contains("is missing"), qPrintable(rows[2]));
    QCOMPARE(rows[3], "llama3.2:1b | Ollama | llama | GGUF | Q4_K_M | " + loc.formattedDataSize(QFileInfo(stores_.ollamaBlob).size()) +
                          " | 2K | " + gguf);
    QVERIFY2(rows[4].startsWith("lmstudio-community/Qwen2-0.5B-Instruct-GGUF/qwen2-0_5b-instruct-q4_k_m.gguf | LM Studio | qwen2 | GGUF | Q4_K_M"),
             qPrintable(rows[4]));
    // the searched folders, found or not
    const QString where = d.locationsText();
    QVERIFY2(where.contains(stores_.hubCache + " (Hugging Face cache)") && where.contains(stores_.ollama + " (Ollama)") &&
                 where.contains(stores_.home + "/.local/share/nomic.ai/GPT4All (GPT4All, not found)"),
             qPrintable(where));
}

void TestGuiModelPicker::marksWhatCannotOpen() {
    ModelPickerDialog d;
    d.show();
    d.waitForScan();
    QPushButton* open = nullptr;
    for (QPushButton* b : d.findChildren<QPushButton*>())
        if (b->text() == "Open") open = b;
    QVERIFY(open && open->text() == "Open");
    const bool ggufOpens = canOpen(probeModel(stores_.ollamaBlob)).ok;
    d.table()->selectRow(3); // llama3.2:1b (GGUF)
    QCOMPARE(open->isEnabled(), ggufOpens);
    d.table()->selectRow(2); // broken manifest
    QVERIFY(!open->isEnabled());
    QVERIFY(!d.openRow(2));
    const QModelIndex broken = d.table()->model()->index(2, ModelPickerDialog::NameColumn);
    QVERIFY2(broken.data(Qt::ToolTipRole).toString().contains("its model blob"), qPrintable(broken.data(Qt::ToolTipRole).toString()));
    QCOMPARE(broken.data(Qt::ForegroundRole).value<QBrush>().color(), QColor(130, 130, 130));
    d.table()->selectRow(1); // gpt2
    QVERIFY(open->isEnabled());
}

void TestGuiModelPicker::filtersAndOpens() {
    ModelPickerDialog d;
    d.show();
    d.waitForScan();
    d.filter()->setText("OLLAMA");
    QCOMPARE(d.table()->model()->rowCount(), 2);
    d.filter()->setText("gguf");
    QCOMPARE(d.table()->model()->rowCount(), 2); // llama3.2:1b (format column) and the LM Studio file
    d.filter()->clear();
    QSignalSpy chosen(&d, &ModelPickerDialog::modelChosen);
    const QModelIndex gpt2 = d.table()->model()->index(1, 0);
    QCOMPARE(gpt2.data().toString(), QString("gpt2"));
    emit d.table()->doubleClicked(gpt2);
    QCOMPARE(chosen.size(), 1);
    QCOMPARE(chosen.first().first().toString(), QString("gpt2"));
    QVERIFY(!d.isVisible());
}

void TestGuiModelPicker::recentEntriesComeFirst() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    clearRecentModels();
    addRecentModel(testdata("tiny-gpt2"));
    addRecentModel("ollama:llama3.2:1b");
    addRecentModel(tmp_.filePath("gone"));
    ModelPickerDialog d;
    d.waitForScan();
    QCOMPARE(d.entries().size(), 8);
    const QStringList rows = tableRows(d.table());
    QVERIFY2(rows[0].startsWith(tmp_.filePath("gone") + " | Recent") && rows[0].contains("no such file or folder"), qPrintable(rows[0]));
    QVERIFY2(rows[1].startsWith("ollama:llama3.2:1b | Recent | llama | GGUF | Q4_K_M"), qPrintable(rows[1]));
    QVERIFY2(rows[2].startsWith("tiny-gpt2 | Recent | gpt2 | Hugging Face folder | F32") && rows[2].endsWith("| yes"), qPrintable(rows[2]));
    QCOMPARE(d.entries()[2].model.openName, QFileInfo(testdata("tiny-gpt2")).absoluteFilePath());
}

void TestGuiModelPicker::addedFoldersAreSearched() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QTemporaryDir mine;
    QVERIFY(QDir().mkpath(mine.filePath("experiments/run1")));
    copyFiles(testdata("tiny-gpt2"), mine.filePath("experiments/run1"), {"config.json", "model.safetensors", "vocab.json", "merges.txt"});
    copyFiles(testdata("stories260K"), mine.path(), {"stories260K.bin"});
    ModelPickerDialog d;
    d.waitForScan();
    d.addFolder(mine.path());
    d.waitForScan();
    QCOMPARE(ModelPickerDialog::userFolders(), QStringList{mine.path()});
    const QStringList rows = tableRows(d.table());
    QCOMPARE(rows.size(), 7);
    QVERIFY2(rows[5].startsWith("experiments/run1 | Folder | gpt2 | Hugging Face folder | F32") && rows[5].endsWith("| yes"), qPrintable(rows[5]));
    QVERIFY2(rows[6].startsWith("stories260K.bin | Folder | llama | llama2.c | F32"), qPrintable(rows[6]));
    QVERIFY2(rows[6].contains(" | 260K | "), qPrintable(rows[6]));
    // the next picker searches it too
    ModelPickerDialog again;
    again.waitForScan();
    QCOMPARE(again.entries().size(), 7);
}

void TestGuiModelPicker::windowOpensNames() {
    MainWindow w;
    w.show();
    QSignalSpy ran(&w.session(), &ModelSession::forwardFinished);
    ModelPickerDialog* picker = w.showModelPicker();
    picker->waitForScan();
    QCOMPARE(picker->entries()[1].model.name, QString("gpt2"));
    QVERIFY(picker->openRow(1)); // gpt2 from the Hugging Face cache
    QVERIFY(ran.wait(30000));
    QCOMPARE(w.session().model()->info().path, stores_.gpt2Newest);
    QCOMPARE(w.session().model()->info().name, QString("gpt2"));
    QCOMPARE(w.windowTitle(), QString("AttnScope — gpt2"));
    QCOMPARE(w.openedAs(), QString("gpt2"));
    QCOMPARE(recentModels().first(), QString("gpt2")); // the name, so it opens the newest snapshot next time
    // an Ollama model: found, probed, and refused with the reason while GGUF is not supported
    QSignalSpy failed(&w.session(), &ModelSession::modelLoadFailed);
    ModalCloser ok;
    w.openModel("ollama:llama3.2:1b");
    if (canOpen(probeModel(stores_.ollamaBlob)).ok) {
        // the fake blob is a header for the picker, not a whole model: a clear error naming the blob and the
        // missing metadata, and the open model stays
        QVERIFY(failed.wait(10000));
        const QString message = failed.first().first().toString();
        QVERIFY2(message.startsWith(QFileInfo(stores_.ollamaBlob).fileName() + ": missing metadata key llama."), qPrintable(message));
        QCOMPARE(w.session().model()->info().name, QString("gpt2"));
    } else {
        QVERIFY(failed.wait(10000));
        QCOMPARE(failed.first().first().toString(), stores_.ollamaBlob + ": GGUF files cannot be opened yet");
        QCOMPARE(w.session().model()->info().name, QString("gpt2"));
    }
}

QTEST_MAIN(TestGuiModelPicker)
#include "tst_gui_model_picker.moc"
