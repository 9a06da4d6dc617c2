#include "cli_process.h"

#include "reference_json.h"

#include <QDebug>
#include <QDir>
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

QJsonObject demoDumpOf(const QString& executable, const QString& dir, const QStringList& args, const QString& key) {
    const QString out = QDir(dir).filePath(key + QString::number(qHash(args.join(QLatin1Char(' ')))) + QStringLiteral(".json"));
    const CliRun r = runCli(executable, QStringList{"--model", "demo", "--dump-json", out, "--force"} + args);
    if (r.exitCode != 0) qWarning().noquote() << r.err;
    return readJsonObject(out)[key].toObject();
}

} // namespace attnscope::test
