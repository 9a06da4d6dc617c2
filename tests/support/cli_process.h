#pragma once
// Runs the attnscope executable as a real process for the CLI tests, with no display: DISPLAY and
// QT_QPA_PLATFORM are removed, so the CLI must choose the offscreen platform by itself.

#include <QJsonObject>
#include <QString>
#include <QStringList>

namespace attnscope::test {

/// How long runCli waits for the process: a bound on a hang, not on speed (tests/CMakeLists.txt gives the suites that
/// start processes the time for it).
constexpr int kCliTimeoutSeconds = 600;

struct CliRun {
    int exitCode; ///< -1 on a timeout (kCliTimeoutSeconds)
    QString out, err;
};

/// `env`: variables set for this run ("NAME=value"), after the display variables are removed.
CliRun runCli(const QString& executable, const QStringList& args, const QStringList& env = {});

/// Runs `executable --model demo --dump-json DIR/<file> --force ARGS` and returns the dump's member `key`
/// (empty, with the process's stderr as a warning, when it failed).
QJsonObject demoDumpOf(const QString& executable, const QString& dir, const QStringList& args, const QString& key);

} // namespace attnscope::test
