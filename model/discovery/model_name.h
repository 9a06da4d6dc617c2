#pragma once
// Models by name: the one function the command line and the window use to turn what the user typed
// into a path the loader opens.
//   PATH                 an existing file or folder (or Qt resource path such as ":/demo")
//   "" or demo           the bundled demo model (":/demo"), unless a file or folder "demo" exists
//   demo-variant         its bundled fine-tuned copy (":/demo-variant", in the attnscope executable), likewise
//   ollama:NAME[:TAG]    the GGUF blob of an Ollama model (model/discovery/ollama_store.h)
//   [hf:]ORG/NAME, NAME  the newest snapshot of a model in the Hugging Face cache (hf_cache.h), offline

#include <QString>

namespace attnscope {

struct ResolvedModel {
    QString path;  ///< what to open ("" on failure)
    QString error; ///< why nothing was found, naming where it looked
    bool ok() const { return error.isEmpty(); }
};

/// Resolves a model name or path (see the header comment). Reads the file system only.
ResolvedModel resolveModelName(const QString& nameOrPath);

} // namespace attnscope
