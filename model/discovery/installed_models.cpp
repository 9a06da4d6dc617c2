#include "model/discovery/installed_models.h"

#include "model/discovery/hf_cache.h"
#include "model/discovery/model_folders.h"
#include "model/discovery/ollama_store.h"

#include <QDir>
#include <QFileInfo>

namespace attnscope {

QString modelSourceName(ModelSource source) {
    switch (source) {
    case ModelSource::HuggingFace: return QStringLiteral("Hugging Face cache");
    case ModelSource::Ollama: return QStringLiteral("Ollama");
    case ModelSource::LmStudio: return QStringLiteral("LM Studio");
    case ModelSource::Gpt4All: return QStringLiteral("GPT4All");
    case ModelSource::UserFolder: break;
    }
    return QStringLiteral("Folder");
}

QList<ModelStoreLocation> modelStoreLocations(const QStringList& userFolders) {
    QList<ModelStoreLocation> out{{ModelSource::HuggingFace, hfHubCacheDir()}, {ModelSource::Ollama, ollamaModelsDir()}};
    for (const QString& d : lmStudioModelDirs()) out.push_back({ModelSource::LmStudio, d});
    out.push_back({ModelSource::Gpt4All, gpt4allModelDir()});
    for (const QString& d : userFolders) out.push_back({ModelSource::UserFolder, d});
    for (ModelStoreLocation& l : out) l.exists = QFileInfo(l.dir).isDir();
    return out;
}

QList<InstalledModel> findInstalledModels(const QStringList& userFolders, const Progress& progress) {
    // 1. list the entries (directory listings and small manifests only)
    QList<InstalledModel> out;
    for (const ModelStoreLocation& loc : modelStoreLocations(userFolders)) {
        if (!loc.exists) continue;
        progress.checkCancelled();
        if (loc.source == ModelSource::HuggingFace) {
            for (const HfCachedModel& m : listHfCache(loc.dir)) {
                InstalledModel e{loc.source, m.repoId, m.repoId, m.snapshot, {}, {}};
                e.probe.problem = m.problem;
                out << e;
            }
        } else if (loc.source == ModelSource::Ollama) {
            for (const OllamaModel& m : listOllamaModels(loc.dir)) {
                InstalledModel e{loc.source, m.name, QStringLiteral("ollama:") + m.name, m.blob, {}, {}};
                e.probe.problem = m.problem;
                out << e;
            }
        } else {
            const QDir root(loc.dir);
            for (const QString& path : scanModelFolder(loc.dir))
                out << InstalledModel{loc.source, root.relativeFilePath(path), path, path, {}, {}};
        }
    }
    // 2. probe each (headers only)
    for (qsizetype i = 0; i < out.size(); ++i) {
        InstalledModel& e = out[i];
        progress.step(i, out.size(), QStringLiteral("Reading %1").arg(e.name));
        if (e.probe.problem.isEmpty()) e.probe = probeModel(e.path);
        if (e.probe.name.isEmpty()) e.probe.name = e.name;
        e.verdict = canOpen(e.probe);
    }
    progress.step(out.size(), out.size(), QStringLiteral("Found %1 models").arg(out.size()));
    return out;
}

} // namespace attnscope
