#pragma once
// What the window opens at start-up.
//  1. a model or session given on the command line (a path or a model name, model/discovery/model_name.h);
//  2. else the last session (QSettings "lastSession", written by MainWindow) if its model still opens;
//  3. else the last model (QSettings "lastModel", from versions before sessions) if it still exists;
//  4. else the bundled demo model, with the model picker shown over it to offer the installed models.

#include "app/session_file.h"

#include <QString>

namespace attnscope {

struct StartupPlan {
    enum class Action { OpenModel, OpenSessionFile, RestoreLastSession };
    Action action = Action::OpenModel;
    QString model;            ///< OpenModel: a path or name for MainWindow::openModel
    QString sessionFile;      ///< OpenSessionFile
    SessionState lastSession; ///< RestoreLastSession
    bool showPicker = false;  ///< nothing given and nothing to restore
};

/// The plan for `commandLineModel` (the positional argument or --model; "" when none).
StartupPlan planStartup(const QString& commandLineModel);

/// The model path to open: `commandLinePath` resolved (a name that resolves to nothing is returned as
/// given, for the loader to report); otherwise the last model (QSettings "lastModel") if it still exists;
/// otherwise the bundled demo model (":/demo").
QString startupModelPath(const QString& commandLinePath);

} // namespace attnscope
