#include "model/discovery/hf_cache.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <algorithm>

namespace attnscope {

QString hfHubCacheDir() {
    if (const QString c = qEnvironmentVariable("HF_HUB_CACHE"); !c.isEmpty()) return c;
    if (const QString h = qEnvironmentVariable("HF_HOME"); !h.isEmpty()) return QDir(h).filePath(QStringLiteral("hub"));
    const QString xdg = qEnvironmentVariable("XDG_CACHE_HOME");
    const QString cache = xdg.isEmpty() ? QDir::home().filePath(QStringLiteral(".cache")) : xdg;
    return QDir(cache).filePath(QStringLiteral("huggingface/hub"));
}

QString hfNewestSnapshot(const QString& repoFolder, QString* problem) {
    const QDir snapshots(QDir(repoFolder).filePath(QStringLiteral("snapshots")));
    QFile ref(QDir(repoFolder).filePath(QStringLiteral("refs/main")));
    if (ref.open(QIODevice::ReadOnly)) {
        const QString commit = QString::fromLatin1(ref.read(256)).trimmed();
        static const QRegularExpression hex(QStringLiteral("^[0-9a-f]{7,64}$"));
        if (hex.match(commit).hasMatch() && snapshots.exists(commit)) return snapshots.filePath(commit);
    }
    const QFileInfoList revs = snapshots.entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Time);
    if (revs.isEmpty()) {
        if (problem) *problem = QStringLiteral("%1 has no snapshot (an interrupted download?)").arg(snapshots.path());
        return {};
    }
    return revs.first().absoluteFilePath(); // QDir::Time: newest first
}

QList<HfCachedModel> listHfCache(const QString& cacheDir) {
    QList<HfCachedModel> out;
    const QDir dir(cacheDir);
    for (const QFileInfo& fi : dir.entryInfoList({hfRepoFolderName(QStringLiteral("*"))}, QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
        HfCachedModel m;
        m.repoId = hfRepoIdOfFolderName(fi.fileName());
        m.repoFolder = fi.absoluteFilePath();
        m.snapshot = hfNewestSnapshot(m.repoFolder, &m.problem);
        out << m;
    }
    return out;
}

HfCachedModel findHfCachedModel(const QString& cacheDir, const QString& repoId) {
    HfCachedModel m;
    m.repoId = repoId;
    m.repoFolder = QDir(cacheDir).filePath(hfRepoFolderName(repoId));
    if (!QFileInfo(m.repoFolder).isDir())
        m.problem = QStringLiteral("not in the Hugging Face cache (%1 has no %2)").arg(cacheDir, hfRepoFolderName(repoId));
    else
        m.snapshot = hfNewestSnapshot(m.repoFolder, &m.problem);
    return m;
}

} // namespace attnscope
