#pragma once
// The shape every background tool view shares — inputs, Run, a job off the GUI thread with progress and
// Cancel, a status line, a result (often a MatrixHeatmap) and settings kept in a session — as one object the
// view holds (views derive from QWidget or AnalysisPanel, so this is composed, not inherited):
//  - the job: a BackgroundTask (views/common/background_task.h), one at a time, a new Run replacing the last;
//  - the widgets: the Run button and the status line, laid out by controlRow() (the view's inputs, Run, the
//    progress bar and Cancel) and addTo() (that row, the status line, the result below);
//  - the status line: `busy` text while a job runs, "Cancelled." when it is cancelled, the error when it
//    fails (setCancelledHandler / setFailedHandler replace these), an input problem through reject();
//  - the context: newContext() when the view's model or prompt changes drops the running job, so no result
//    of another model or prompt ever reaches the view;
//  - the settings: settings() binds the inputs to session keys (SettingsBinding, views/common/panel_state.h).
// A view holds it as a member (destroyed before the view's widgets, it waits for the job first), builds its
// inputs and result widget, calls addTo(layout, {inputs}, result), connects runRequested to its run(); run()
// checks the inputs (reject(message) on a problem) and calls start(busy, work), the work returning the closure
// that shows the result; setContext() calls newContext(); saveState/restoreState use settings().

#include "views/common/background_task.h"
#include "views/common/panel_state.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <functional>
#include <initializer_list>
#include <utility>

class QHBoxLayout;
class QLabel;
class QPushButton;
class QSplitter;
class QVBoxLayout;
class QWidget;

namespace attnscope {

/// A label for sentences the view writes (status, captions): plain text, since token texts such as "<s>"
/// are not markup, word-wrapped and selectable with the mouse.
QLabel* textLine(const QString& text = {});

/// A splitter of `panes` (a tool's result beside its details, a table above its projection, …), each with its
/// stretch factor: the share of the free space it takes (0 leaves the pane's own size policy).
QSplitter* splitPanes(Qt::Orientation orientation, std::initializer_list<std::pair<QWidget*, int>> panes);

class BackgroundTool : public QObject {
    Q_OBJECT
public:
    /// `runText` labels the Run button (empty: no button, the view starts its jobs itself); `idleStatus` is the
    /// status line's text until the first job. The button and the status line have no parent until laid out.
    explicit BackgroundTool(const QString& runText = {}, const QString& idleStatus = {}, QObject* parent = nullptr);
    /// Deletes the widgets never laid out; the task then waits for the running job (its closures hold the view).
    ~BackgroundTool() override;

    BackgroundTask& task() { return task_; }
    /// The Run button (null without `runText`); clicking it emits runRequested.
    QPushButton* runButton() const;
    QLabel* statusLabel() const;
    QString statusText() const;
    void setStatus(const QString& text);
    /// Makes `label` (the view's, placed and styled as the view likes) the status line instead of the tool's own.
    void useStatusLabel(QLabel* label);
    SettingsBinding& settings() { return settings_; }
    const SettingsBinding& settings() const { return settings_; }

    /// A row: `lead` (the view's inputs), the Run button, `trail`, the progress bar and Cancel, a stretch.
    QHBoxLayout* controlRow(std::initializer_list<QWidget*> lead, std::initializer_list<QWidget*> trail = {});
    /// Adds controlRow(lead), the status line and `result` (taking the free height; may be null) to `layout`.
    void addTo(QVBoxLayout* layout, std::initializer_list<QWidget*> lead, QWidget* result);

    /// Shows `busy` in the status line and starts `work`, replacing the running job.
    void start(const QString& busy, BackgroundTask::Work work);
    /// Starts `work` and leaves the status line as the view set it.
    void start(BackgroundTask::Work work);
    /// An input problem: drops the running job (nothing of it is shown any more) and shows `message`.
    void reject(const QString& message);
    /// The view's model or prompt changed: drops the running job (nothing of it is shown any more) and, if one
    /// ran, puts the idle text back in the status line.
    void newContext();
    /// Drops the running job (nothing of it is shown any more) and leaves the status line alone: its result is
    /// no longer wanted (the view shows a cached one, or has nothing to compute).
    void discard() { task_.discard(); }
    /// Asks the running job to stop (it ends as cancelled, as with the Cancel button).
    void cancel() { task_.cancel(); }
    bool isRunning() const { return task_.isRunning(); }
    /// Blocks (processing events) until no job runs and the last result was shown (tests, screenshots).
    void waitForIdle() { task_.waitForIdle(); }

    /// What a cancelled job does (default: "Cancelled." in the status line); an empty function does nothing.
    void setCancelledHandler(std::function<void()> handler) { cancelled_ = std::move(handler); }
    /// What a failed job does with its message (default: the message in the status line).
    void setFailedHandler(std::function<void(const QString&)> handler) { failed_ = std::move(handler); }
    /// Also writes the job's progress into the status line ("<what> <done> / <total>").
    void setProgressInStatus(bool on) { progressInStatus_ = on; }

signals:
    void runRequested();

private:
    BackgroundTask task_;
    QString idle_;
    QPointer<QPushButton> run_;
    QPointer<QLabel> status_;
    SettingsBinding settings_;
    std::function<void()> cancelled_;
    std::function<void(const QString&)> failed_;
    bool progressInStatus_ = false;
};

} // namespace attnscope
