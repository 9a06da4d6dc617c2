#include "app/recent_models.h"

#include "model/discovery/model_name.h"

#include <QFileInfo>
#include <QSettings>

namespace attnscope {

namespace {
const QString kKey = QStringLiteral("recentModels");
}

QStringList recentModels() { return QSettings().value(kKey).toStringList().mid(0, kMaxRecentModels); }

void addRecentModel(const QString& entry) {
    if (entry.isEmpty()) return;
    // a path that exists is stored absolute (a name such as "gpt2" is kept as typed)
    const QString e = !entry.startsWith(QLatin1Char(':')) && QFileInfo::exists(entry) ? QFileInfo(entry).absoluteFilePath() : entry;
    QStringList list = recentModels();
    list.removeAll(e);
    list.prepend(e);
    QSettings().setValue(kKey, list.mid(0, kMaxRecentModels));
}

void clearRecentModels() { QSettings().remove(kKey); }

bool isStaleRecentModel(const QString& entry) {
    if (entry.endsWith(QLatin1String(".attnscope"))) return !QFileInfo::exists(entry);
    return !resolveModelName(entry).ok();
}

} // namespace attnscope
