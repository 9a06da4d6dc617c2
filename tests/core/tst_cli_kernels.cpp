// The compute kernel as a user meets it: --version names it, ATTNSCOPE_ISA forces one (an unknown or
// unrunnable one is a clear error and exit code 1, never a crash), and the default binary runs on CPUs
// without AVX-512 and without AVX: emulated by qemu-x86_64 (Debian qemu-user) as a Haswell (AVX2) and
// a Nehalem (SSE4.2), where it picks the avx2 and portable kernels by itself and its --dump-json matches
// the picoGPT reference (tolerance 1e-4 on logits, as tst_cli_headless) and the native run of the same
// kernel. The qemu cases are skipped where qemu-x86_64 is not installed or the build is not x86-64.

#include "model/core/kernels/kernel_choice.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

struct Run {
    int exitCode = -1;
    QProcess::ExitStatus status = QProcess::NormalExit;
    QString out, err;
};

/// Runs `program args` (through `qemu -cpu CPU` when cpu is not empty) with ATTNSCOPE_ISA = isa (unset
/// when empty), no display.
Run run(const QString& program, const QStringList& args, const QString& isa = {}, const QString& cpu = {}) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("DISPLAY");
    env.remove("ATTNSCOPE_ISA");
    env.insert("QT_QPA_PLATFORM", "offscreen");
    if (!isa.isEmpty()) env.insert("ATTNSCOPE_ISA", isa);
    p.setProcessEnvironment(env);
    if (cpu.isEmpty()) {
        p.start(program, args);
    } else {
        p.start(QStandardPaths::findExecutable(QStringLiteral("qemu-x86_64")), QStringList{"-cpu", cpu, program} + args);
    }
    if (!p.waitForFinished(600000)) return {};
    return {p.exitCode(), p.exitStatus(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

const QString kExe = attnscope::test::attnscopeExe();

bool haveQemu() {
#if defined(__x86_64__)
    return !QStandardPaths::findExecutable(QStringLiteral("qemu-x86_64")).isEmpty();
#else
    return false;
#endif
}

/// --dump-json of tiny-gpt2 on the reference prompt; returns the last logits (empty on failure).
std::vector<double> dumpLogits(const QString& isa, const QString& cpu, QString* error) {
    QTemporaryDir dir;
    const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
    const QString out = dir.filePath("dump.json");
    const Run r = run(kExe, {"--model", testdata("tiny-gpt2"), "--prompt", ref["prompt"].toString(), "--dump-json", out}, isa, cpu);
    if (r.exitCode != 0 || r.status != QProcess::NormalExit) {
        *error = QStringLiteral("exit %1: %2").arg(r.exitCode).arg(r.err);
        return {};
    }
    std::vector<double> logits;
    for (const QJsonValue& v : readJsonObject(out)["logits_last"].toArray()) logits.push_back(v.toDouble());
    return logits;
}

double maxDiffToReference(const std::vector<double>& logits) {
    const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
    const Matrix refLogits = matrixFromJson(ref["variants"].toObject()["float32"].toObject()["logits"].toArray());
    if (logits.size() != 512) return 1e30;
    double d = 0;
    for (int v = 0; v < 512; ++v) d = std::max(d, std::abs(logits[size_t(v)] - refLogits(17, v)));
    return d;
}

} // namespace

class TestCliKernels : public QObject {
    Q_OBJECT
private slots:
    void versionNamesTheKernel();
    void everyRunnableKernelMatchesReference();
    void unknownKernelIsAClearError();
    void emulatedCpus_data();
    void emulatedCpus();
    void kernelTestsPassOnEmulatedNehalem();
};

void TestCliKernels::versionNamesTheKernel() {
    const Run r = run(kExe, {"--version"});
    QCOMPARE(r.exitCode, 0);
    const QString best = kernelIsaName(bestKernelIsa(detectCpuFeatures()));
    QVERIFY2(r.out.contains(QStringLiteral("compute kernel %1 (").arg(best)), qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("chosen automatically")) && r.out.contains(QStringLiteral("thread")), qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("Qt 6.")) && r.out.contains(QStringLiteral("Eigen 3.")), qPrintable(r.out));
    for (KernelIsa isa : runnableKernelIsas()) {
        const Run f = run(kExe, {"--version"}, kernelIsaName(isa));
        QCOMPARE(f.exitCode, 0);
        QVERIFY2(f.out.contains(QStringLiteral("compute kernel %1 (").arg(kernelIsaName(isa)))
                     && f.out.contains(QStringLiteral("forced by ATTNSCOPE_ISA")),
                 qPrintable(f.out));
    }
}

void TestCliKernels::everyRunnableKernelMatchesReference() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    for (KernelIsa isa : runnableKernelIsas()) {
        QString error;
        const std::vector<double> logits = dumpLogits(kernelIsaName(isa), {}, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const double d = maxDiffToReference(logits);
        QVERIFY2(d <= 1e-4, qPrintable(QStringLiteral("%1: %2").arg(kernelIsaName(isa)).arg(d)));
    }
}

void TestCliKernels::unknownKernelIsAClearError() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const Run r = run(kExe, {"--model", testdata("tiny-gpt2"), "--prompt", "x", "--dump-json", "/dev/null"}, "avx1024");
    QCOMPARE(r.status, QProcess::NormalExit);
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(QStringLiteral("attnscope: ATTNSCOPE_ISA=avx1024 names no compute kernel: use avx512, avx2 or portable")),
             qPrintable(r.err));
}

void TestCliKernels::emulatedCpus_data() {
    QTest::addColumn<QString>("cpu");
    QTest::addColumn<QString>("expected");  // the kernel the binary must pick by itself
    QTest::addColumn<QString>("tooHigh");   // a kernel this CPU lacks
    QTest::newRow("Haswell (AVX2, no AVX-512)") << "Haswell" << "avx2" << "avx512";
    QTest::newRow("Nehalem (no AVX)") << "Nehalem" << "portable" << "avx2";
}

void TestCliKernels::emulatedCpus() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    if (!haveQemu()) QSKIP("qemu-x86_64 (Debian qemu-user) is not installed");
    QFETCH(QString, cpu);
    QFETCH(QString, expected);
    QFETCH(QString, tooHigh);
    const Run v = run(kExe, {"--version"}, {}, cpu);
    QCOMPARE(v.status, QProcess::NormalExit);
    QCOMPARE(v.exitCode, 0);
    QVERIFY2(v.out.contains(QStringLiteral("compute kernel %1 (").arg(expected)), qPrintable(v.out + v.err));

    QString error;
    const std::vector<double> emulated = dumpLogits({}, cpu, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QVERIFY2(maxDiffToReference(emulated) <= 1e-4, qPrintable(QString::number(maxDiffToReference(emulated))));
    const std::vector<double> native = dumpLogits(expected, {}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(native.size(), emulated.size());
    double d = 0;
    for (size_t i = 0; i < native.size(); ++i) d = std::max(d, std::abs(native[i] - emulated[i]));
    QVERIFY2(d <= 1e-6, qPrintable(QStringLiteral("native %1 vs emulated %2: %3").arg(expected, cpu).arg(d)));

    // forcing a kernel the CPU lacks: a message and exit code 1, not SIGILL
    const Run f = run(kExe, {"--version"}, tooHigh, cpu);
    QCOMPARE(f.status, QProcess::NormalExit);
    QCOMPARE(f.exitCode, 1);
    QVERIFY2(f.err.contains(QStringLiteral("ATTNSCOPE_ISA=%1: this CPU cannot run the %1 kernels (missing: ").arg(tooHigh)),
             qPrintable(f.err));
}

void TestCliKernels::kernelTestsPassOnEmulatedNehalem() {
    if (!haveQemu()) QSKIP("qemu-x86_64 (Debian qemu-user) is not installed");
    const Run r = run(QStringLiteral(ATTNSCOPE_COMPUTE_KERNELS_TEST), {}, {}, QStringLiteral("Nehalem"));
    QCOMPARE(r.status, QProcess::NormalExit);
    QVERIFY2(r.exitCode == 0, qPrintable(r.out.right(3000)));
    QVERIFY2(r.out.contains(QStringLiteral("PASS   : TestComputeKernels::gemmMatchesFloat64(portable")), qPrintable(r.out.left(2000)));
    QVERIFY2(!r.out.contains(QStringLiteral("(avx2")), "the emulated Nehalem ran an AVX2 kernel");
}

QTEST_GUILESS_MAIN(TestCliKernels)
#include "tst_cli_kernels.moc"
