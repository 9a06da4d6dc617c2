#pragma once
// Saving and restoring what the window shows (app/session_file.h): the model, the prompt and BOS
// switch, the selected head and tab and every panel's settings (AnalysisPanel::saveState). A restore
// opens the session's model (unless it is already open), runs the prompt, and once the forward pass
// is in selects the head and tab and restores the panels; what it cannot restore is reported by
// `restored` (a newer version, a missing model, values out of range), never silently dropped.

#include "app/session_file.h"

#include <QObject>
#include <optional>

namespace attnscope {

class MainWindow;

class SessionController : public QObject {
    Q_OBJECT
public:
    /// Follows `window`'s model session; create it after the window's own connections.
    explicit SessionController(MainWindow* window);

    /// The window's state now.
    SessionState capture() const;
    /// Restores `state` (asynchronously: see the file comment). `problems` are reported with the
    /// restore's own (e.g. those found reading the file). With `reload` the model is opened again
    /// even when it is the open one (its file changed on disk).
    void restore(const SessionState& state, QStringList problems = {}, bool reload = false);
    /// Reads a session file and restores it. Returns "" or the error ("<file>: <problem>") of a file
    /// that is not a session, in which case nothing changes.
    QString openFile(const QString& path);
    /// Writes the current state to `path`. Returns "" or the error.
    QString saveFile(const QString& path) const;
    /// True between restore() and `restored`.
    bool isRestoring() const { return pending_.has_value(); }

signals:
    /// A restore finished; `problems` lists what could not be restored (empty: everything was).
    void restored(const QStringList& problems);

private:
    void finish();

    MainWindow* w_;
    std::optional<SessionState> pending_;
    QStringList problems_;
};

} // namespace attnscope
