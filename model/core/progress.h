#pragma once
// Progress reporting and cancellation for long work (loading, forward pass, projections).
// The model library knows nothing about threads or widgets: callers pass a Progress whose
// callback the app forwards to a QPromise / progress dialog.

#include "model/core/errors.h"

#include <QString>
#include <atomic>
#include <functional>

namespace attnscope {

struct Progress {
    /// Called with (units done, units in total, what is being done). May be empty. Parallel work may call
    /// it from any of its threads, one call at a time (model/core/parallel_scan.h).
    std::function<void(qint64 done, qint64 total, const QString& what)> report;
    /// Polled between units of work; when it returns true the work throws Cancelled. Must be thread-safe:
    /// parallel work polls it from every thread (the app's reads an atomic flag).
    std::function<bool()> isCancelled;

    void step(qint64 done, qint64 total, const QString& what) const {
        if (isCancelled && isCancelled()) throw Cancelled();
        if (report) report(done, total, what);
    }
    void checkCancelled() const {
        if (isCancelled && isCancelled()) throw Cancelled();
    }
};

} // namespace attnscope
