#pragma once
// The open model and the last forward pass, with loading and running done off the GUI thread
// (QtConcurrent) with progress and cancel; and the second model the comparison and stitching views work
// with (opened the same way, independently of the first model's jobs). Views never touch this directly
// and never open files; the main window hands them what they draw.

#include "model/formats/model_loader.h"
#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"

#include <QFutureWatcher>
#include <QObject>
#include <atomic>
#include <memory>
#include <variant>

namespace attnscope {

class ModelSession : public QObject {
    Q_OBJECT
public:
    explicit ModelSession(QObject* parent = nullptr);
    ~ModelSession() override;

    std::shared_ptr<const Model> model() const { return model_; }
    /// The last completed forward pass (null before the first run or after a new model opens).
    std::shared_ptr<const ActivationCache> cache() const { return cache_; }
    /// Display labels of the cached tokens.
    QStringList tokenLabels() const { return labels_; }
    bool isBusy() const { return busy_; }

    /// Opens a model folder or .safetensors file in the background. On failure the previous model
    /// stays open and modelLoadFailed carries "<file>: <problem>". `options` as for loadModel (a llama2.c
    /// checkpoint's tokenizer.bin given by --tokenizer).
    void openModel(const QString& path, const LoadOptions& options = {});
    /// Tokenizes and runs the prompt in the background (full activation cache). With
    /// keepLastNCtx a prompt longer than n_ctx is cut to its last n_ctx tokens (keepLastTokens).
    void run(const QString& prompt, bool prependBos, bool keepLastNCtx = false);
    /// Asks the running job to stop; it ends with `cancelled`.
    void cancel();
    /// Blocks until the current job (if any) has finished and its signals were delivered (tests, CLI).
    /// Does not wait for a second model being opened (waitForSecondModel).
    void waitForIdle();

    /// The second model (comparison, stitching): null until one was opened.
    std::shared_ptr<const Model> secondModel() const { return second_; }
    /// Opens a second model in the background (the checks and loading of openModel), while the first model's
    /// jobs go on. `nameOrPath` is resolved here (model/discovery/model_name.h: a path, demo-variant, gpt2,
    /// ollama:…), and the signals name it as given. A newer request cancels an older one still loading; on
    /// failure (a name that names nothing fails at once, before this returns) the previous second model stays
    /// and secondModelLoadFailed carries "<file>: <problem>".
    void openSecondModel(const QString& nameOrPath);
    /// Asks the second model's load to stop (secondModelLoadFailed follows with an empty message).
    void cancelSecondModel();
    bool isLoadingSecondModel() const { return secondLoading_ > 0; }
    /// Blocks (processing events) until no second model is loading and its signals were delivered.
    void waitForSecondModel();

signals:
    void busyChanged(bool busy);
    void progressChanged(qint64 done, qint64 total, const QString& what);
    void modelLoaded();
    void modelLoadFailed(const QString& message);
    void forwardFinished();
    void forwardFailed(const QString& message);
    void cancelled();
    /// Loading the second model `path` (as openSecondModel was given it): progress (also 0 of 0 when it starts).
    void secondModelProgress(const QString& path, qint64 done, qint64 total, const QString& what);
    void secondModelLoaded();
    /// `message` is empty when the load was cancelled.
    void secondModelLoadFailed(const QString& path, const QString& message);

private:
    struct LoadResult { std::shared_ptr<const Model> model; };
    struct RunResult { std::shared_ptr<const ActivationCache> cache; };
    struct Failure { QString message; bool cancelled = false; };
    using JobResult = std::variant<LoadResult, RunResult, Failure>;

    template <typename Work> void startJob(Work work, bool isLoad);
    void finishJob();

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    QStringList labels_;
    bool busy_ = false;
    bool jobIsLoad_ = false;
    std::shared_ptr<std::atomic<bool>> cancelFlag_;
    QFutureWatcher<JobResult> watcher_;
    std::shared_ptr<const Model> second_;
    int secondLoading_ = 0;           ///< second-model loads still running (superseded ones included)
    quint64 secondGeneration_ = 0;    ///< the current request; results of older ones are dropped
    std::shared_ptr<std::atomic<bool>> secondCancel_;
};

} // namespace attnscope
