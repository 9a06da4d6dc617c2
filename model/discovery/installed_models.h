#pragma once
// The models already on this machine: the Hugging Face hub cache, Ollama's store, LM Studio's and
// GPT4All's folders and folders the user added, each entry probed from its headers
// (model/formats/model_probe.h) and marked with whether AttnScope can open it (open_support.h).

#include "model/core/progress.h"
#include "model/formats/model_probe.h"
#include "model/formats/open_support.h"

#include <QList>
#include <QString>
#include <QStringList>

namespace attnscope {

enum class ModelSource { HuggingFace, Ollama, LmStudio, Gpt4All, UserFolder };

/// "Hugging Face cache", "Ollama", "LM Studio", "GPT4All", "Folder".
QString modelSourceName(ModelSource source);

/// A folder that is searched, and whether it exists.
struct ModelStoreLocation {
    ModelSource source;
    QString dir;
    bool exists = false;
};

/// Every folder findInstalledModels searches, in search order (environment variables and HOME are
/// read at each call).
QList<ModelStoreLocation> modelStoreLocations(const QStringList& userFolders);

struct InstalledModel {
    ModelSource source = ModelSource::UserFolder;
    QString name;     ///< as the source names it: "gpt2", "llama3.2:1b", "TheBloke/…/file.gguf"
    QString openName; ///< what `attnscope NAME` accepts for it ("gpt2", "ollama:llama3.2:1b", or the path)
    QString path;     ///< the file or folder to open ("" when the store entry is broken; see probe.problem)
    ModelProbe probe;
    OpenVerdict verdict;
};

/// Lists and probes every model in the locations (see modelStoreLocations). Reads headers only.
/// Progress: one unit per entry probed. Throws Cancelled.
QList<InstalledModel> findInstalledModels(const QStringList& userFolders, const Progress& progress = {});

} // namespace attnscope
