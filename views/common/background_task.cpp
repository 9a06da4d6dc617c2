#include "views/common/background_task.h"

#include "model/core/errors.h"

#include <QCoreApplication>
#include <QHBoxLayout>
#include <QFutureWatcher>
#include <QProgressBar>
#include <QPushButton>
#include <QtConcurrent>
#include <algorithm>

namespace attnscope {

BackgroundTask::BackgroundTask(QObject* parent) : QObject(parent) {}

BackgroundTask::~BackgroundTask() {
    for (Job& j : jobs_) j.cancel->store(true);
    for (Job& j : jobs_) j.future.waitForFinished();
}

void BackgroundTask::start(Work work) {
    cancel();
    const quint64 gen = ++generation_;
    auto flag = std::make_shared<std::atomic<bool>>(false);
    Context ctx;
    ctx.progress.isCancelled = [flag] { return flag->load(); };
    ctx.progress.report = [this, gen](qint64 done, qint64 total, const QString& what) {
        QMetaObject::invokeMethod(this, [this, gen, done, total, what] {
            if (gen == generation_) emit progressChanged(done, total, what);
        }, Qt::QueuedConnection);
    };
    ctx.post = [this, gen](std::function<void()> fn) {
        QMetaObject::invokeMethod(this, [this, gen, fn = std::move(fn)] {
            if (gen == generation_) fn();
        }, Qt::QueuedConnection);
    };
    QFuture<std::function<void()>> future = QtConcurrent::run([this, work = std::move(work), ctx]() -> std::function<void()> {
        try {
            return work(ctx);
        } catch (const Cancelled&) {
            return [this] { emit cancelled(); };
        } catch (const ModelError& e) {
            return [this, m = e.message()] { emit failed(m); };
        } catch (const InputError& e) {
            return [this, m = e.message()] { emit failed(m); };
        } catch (const std::exception& e) {
            return [this, m = QString::fromUtf8(e.what())] { emit failed(m); };
        }
    });
    jobs_.push_back({gen, flag, future});
    auto* watcher = new QFutureWatcher<std::function<void()>>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, gen] {
        watcher->deleteLater();
        finishJob(gen);
    });
    watcher->setFuture(future);
    if (!running_) {
        running_ = true;
        emit runningChanged(true);
    }
}

void BackgroundTask::finishJob(quint64 gen) {
    auto it = std::find_if(jobs_.begin(), jobs_.end(), [gen](const Job& j) { return j.generation == gen; });
    if (it == jobs_.end()) return;
    const QFuture<std::function<void()>> future = it->future;
    jobs_.erase(it);
    if (gen != generation_) return; // superseded: drop the result
    running_ = false;
    emit runningChanged(false);
    if (std::function<void()> apply = future.result()) apply();
}

void BackgroundTask::cancel() {
    for (Job& j : jobs_) j.cancel->store(true);
}

void BackgroundTask::discard() {
    cancel();
    ++generation_; // the running job's result and posts no longer match: finishJob drops them
    if (running_) {
        running_ = false;
        emit runningChanged(false);
    }
}

void BackgroundTask::waitForIdle() {
    while (!jobs_.empty()) {
        for (Job j : std::vector<Job>(jobs_)) j.future.waitForFinished();
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    }
    QCoreApplication::processEvents(); // queued posts/progress of the last job
}

void BackgroundTask::attach(QProgressBar* bar, QPushButton* cancelButton) {
    bar->setVisible(false);
    cancelButton->setEnabled(false);
    connect(this, &BackgroundTask::runningChanged, bar, [bar, cancelButton](bool running) {
        bar->setVisible(running);
        bar->setRange(0, 0);
        cancelButton->setEnabled(running);
    });
    connect(this, &BackgroundTask::progressChanged, bar, [bar](qint64 done, qint64 total, const QString& what) {
        bar->setRange(0, int(std::max<qint64>(total, 1)));
        bar->setValue(int(done));
        bar->setFormat(what.isEmpty() ? QStringLiteral("%p%") : what + QStringLiteral(" %p%"));
    });
    connect(cancelButton, &QPushButton::clicked, this, &BackgroundTask::cancel);
}

QHBoxLayout* taskRow(BackgroundTask& task, std::initializer_list<QWidget*> lead) {
    auto* row = new QHBoxLayout;
    for (QWidget* w : lead) row->addWidget(w);
    auto* bar = new QProgressBar;
    bar->setMaximumWidth(240);
    auto* cancel = new QPushButton(QObject::tr("Cancel"));
    task.attach(bar, cancel);
    row->addWidget(bar);
    row->addWidget(cancel);
    row->addStretch();
    return row;
}

} // namespace attnscope
