#include "app/model_drop.h"

#include <QFileInfo>
#include <QMimeData>
#include <QUrl>

namespace attnscope {

QString droppedModelPath(const QMimeData* mime) {
    if (!mime || !mime->hasUrls()) return {};
    for (const QUrl& url : mime->urls())
        if (url.isLocalFile() && QFileInfo::exists(url.toLocalFile())) return QFileInfo(url.toLocalFile()).absoluteFilePath();
    return {};
}

} // namespace attnscope
