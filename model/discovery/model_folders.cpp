#include "model/discovery/model_folders.h"

#include <QDir>
#include <QFileInfo>
#include <QSet>
#include <algorithm>

namespace attnscope {

QStringList lmStudioModelDirs() {
    return {QDir::home().filePath(QStringLiteral(".lmstudio/models")),
            QDir::home().filePath(QStringLiteral(".cache/lm-studio/models"))};
}

QString gpt4allModelDir() { return QDir::home().filePath(QStringLiteral(".local/share/nomic.ai/GPT4All")); }

namespace {

void scan(const QString& dir, int depth, QSet<QString>& seen, QStringList& out) {
    const QString canonical = QFileInfo(dir).canonicalFilePath();
    if (canonical.isEmpty() || seen.contains(canonical)) return;
    seen.insert(canonical);
    const QDir d(dir);
    if (d.exists(QStringLiteral("config.json"))) {
        out << QFileInfo(dir).absoluteFilePath();
        return;
    }
    const QFileInfoList files = d.entryInfoList({QStringLiteral("*.gguf"), QStringLiteral("*.safetensors"), QStringLiteral("*.bin")},
                                                QDir::Files | QDir::Readable);
    for (const QFileInfo& f : files) out << f.absoluteFilePath();
    if (depth <= 0) return;
    for (const QFileInfo& sub : d.entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot | QDir::Readable))
        scan(sub.absoluteFilePath(), depth - 1, seen, out);
}

} // namespace

QStringList scanModelFolder(const QString& dir, int maxDepth) {
    QStringList out;
    QSet<QString> seen;
    if (QFileInfo(dir).isDir()) scan(dir, maxDepth, seen, out);
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace attnscope
