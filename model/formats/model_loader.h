#pragma once
// Opening a model from disk (or a Qt resource folder): config, weights and tokenizer -> Model.

#include "model/core/progress.h"
#include "model/transformer/model.h"

#include <QString>
#include <memory>

namespace attnscope {

/// How to open a model beyond its path.
struct LoadOptions {
    QString tokenizerPath; ///< a tokenizer file for formats without one inside (llama2.c: tokenizer.bin); for any
                           ///< other model an error (ModelError naming the model: it has its own), not ignored
};

/// Opens a model: a folder in Hugging Face layout (config.json with model_type gpt2, llama, mistral or
/// qwen2; model.safetensors or model.safetensors.index.json + shards; vocab.json/merges.txt,
/// tokenizer.json or tokenizer.model), a .safetensors file (config.json and the tokenizer are looked up in
/// its folder), a model.safetensors.index.json, a GGUF file (.gguf: gguf_model.h) or a llama2.c checkpoint
/// (.bin, with options.tokenizerPath or a tokenizer.bin beside it: llama2c_model.h).
/// Qt resource folders such as ":/demo" work too (uncompressed resources are mapped in place).
/// Files are opened read-only, never modified, and stay mapped for the Model's lifetime; every
/// safetensors header and every tensor shape is validated before any weight is used.
/// Progress units: config, each weight file, each tensor checked (Gpt2WeightResolver::tensorCount),
/// tokenizer. Throws ModelError naming the file and the problem, or Cancelled.
/// The tokenizer is parsed on a background thread and waited for on first use (LazyTokenizer): its
/// errors (bad vocab.json/merges.txt, missing files, more tokens than vocab_size) are thrown as
/// ModelError from the first Tokenizer call, so callers that must report them at open time call
/// model->tokenizer().vocabSize() once.
std::shared_ptr<const Model> loadModel(const QString& path, const Progress& progress = {}, const LoadOptions& options = {});

/// The tokenizer of what loadModel would open, without reading or checking any weight: a GGUF file's
/// embedded vocabulary (vocab-only files too), a model folder's tokenizer files (or those beside a
/// .safetensors file), options.tokenizerPath for a llama2.c checkpoint (or tokenizer.bin beside it), or a
/// tokenizer file itself (tokenizer.json, tokenizer.model, llama2.c tokenizer.bin). Throws ModelError.
std::unique_ptr<Tokenizer> loadTokenizerOnly(const QString& path, const LoadOptions& options = {});

} // namespace attnscope
