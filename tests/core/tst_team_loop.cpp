// teamFor (model/core/team_loop.h): every index once, on the OpenMP team when asked and possible, else in
// order on the calling thread, and never a nested team inside another parallel region.

#include "model/core/team_loop.h"

#include <QtTest>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

using namespace attnscope;

namespace {
int threadNumber() {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
bool inParallel() {
#ifdef _OPENMP
    return omp_in_parallel();
#else
    return false;
#endif
}
int maxThreads() {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
} // namespace

class TestTeamLoop : public QObject {
    Q_OBJECT
private slots:
    void withoutTeamRunsInOrderOnTheCallingThread();
    void staticTeamSplitsTheRangeAcrossThreads();
    void dynamicTeamDoesEveryIndexOnce();
    void insideAParallelRegionRunsOnTheCallingThread();
};

void TestTeamLoop::withoutTeamRunsInOrderOnTheCallingThread() {
    std::vector<long> order;
    std::vector<int> threads;
    std::vector<bool> parallel;
    teamFor(long(37), false, [&](long i) {
        order.push_back(i);
        threads.push_back(threadNumber());
        parallel.push_back(inParallel());
    });
    QCOMPARE(order.size(), size_t(37));
    for (long i = 0; i < 37; ++i) {
        QCOMPARE(order[size_t(i)], i);
        QCOMPARE(threads[size_t(i)], 0);
        QVERIFY2(!parallel[size_t(i)], "no OpenMP region was entered");
    }
    int calls = 0;
    teamFor(0, true, [&](int) { ++calls; });
    QCOMPARE(calls, 0);
}

void TestTeamLoop::staticTeamSplitsTheRangeAcrossThreads() {
    if (maxThreads() < 2) QSKIP("needs two OpenMP threads");
    const int n = 64, T = maxThreads();
    std::vector<int> thread(size_t(n), -1), count(size_t(n), 0);
    teamFor<TeamSchedule::Static>(n, true, [&](int i) {
        thread[size_t(i)] = threadNumber();
        ++count[size_t(i)];
    });
    // schedule(static) without a chunk: one contiguous share per thread, in thread order, of ⌊n / T⌋ or
    // ⌈n / T⌉ indices (how the remainder is spread is the runtime's choice)
    std::vector<int> shareOf(size_t(T), 0);
    for (int i = 0; i < n; ++i) {
        QCOMPARE(count[size_t(i)], 1);
        QVERIFY(thread[size_t(i)] >= 0 && thread[size_t(i)] < T);
        if (i > 0) QVERIFY2(thread[size_t(i)] >= thread[size_t(i - 1)], "shares in thread order, each contiguous");
        ++shareOf[size_t(thread[size_t(i)])];
    }
    for (int t = 0; t < T; ++t) QVERIFY2(shareOf[size_t(t)] == n / T || shareOf[size_t(t)] == (n + T - 1) / T,
                                         qPrintable(QStringLiteral("thread %1 did %2 of %3").arg(t).arg(shareOf[size_t(t)]).arg(n)));
}

void TestTeamLoop::dynamicTeamDoesEveryIndexOnce() {
    const int n = 1000;
    std::vector<int> count(size_t(n), 0);
    std::vector<char> parallel(size_t(n), 0); // not vector<bool>: its bits share bytes across threads
    teamFor(n, true, [&](int i) {
        ++count[size_t(i)]; // each index is one iteration of one thread: no two threads touch it
        parallel[size_t(i)] = char(inParallel());
    });
    for (int i = 0; i < n; ++i) {
        QCOMPARE(count[size_t(i)], 1);
        QCOMPARE(bool(parallel[size_t(i)]), maxThreads() > 1);
    }
}

void TestTeamLoop::insideAParallelRegionRunsOnTheCallingThread() {
#ifdef _OPENMP
    if (maxThreads() < 2) QSKIP("needs two OpenMP threads");
    const int T = maxThreads(), n = 20;
    std::vector<std::vector<int>> seen(static_cast<size_t>(T));
    std::vector<int> wrongThread(static_cast<size_t>(T), 0);
#pragma omp parallel num_threads(T)
    {
        const int t = omp_get_thread_num();
        teamFor(n, true, [&](int i) {
            seen[size_t(t)].push_back(i);
            if (omp_get_thread_num() != t || omp_get_level() != 1) ++wrongThread[size_t(t)];
        });
    }
    for (int t = 0; t < T; ++t) {
        QCOMPARE(wrongThread[size_t(t)], 0);
        QCOMPARE(seen[size_t(t)].size(), size_t(n));
        for (int i = 0; i < n; ++i) QCOMPARE(seen[size_t(t)][size_t(i)], i);
    }
#else
    QSKIP("built without OpenMP");
#endif
}

QTEST_GUILESS_MAIN(TestTeamLoop)
#include "tst_team_loop.moc"
