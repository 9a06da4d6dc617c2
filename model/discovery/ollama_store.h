#pragma once
// Ollama's model store ($OLLAMA_MODELS, else ~/.ollama/models):
//   manifests/<registry>/<namespace>/<model>/<tag>   a JSON image manifest (Docker schema 2)
//   blobs/sha256-<hex>                              content-addressed files
// The manifest's layer with mediaType "application/vnd.ollama.image.model" names the GGUF weights by
// its digest "sha256:<hex>", stored as blobs/sha256-<hex>. Names as `ollama` spells them:
// "llama3.2:1b" is registry.ollama.ai/library/llama3.2/1b, "llama3.2" means tag "latest",
// "user/model:tag" is registry.ollama.ai/user/model/tag. Nothing here writes.

#include <QList>
#include <QString>

namespace attnscope {

/// The store folder the environment points to (it may not exist).
QString ollamaModelsDir();

struct OllamaModel {
    QString name;     ///< "llama3.2:1b" (library models without registry and namespace)
    QString manifest; ///< the manifest file
    QString blob;     ///< the GGUF blob ("" when the manifest is unusable; see problem)
    QString problem;
};

/// Every manifest in `storeDir`, sorted by name; each with its blob or the problem.
QList<OllamaModel> listOllamaModels(const QString& storeDir);
/// The model `name` ("llama3.2:1b", "llama3.2", "user/model:tag", "host/ns/model:tag") in `storeDir`.
OllamaModel findOllamaModel(const QString& storeDir, const QString& name);
/// The model layer's blob named by a manifest file. Throws ModelError(manifest, problem).
QString ollamaBlobForManifest(const QString& storeDir, const QString& manifestPath);

} // namespace attnscope
