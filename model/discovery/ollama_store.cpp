#include "model/discovery/ollama_store.h"

#include "model/core/errors.h"
#include "model/formats/json_file.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonObject>
#include <QRegularExpression>
#include <algorithm>

namespace attnscope {

namespace {

const QString kDefaultRegistry = QStringLiteral("registry.ollama.ai");
const QString kDefaultNamespace = QStringLiteral("library");
const QString kModelLayer = QStringLiteral("application/vnd.ollama.image.model");

/// The name `ollama list` shows for manifests/<registry>/<namespace>/<model>/<tag>.
QString displayName(const QStringList& parts) {
    const QString modelTag = parts[2] + QLatin1Char(':') + parts[3];
    if (parts[0] != kDefaultRegistry) return parts[0] + QLatin1Char('/') + parts[1] + QLatin1Char('/') + modelTag;
    return parts[1] == kDefaultNamespace ? modelTag : parts[1] + QLatin1Char('/') + modelTag;
}

OllamaModel fromManifest(const QString& storeDir, const QString& manifest, const QString& name) {
    OllamaModel m;
    m.name = name;
    m.manifest = manifest;
    try {
        m.blob = ollamaBlobForManifest(storeDir, manifest);
    } catch (const ModelError& e) {
        m.problem = e.message();
    }
    return m;
}

} // namespace

QString ollamaModelsDir() {
    if (const QString d = qEnvironmentVariable("OLLAMA_MODELS"); !d.isEmpty()) return d;
    return QDir::home().filePath(QStringLiteral(".ollama/models"));
}

QString ollamaBlobForManifest(const QString& storeDir, const QString& manifestPath) {
    const QJsonObject o = parseJsonObject(readSmallFile(manifestPath, manifestPath, 4 << 20), manifestPath);
    const QJsonArray layers = o.value(QLatin1String("layers")).toArray();
    for (const QJsonValue& l : layers) {
        const QJsonObject layer = l.toObject();
        if (layer.value(QLatin1String("mediaType")).toString() != kModelLayer) continue;
        const QString digest = layer.value(QLatin1String("digest")).toString();
        static const QRegularExpression sha(QStringLiteral("^sha256:[0-9a-f]{64}$"));
        if (!sha.match(digest).hasMatch())
            throw ModelError(manifestPath, QStringLiteral("the model layer's digest '%1' is not sha256:<64 hex digits>").arg(digest));
        const QString blob = QDir(storeDir).filePath(QStringLiteral("blobs/") + QString(digest).replace(QLatin1Char(':'), QLatin1Char('-')));
        if (!QFileInfo(blob).isFile()) throw ModelError(manifestPath, QStringLiteral("its model blob %1 is missing").arg(blob));
        return blob;
    }
    throw ModelError(manifestPath, QStringLiteral("no layer of mediaType %1 (not a model manifest)").arg(kModelLayer));
}

QList<OllamaModel> listOllamaModels(const QString& storeDir) {
    QList<OllamaModel> out;
    const QDir manifests(QDir(storeDir).filePath(QStringLiteral("manifests")));
    if (!manifests.exists()) return out;
    QDirIterator it(manifests.path(), QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        const QStringList parts = manifests.relativeFilePath(path).split(QLatin1Char('/'));
        if (parts.size() != 4) continue; // <registry>/<namespace>/<model>/<tag> only
        out << fromManifest(storeDir, path, displayName(parts));
    }
    std::sort(out.begin(), out.end(), [](const OllamaModel& a, const OllamaModel& b) { return a.name < b.name; });
    return out;
}

OllamaModel findOllamaModel(const QString& storeDir, const QString& name) {
    QString model = name, tag = QStringLiteral("latest");
    const qsizetype colon = name.lastIndexOf(QLatin1Char(':'));
    if (colon > name.lastIndexOf(QLatin1Char('/'))) {
        model = name.left(colon);
        tag = name.mid(colon + 1);
    }
    QStringList parts = model.split(QLatin1Char('/'));
    if (parts.size() == 1) parts.prepend(kDefaultNamespace);
    if (parts.size() == 2) parts.prepend(kDefaultRegistry);
    parts << tag;
    static const QRegularExpression safe(QStringLiteral("^[A-Za-z0-9][A-Za-z0-9._-]*$"));
    const bool valid = parts.size() == 4 && std::all_of(parts.begin(), parts.end(), [](const QString& p) {
        return safe.match(p).hasMatch();
    });
    OllamaModel m;
    m.name = name;
    if (!valid) {
        m.problem = QStringLiteral("'%1' is not an Ollama model name (MODEL[:TAG], NAMESPACE/MODEL[:TAG])").arg(name);
        return m;
    }
    const QString manifest = QDir(storeDir).filePath(QStringLiteral("manifests/") + parts.join(QLatin1Char('/')));
    if (!QFileInfo(manifest).isFile()) {
        m.problem = QStringLiteral("Ollama model '%1' is not in %2 (no %3; `ollama pull %1` fetches it)")
                        .arg(name, storeDir, QDir(storeDir).relativeFilePath(manifest));
        return m;
    }
    return fromManifest(storeDir, manifest, name);
}

} // namespace attnscope
