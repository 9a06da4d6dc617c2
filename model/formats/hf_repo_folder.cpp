#include "model/formats/hf_repo_folder.h"

#include <QDir>
#include <QFileInfo>
#include <QStringList>

namespace attnscope {

namespace {
const QString kPrefix = QStringLiteral("models--");
}

QString hfRepoFolderName(const QString& repoId) { return kPrefix + QString(repoId).replace(QLatin1Char('/'), QStringLiteral("--")); }

QString hfRepoIdOfFolderName(const QString& folderName) {
    if (!folderName.startsWith(kPrefix) || folderName.size() == kPrefix.size()) return {};
    return folderName.mid(kPrefix.size()).replace(QStringLiteral("--"), QStringLiteral("/"));
}

QString hfRepoIdForPath(const QString& path) {
    const QStringList parts = QDir::cleanPath(QFileInfo(path).absoluteFilePath()).split(QLatin1Char('/'));
    for (qsizetype i = parts.size() - 3; i >= 0; --i)
        if (parts[i + 1] == QLatin1String("snapshots"))
            if (const QString repoId = hfRepoIdOfFolderName(parts[i]); !repoId.isEmpty()) return repoId;
    return {};
}

} // namespace attnscope
