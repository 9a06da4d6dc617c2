#pragma once
// One cancellable background job at a time for an analysis panel: the work runs on the Qt thread
// pool (QtConcurrent) with a Progress wired to a cancel flag; its result is applied on the GUI thread
// by a closure the work returns. Starting a new job cancels the running one, and results of a
// superseded job are dropped, so a panel never shows stale numbers.

#include "model/core/progress.h"

#include <QFuture>
#include <QObject>
#include <atomic>
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

class QHBoxLayout;
class QProgressBar;
class QPushButton;
class QWidget;

namespace attnscope {

class BackgroundTask : public QObject {
    Q_OBJECT
public:
    /// What the work gets: a Progress (report + cancel) and `post`, which runs a closure on the GUI
    /// thread while the job is still the current one (for results that arrive piece by piece).
    struct Context {
        Progress progress;
        std::function<void(std::function<void()>)> post;
    };
    /// Runs on a worker thread; returns the closure that applies the result on the GUI thread.
    /// May throw Cancelled, InputError, ModelError or std::exception (reported by `failed`).
    using Work = std::function<std::function<void()>(const Context&)>;

    explicit BackgroundTask(QObject* parent = nullptr);
    /// Cancels and waits for every job still running.
    ~BackgroundTask() override;

    /// Cancels the current job (if any) and starts `work`.
    void start(Work work);
    /// Asks the current job to stop; it ends with `cancelled`.
    void cancel();
    /// Drops the current job: it is asked to stop, and nothing of it reaches the GUI any more (no result,
    /// no post, no `cancelled` or `failed`); isRunning() is false at once (runningChanged(false)).
    void discard();
    bool isRunning() const { return running_; }
    /// Blocks (processing events) until no job is running and its result was applied (tests, CLI).
    void waitForIdle();
    /// Shows progress in `bar` (hidden while idle) and enables `cancelButton` while running.
    void attach(QProgressBar* bar, QPushButton* cancelButton);

signals:
    void runningChanged(bool running);
    void progressChanged(qint64 done, qint64 total, const QString& what);
    void failed(const QString& message);
    void cancelled();

private:
    struct Job {
        quint64 generation = 0;
        std::shared_ptr<std::atomic<bool>> cancel;
        QFuture<std::function<void()>> future;
    };
    void finishJob(quint64 generation);

    quint64 generation_ = 0;
    bool running_ = false;
    std::vector<Job> jobs_;
};

/// A row of `lead` widgets, then a progress bar and a Cancel button attached to `task`, then a stretch.
QHBoxLayout* taskRow(BackgroundTask& task, std::initializer_list<QWidget*> lead = {});

} // namespace attnscope
