#pragma once
// Runs the attnscope executable as a real process for the CLI tests, with no display: DISPLAY and
// QT_QPA_PLATFORM are removed, so the CLI must choose the offscreen platform by itself.

#include <QString>
#include <QStringList>

namespace attnscope::test {

struct CliRun {
    int exitCode; ///< -1 on a 120 s timeout
    QString out, err;
};

CliRun runCli(const QString& executable, const QStringList& args);

} // namespace attnscope::test
