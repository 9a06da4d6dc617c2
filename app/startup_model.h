#pragma once
// Which model the window opens at startup.

#include <QString>

namespace attnscope {

/// The model to open when the app starts: `commandLinePath` when one was given (resolveModelPath:
/// "demo" is the bundled demo); otherwise the last model (QSettings "lastModel", written by
/// MainWindow) if it still exists; otherwise the bundled demo model (":/demo").
QString startupModelPath(const QString& commandLinePath);

} // namespace attnscope
