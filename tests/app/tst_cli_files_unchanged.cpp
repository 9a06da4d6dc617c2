// Nothing lost, through the real executable: a model folder (read-only copy of tiny-gpt2 with old
// modification times) is byte-for-byte and mtime-unchanged after open + run + export + dump-json, and
// existing exports are never overwritten without --force (the files keep their bytes).

#include "support/safetensors_writer.h"
#include "support/cli_process.h"
#include "support/test_paths.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope::test;

namespace {
using Run = CliRun;

Run runExe(const QStringList& args) { return runCli(attnscope::test::attnscopeExe(), args); }

struct FileState {
    QByteArray sha256;
    QDateTime mtime;
    QFileDevice::Permissions permissions;
    bool operator==(const FileState&) const = default;
};

QMap<QString, FileState> snapshot(const QString& dir) {
    QMap<QString, FileState> out;
    for (const QFileInfo& fi : QDir(dir).entryInfoList(QDir::Files)) {
        out.insert(fi.fileName(), {QCryptographicHash::hash(readFile(fi.filePath()), QCryptographicHash::Sha256),
                                   fi.lastModified(), fi.permissions()});
    }
    return out;
}
} // namespace

class TestCliFilesUnchanged : public QObject {
    Q_OBJECT
private slots:
    void modelFilesUnchangedAfterOpenRunAndExport() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTemporaryDir tmp;
        const QString model = tmp.filePath("model");
        QDir().mkpath(model);
        const QStringList files{"config.json", "vocab.json", "merges.txt", "model.safetensors", "model.float16.safetensors"};
        copyFiles(testdata("tiny-gpt2"), model, files);
        const QDateTime old = QDateTime::currentDateTime().addDays(-30);
        for (const QString& name : files) {
            QFile f(model + "/" + name);
            QVERIFY(f.open(QIODevice::ReadWrite));
            QVERIFY(f.setFileTime(old, QFileDevice::FileModificationTime));
            f.close();
            QVERIFY(f.setPermissions(QFileDevice::ReadOwner | QFileDevice::ReadGroup | QFileDevice::ReadOther));
        }
        const auto before = snapshot(model);
        QCOMPARE(before.size(), files.size());

        Run r = runExe({"--model", model, "--prompt", "The cat sat on the mat.", "--export", tmp.filePath("png"),
                        "--width", "300", "--height", "260"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QCOMPARE(QDir(tmp.filePath("png")).entryList(QDir::Files).size(), 8);
        r = runExe({"--model", model + "/model.float16.safetensors", "--prompt", "שלום 🙂", "--layer", "1", "--head", "2",
                    "--dump-json", tmp.filePath("dump.json")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY(QFileInfo(tmp.filePath("dump.json")).size() > 100);
        QCOMPARE(snapshot(model), before);
    }

    void exportsAreNeverOverwrittenWithoutForce() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTemporaryDir tmp;
        const QString out = tmp.filePath("heads");
        QDir().mkpath(out);
        const QString existing = out + "/L1_H3.png";
        writeFile(existing, "my own picture");
        Run r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "x", "--export", out});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(existing + ": already exists (use --force to overwrite)"), qPrintable(r.err));
        QCOMPARE(readFile(existing), QByteArray("my own picture"));
        r = runExe({"--model", testdata("tiny-gpt2"), "--prompt", "x", "--export", out, "--force"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QCOMPARE(readFile(existing).left(8), QByteArray("\x89PNG\r\n\x1a\n"));
    }
};

QTEST_GUILESS_MAIN(TestCliFilesUnchanged)
#include "tst_cli_files_unchanged.moc"
