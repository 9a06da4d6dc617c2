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
    /// Called with (units done, units in total, what is being done). May be empty.
    std::function<void(qint64 done, qint64 total, const QString& what)> report;
    /// Polled between units of work; when it returns true the work throws Cancelled.
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
