#pragma once
// The status bar's message. Progress, warnings and errors stay until something replaces them; a finished
// job's message ("Ran 12 tokens.", "Exported …", a panel's "… done.") is cleared after a few seconds, so
// the bar never goes on describing an older job (the timeout of figure_actions' showMessage); and when the
// window starts a new job (opening a model or a second model, running the prompt) the last job's message
// goes at once, whatever it was.

#include <QLabel>
#include <QTimer>

namespace attnscope {

class StatusLine : public QLabel {
    Q_OBJECT
public:
    /// How long a finished job's message stays, in ms.
    static constexpr int kFinishedMs = 6000;

    explicit StatusLine(QWidget* parent = nullptr);

    /// Shows `text` until the next message (progress, warnings, errors).
    void showMessage(const QString& text);
    /// Shows a finished job's `text` and clears it after finishedTimeout() ms unless another message came first.
    void showFinished(const QString& text);
    /// A new job starts: the last job's message (finished, a warning or an error) goes, and `what` ("" for
    /// nothing) is shown until the next message.
    void startJob(const QString& what = QString()) { showMessage(what); }
    /// True while a finished job's message is shown and will be cleared.
    bool isTemporary() const { return clear_.isActive(); }
    int finishedTimeout() const { return clear_.interval(); }
    void setFinishedTimeout(int ms) { clear_.setInterval(ms); }

private:
    QTimer clear_;
};

} // namespace attnscope
