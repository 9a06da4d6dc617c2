#include "app/startup_model.h"

#include "app/command_line.h"

#include <QFileInfo>
#include <QSettings>

namespace attnscope {

QString startupModelPath(const QString& commandLinePath) {
    if (!commandLinePath.isEmpty()) return resolveModelPath(commandLinePath);
    const QString last = QSettings().value(QStringLiteral("lastModel")).toString();
    if (!last.isEmpty() && QFileInfo::exists(last)) return last; // ":/demo" exists too when embedded
    return resolveModelPath({});
}

} // namespace attnscope
