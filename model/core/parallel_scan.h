#pragma once
// The driver of a parallel scan with early stop: units of work (row panels, row blocks) handed to the
// OpenMP threads one at a time in increasing order, progress and cancellation on the calling thread.
// Used by the top-k scans of a low-rank product (model/analysis/topk_accumulator.cpp,
// model/analysis/quantized_topk.cpp), which visit rows by decreasing norm and stop once a bound shows
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

/// Runs units [0, nUnits) on parallelScanThreads() threads. A shared atomic counter hands out units in
/// increasing order (no static split: a thread slowed by another process just takes fewer units), so the
/// most promising units of a sorted scan run first. `body(thread, unit)` does one unit and returns
/// false, without doing it, when no unit from this one on can matter: then no thread takes another unit
/// (the ones running finish). The body must not throw (it runs inside an OpenMP region).
/// Thread 0, the calling thread, reports progress.step(units done, nUnits, what) before each unit it
/// takes; a Cancelled (or any exception) from it stops all threads and is rethrown after the region.
/// On completion (including an early stop) reports (nUnits, nUnits, what).
template <typename Body>
void parallelScan(qint64 nUnits, const Progress& progress, const QString& what, Body&& body) {
    const int nThreads = parallelScanThreads();
    std::atomic<qint64> nextUnit(0), unitsDone(0);
    std::atomic<bool> stop(false);
    std::exception_ptr error;
#pragma omp parallel num_threads(nThreads)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        while (!stop.load()) {
            if (t == 0) {
                try {
                    progress.step(unitsDone.load(), nUnits, what);
                } catch (...) {
                    error = std::current_exception();
                    stop = true;
                    break;
                }
            }
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
