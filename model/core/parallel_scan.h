#pragma once
// The driver of a parallel scan with early stop: units of work (row panels, row blocks) handed to the
// OpenMP threads one at a time in increasing order; every thread honours cancellation at each unit and
// progress counts the units whichever thread did them.
// Used by the top-k scans of a low-rank product (model/analysis/common/topk_accumulator.cpp,
// model/analysis/common/quantized_topk.cpp), which visit rows by decreasing norm and stop once a bound shows
// that no later unit can enter the top-k.

#include "model/core/progress.h"

#include <algorithm>
#include <atomic>
#include <exception>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnscope {

/// The number of threads parallelScan runs on (OpenMP's team size, 1 without OpenMP): the size of the
/// callers' per-thread state, indexed by the `thread` argument of the body.
inline int parallelScanThreads() {
#ifdef _OPENMP
    return std::max(1, omp_get_max_threads());
#else
    return 1;
#endif
}

namespace detail {
/// Clears the flag when it goes out of scope (at namespace scope: clang 14 cannot compile a local class inside an
/// OpenMP region of a function template).
struct FlagRelease {
    std::atomic_flag& f;
    ~FlagRelease() { f.clear(std::memory_order_release); }
};
} // namespace detail

/// Runs units [0, nUnits) on parallelScanThreads() threads. A shared atomic counter hands out units in
/// increasing order (no static split: a thread slowed by another process just takes fewer units), so the
/// most promising units of a sorted scan run first. `body(thread, unit)` does one unit and returns
/// false, without doing it, when no unit from this one on can matter: then no thread takes another unit
/// (the ones running finish). The body must not throw (it runs inside an OpenMP region).
/// Before each unit, every thread polls progress.isCancelled (which must be thread-safe, as a flag read
/// is): a cancel stops all threads at their next unit, whichever thread is running, and Cancelled is
/// rethrown after the region. Progress is progress.step(units done by all threads, nUnits, what): before
/// each unit, the thread that finds no other thread reporting checks for cancellation and reports; so
/// report is never called concurrently (but may be called from any of the threads) and never after a
/// cancel was seen. Any exception from progress stops all threads and is rethrown the same way.
/// On completion (including an early stop) reports (nUnits, nUnits, what) on the calling thread.
template <typename Body>
void parallelScan(qint64 nUnits, const Progress& progress, const QString& what, Body&& body) {
    const int nThreads = parallelScanThreads();
    std::atomic<qint64> nextUnit(0), unitsDone(0);
    std::atomic<bool> stop(false);
    std::atomic_flag reporting = ATOMIC_FLAG_INIT;
    std::atomic_flag errorSet = ATOMIC_FLAG_INIT;
    std::exception_ptr error;
    auto fail = [&](std::exception_ptr e) {
        if (!errorSet.test_and_set()) error = std::move(e);
        stop = true;
    };
#pragma omp parallel num_threads(nThreads)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        while (!stop.load()) {
            try {
                if (!reporting.test_and_set(std::memory_order_acquire)) {
                    const detail::FlagRelease release{reporting}; // also when step throws
                    progress.step(unitsDone.load(), nUnits, what); // checks cancellation, then reports
                } else {
                    progress.checkCancelled();
                }
            } catch (...) {
                fail(std::current_exception());
                break;
            }
            if (stop.load()) break;
            const qint64 unit = nextUnit++;
            if (unit >= nUnits) break;
            if (!body(t, unit)) {
                stop = true;
                break;
            }
            ++unitsDone;
        }
    }
    if (error) std::rethrow_exception(error);
    progress.step(nUnits, nUnits, what);
}

} // namespace attnscope
