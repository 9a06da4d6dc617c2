#include "app/startup_model.h"

#include "model/discovery/model_name.h"

#include <QFileInfo>
#include <QJsonDocument>
#include <QSettings>

namespace attnscope {

QString startupModelPath(const QString& commandLinePath) {
    if (!commandLinePath.isEmpty()) {
        const ResolvedModel r = resolveModelName(commandLinePath);
        return r.ok() ? r.path : commandLinePath;
    }
    const QString last = QSettings().value(QStringLiteral("lastModel")).toString();
    if (!last.isEmpty() && QFileInfo::exists(last)) return last; // ":/demo" exists too when embedded
    return resolveModelName({}).path;
}

StartupPlan planStartup(const QString& commandLineModel) {
    StartupPlan plan;
    if (commandLineModel.endsWith(QLatin1Char('.') + kSessionSuffix)) {
        plan.action = StartupPlan::Action::OpenSessionFile;
        plan.sessionFile = commandLineModel;
        return plan;
    }
    if (!commandLineModel.isEmpty()) {
        plan.model = commandLineModel;
        return plan;
    }
    const QByteArray last = QSettings().value(QStringLiteral("lastSession")).toString().toUtf8();
    SessionState s;
    QStringList problems;
    QString error;
    if (!last.isEmpty() && sessionFromJson(QJsonDocument::fromJson(last).object(), &s, &problems, &error) &&
        (resolveModelName(s.model).ok() || (!s.modelName.isEmpty() && resolveModelName(s.modelName).ok()))) {
        plan.action = StartupPlan::Action::RestoreLastSession;
        plan.lastSession = s;
        return plan;
    }
    const QString lastModel = QSettings().value(QStringLiteral("lastModel")).toString();
    if (!lastModel.isEmpty() && QFileInfo::exists(lastModel)) {
        plan.model = lastModel;
        return plan;
    }
    plan.model = QStringLiteral("demo");
    plan.showPicker = true;
    return plan;
}

} // namespace attnscope
