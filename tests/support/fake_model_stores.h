#pragma once
// Fake model stores for the discovery tests, laid out under one temporary folder that serves as HOME:
// a Hugging Face hub cache (HF_HOME/hub) with blobs and snapshot symlinks, an Ollama store
// (OLLAMA_MODELS) with manifests and blobs, and an LM Studio folder (~/.lmstudio/models) with GGUF files.

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <utility>
#include <vector>

namespace attnscope::test {

/// One tensor info of a fake GGUF file: name, ggml type id (0 F32, 1 F16, 8 Q8_0, 12 Q4_K, 14 Q6_K), shape.
struct FakeGgufTensor {
    QString name;
    std::uint32_t type = 0;
    std::vector<std::uint64_t> ne;
};

/// A complete little-endian GGUF v3 file: general.architecture, general.name, general.file_type,
/// <arch>.block_count, tokenizer.ggml.tokens (a string array) and the tensors (zero data, 32-byte aligned).
QByteArray buildGguf(const QString& architecture, const QString& name, int fileType, int blockCount,
                     const std::vector<FakeGgufTensor>& tensors);

struct FakeStores {
    QString home;        ///< HOME
    QString hfHome;      ///< HF_HOME (hub cache = hfHome/hub)
    QString hubCache;
    QString ollama;      ///< OLLAMA_MODELS
    QString lmStudio;    ///< HOME/.lmstudio/models
    QString gpt2Newest;  ///< the snapshot refs/main names for "gpt2" (tiny-gpt2's files, openable)
    QString gpt2Older;   ///< another snapshot of gpt2, newer by mtime but not refs/main
    QString tinyLlamaSnapshot; ///< "TinyLlama/TinyLlama-1.1B-Chat-v1.0": llama config + F16 safetensors (no refs/main)
    QString ollamaBlob;  ///< the GGUF blob of "llama3.2:1b"
    QString lmStudioGguf;///< a Q4_K_M qwen2 GGUF in LM Studio's folder
    QString brokenManifest; ///< ollama "broken:latest", whose model blob is missing
};

/// Builds the stores under `root` from tiny-gpt2 (shared test data) and synthetic files.
FakeStores buildFakeStores(const QString& root);
/// Points HOME, HF_HOME and OLLAMA_MODELS at the fake stores and unsets HF_HUB_CACHE and XDG_CACHE_HOME.
void useFakeStores(const FakeStores& s);

} // namespace attnscope::test
