#include "cli_process.h"

#include <QProcess>
#include <QProcessEnvironment>

namespace attnscope::test {

CliRun runCli(const QString& executable, const QStringList& args) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("QT_QPA_PLATFORM"); // the CLI must choose offscreen by itself
    env.remove("DISPLAY");
    p.setProcessEnvironment(env);
    p.start(executable, args);
    if (!p.waitForFinished(120000)) return {-1, {}, "timeout"};
    return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

} // namespace attnscope::test
