#include "cli_process.h"

#include "reference_json.h"

#include <QDebug>
#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QProcessEnvironment>

namespace attnscope::test {

CliRun runCli(const QString& executable, const QStringList& args, const QStringList& extraEnv) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("QT_QPA_PLATFORM"); // the CLI must choose offscreen by itself
    env.remove("DISPLAY");
    env.remove("WAYLAND_DISPLAY");
    for (const QString& v : extraEnv) env.insert(v.section(QLatin1Char('='), 0, 0), v.section(QLatin1Char('='), 1));
    p.setProcessEnvironment(env);
    QElapsedTimer timer;
    timer.start();
    p.start(executable, args);
    // only a hang should end here: a loaded machine running ctest -j makes one GUI-sized process take a minute
    if (!p.waitForFinished(kCliTimeoutSeconds * 1000))
        return {-1, QString::fromUtf8(p.readAllStandardOutput()),
                QStringLiteral("timeout: still running after %1 s: %2").arg(kCliTimeoutSeconds).arg(args.join(QLatin1Char(' ')))};
    if (timer.elapsed() > 30000) // printed, never asserted: says where the time of a slow run went
        qInfo().noquote() << QStringLiteral("slow process: %1 s: %2").arg(timer.elapsed() / 1000).arg(args.join(QLatin1Char(' ')));
    return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

QJsonObject demoDumpOf(const QString& executable, const QString& dir, const QStringList& args, const QString& key) {
    const QString out = QDir(dir).filePath(key + QString::number(qHash(args.join(QLatin1Char(' ')))) + QStringLiteral(".json"));
    const CliRun r = runCli(executable, QStringList{"--model", "demo", "--dump-json", out, "--force"} + args);
    if (r.exitCode != 0) qWarning().noquote() << r.err;
    return readJsonObject(out)[key].toObject();
}

} // namespace attnscope::test
