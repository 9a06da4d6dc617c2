#include "app/model_session.h"

#include "model/core/errors.h"
#include "model/discovery/model_name.h"
#include "model/formats/model_loader.h"
#include "model/formats/open_support.h"
#include "model/transformer/forward.h"
#include "model/transformer/prompt.h"
#include "model/transformer/prompt_truncation.h"

#include <QCoreApplication>
#include <QEventLoop>
#include <QPointer>
#include <QtConcurrent>

namespace attnscope {

namespace {
/// What opening a model means for both the first and the second model.
std::shared_ptr<const Model> openChecked(const QString& path, const Progress& p, const LoadOptions& options = {}) {
    requireOpenable(path); // a GGUF or another family that is not supported yet: the reason, not a parser error
    auto model = loadModel(path, p, options);
    (void)model->tokenizer().vocabSize(); // waits for the background tokenizer; its errors fail the open
    return model;
}

/// The message of a failed job (empty when it was cancelled).
QString failureMessage(std::exception_ptr e) {
    try {
        std::rethrow_exception(e);
    } catch (const Cancelled&) {
        return {};
    } catch (const ModelError& x) {
        return x.message();
    } catch (const InputError& x) {
        return x.message();
    } catch (const std::bad_alloc&) {
        return QCoreApplication::translate("ModelSession", "Out of memory.");
    } catch (const std::exception& x) {
        return QString::fromUtf8(x.what());
    } catch (...) {
        return QCoreApplication::translate("ModelSession", "Unknown error.");
    }
}
} // namespace

ModelSession::ModelSession(QObject* parent) : QObject(parent) {
    connect(&watcher_, &QFutureWatcher<JobResult>::finished, this, &ModelSession::finishJob);
}

ModelSession::~ModelSession() {
    cancel();
    cancelSecondModel();
    watcher_.waitForFinished();
    for (auto* w : findChildren<QFutureWatcherBase*>()) w->waitForFinished(); // second-model loads
}

template <typename Work>
void ModelSession::startJob(Work work, bool isLoad) {
    if (busy_) return;
    busy_ = true;
    jobIsLoad_ = isLoad;
    cancelFlag_ = std::make_shared<std::atomic<bool>>(false);
    emit busyChanged(true);
    Progress progress;
    auto flag = cancelFlag_;
    QPointer<ModelSession> self(this);
    progress.isCancelled = [flag] { return flag->load(); };
    progress.report = [self](qint64 done, qint64 total, const QString& what) {
        // delivered on the GUI thread (queued); dropped if the session is gone
        QMetaObject::invokeMethod(self, [self, done, total, what] {
            if (self) emit self->progressChanged(done, total, what);
        }, Qt::QueuedConnection);
    };
    watcher_.setFuture(QtConcurrent::run([work = std::move(work), progress]() -> JobResult {
        try {
            return work(progress);
        } catch (const Cancelled&) {
            return Failure{QString(), true};
        } catch (...) {
            return Failure{failureMessage(std::current_exception())};
        }
    }));
}


void ModelSession::openModel(const QString& path, const LoadOptions& options) {
    startJob([path, options](const Progress& p) -> JobResult { return LoadResult{openChecked(path, p, options)}; }, true);
}

void ModelSession::openSecondModel(const QString& nameOrPath) {
    cancelSecondModel(); // an older request still loading
    const quint64 generation = ++secondGeneration_;
    const QString path = nameOrPath; // the signals name the request as it was made
    const ResolvedModel resolved = resolveModelName(nameOrPath); // a path, or a name such as "gpt2" or "ollama:…"
    if (!resolved.ok()) {
        emit secondModelLoadFailed(path, resolved.error);
        return;
    }
    secondCancel_ = std::make_shared<std::atomic<bool>>(false);
    ++secondLoading_;
    QPointer<ModelSession> self(this);
    Progress progress;
    progress.isCancelled = [flag = secondCancel_] { return flag->load(); };
    progress.report = [self, generation, path](qint64 done, qint64 total, const QString& what) {
        QMetaObject::invokeMethod(self, [self, generation, path, done, total, what] {
            if (self && generation == self->secondGeneration_) emit self->secondModelProgress(path, done, total, what);
        }, Qt::QueuedConnection);
    };
    emit secondModelProgress(path, 0, 0, tr("Opening %1…").arg(path));
    using Outcome = std::pair<std::shared_ptr<const Model>, std::exception_ptr>;
    auto* watcher = new QFutureWatcher<Outcome>(this);
    connect(watcher, &QFutureWatcher<Outcome>::finished, this, [this, watcher, generation, path] {
        const Outcome r = watcher->result();
        watcher->deleteLater();
        --secondLoading_;
        if (generation != secondGeneration_) return; // superseded by a newer request
        if (r.first) {
            second_ = r.first;
            emit secondModelLoaded();
        } else {
            emit secondModelLoadFailed(path, failureMessage(r.second));
        }
    });
    watcher->setFuture(QtConcurrent::run([file = resolved.path, progress]() -> Outcome {
        try {
            return {openChecked(file, progress), nullptr};
        } catch (...) {
            return {nullptr, std::current_exception()};
        }
    }));
}

void ModelSession::cancelSecondModel() {
    if (secondCancel_) secondCancel_->store(true);
}

void ModelSession::waitForSecondModel() {
    while (secondLoading_ > 0) {
        for (auto* w : findChildren<QFutureWatcherBase*>()) w->waitForFinished();
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50); // delivers their finished()
    }
}

void ModelSession::run(const QString& prompt, bool prependBos, bool keepLastNCtx) {
    auto model = model_;
    if (!model) {
        emit forwardFailed(tr("No model is open."));
        return;
    }
    startJob([model, prompt, prependBos, keepLastNCtx](const Progress& p) -> JobResult {
        std::vector<int> ids = tokenizePrompt(model->tokenizer(), prompt, prependBos);
        if (keepLastNCtx)
            ids = keepLastTokens(ids, model->config().n_ctx, prependBos && model->tokenizer().bosId().has_value());
        ForwardOptions opt;
        opt.allLogits = false; // the views read the last position's logits; the lens computes its own rows
        // no per-head results (S·d_model floats per head and layer, 2·S·d_model² FLOPs per layer): the
        // views compute z_h·W_O^h for the heads and positions they show (decomposition, DLA, steps)
        opt.cacheHeadResults = false;
        return RunResult{std::make_shared<const ActivationCache>(runForward(*model, ids, opt, p))};
    }, false);
}

void ModelSession::cancel() {
    if (cancelFlag_) cancelFlag_->store(true);
}

void ModelSession::waitForIdle() {
    while (busy_) {
        watcher_.waitForFinished();
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    }
}

void ModelSession::finishJob() {
    const JobResult result = watcher_.result();
    busy_ = false;
    emit busyChanged(false);
    if (const auto* f = std::get_if<Failure>(&result)) {
        if (f->cancelled) emit cancelled();
        else if (jobIsLoad_) emit modelLoadFailed(f->message);
        else emit forwardFailed(f->message);
    } else if (const auto* l = std::get_if<LoadResult>(&result)) {
        model_ = l->model;
        cache_.reset();
        labels_.clear();
        emit modelLoaded();
    } else if (const auto* r = std::get_if<RunResult>(&result)) {
        cache_ = r->cache;
        labels_ = attnscope::tokenLabels(model_->tokenizer(), cache_->tokens);
        emit forwardFinished();
    }
}

} // namespace attnscope
