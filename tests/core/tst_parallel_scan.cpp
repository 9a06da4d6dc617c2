// parallelScan (model/core/parallel_scan.h), the driver of the top-k scans: cancellation is honoured by
// every thread at its next unit even while the thread that reports is held up (a descheduled thread,
// made deterministic here by a report that blocks), progress counts the units whichever thread did
// them, reports never overlap, and an early stop ends the scan.

#include "model/core/parallel_scan.h"

#include <QtTest>
#include <atomic>
#include <chrono>
#include <thread>

using namespace attnscope;

class TestParallelScan : public QObject {
    Q_OBJECT
private slots:
    void everyUnitOnceAndProgressCountsAllThreads();
    void cancelWhileTheReportingThreadIsHeldUp();
    void earlyStopEndsTheScan();
    void errorsFromProgressStopAllThreads();
};

void TestParallelScan::everyUnitOnceAndProgressCountsAllThreads() {
    const qint64 n = 200;
    std::vector<std::atomic<int>> done(static_cast<size_t>(n));
    std::atomic<int> inReport(0), overlaps(0);
    qint64 lastDone = -1, maxDone = -1;
    bool monotone = true;
    Progress p;
    p.report = [&](qint64 d, qint64 total, const QString& what) {
        if (inReport.fetch_add(1) != 0) ++overlaps;
        monotone = monotone && d >= lastDone && total == n && what == QStringLiteral("units");
        lastDone = d;
        maxDone = std::max(maxDone, d);
        --inReport;
    };
    parallelScan(n, p, QStringLiteral("units"), [&](int thread, qint64 unit) {
        if (thread == 0) std::this_thread::sleep_for(std::chrono::microseconds(300)); // a slow thread 0
        ++done[size_t(unit)];
        return true;
    });
    for (qint64 u = 0; u < n; ++u) QCOMPARE(done[size_t(u)].load(), 1);
    QCOMPARE(overlaps.load(), 0);
    QVERIFY(monotone);
    QCOMPARE(lastDone, n); // the final report
    if (parallelScanThreads() > 1) QVERIFY2(maxDone == n, "progress reached the total");
}

void TestParallelScan::cancelWhileTheReportingThreadIsHeldUp() {
    if (parallelScanThreads() < 2) QSKIP("needs two OpenMP threads");
    // The first report asks to cancel and then blocks for 0.5 s, as a thread that the OS descheduled
    // right after a Cancel click. The other thread must see the cancel at its next unit, not run the
    // remaining 1000 units (2 ms each, 2 s in all) to the end.
    std::atomic<bool> cancel(false);
    std::atomic<int> units(0);
    Progress p;
    p.isCancelled = [&] { return cancel.load(); };
    p.report = [&](qint64, qint64, const QString&) {
        if (!cancel.exchange(true)) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    };
    const auto t0 = std::chrono::steady_clock::now();
    QVERIFY_THROWS_EXCEPTION(Cancelled, parallelScan(1000, p, QStringLiteral("units"), [&](int, qint64) {
                                 ++units;
                                 std::this_thread::sleep_for(std::chrono::milliseconds(2));
                                 return true;
                             }));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    QVERIFY2(units.load() <= 2, qPrintable(QStringLiteral("%1 units ran after the cancel").arg(units.load())));
    QVERIFY2(s < 1.5, qPrintable(QStringLiteral("took %1 s").arg(s)));
}

void TestParallelScan::earlyStopEndsTheScan() {
    std::atomic<int> units(0);
    std::atomic<qint64> highest(-1);
    parallelScan(10000, {}, {}, [&](int, qint64 unit) {
        if (unit >= 10) return false; // nothing from unit 10 on can matter
        ++units;
        qint64 h = highest.load();
        while (unit > h && !highest.compare_exchange_weak(h, unit)) {}
        return true;
    });
    QCOMPARE(units.load(), 10);
    QCOMPARE(highest.load(), qint64(9));
}

void TestParallelScan::errorsFromProgressStopAllThreads() {
    std::atomic<int> reports(0), units(0);
    Progress p;
    p.report = [&](qint64, qint64, const QString&) {
        if (++reports == 3) throw std::runtime_error("progress failed");
    };
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, parallelScan(100000, p, {}, [&](int, qint64) {
                                 ++units;
                                 return true;
                             }));
    QVERIFY(units.load() < 100000);
}

QTEST_GUILESS_MAIN(TestParallelScan)
#include "tst_parallel_scan.moc"
