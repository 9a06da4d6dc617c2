#pragma once
// Opening a model from disk (or a Qt resource folder): config, weights and tokenizer -> Model.

#include "model/core/progress.h"
#include "model/transformer/model.h"

#include <QString>
#include <memory>

namespace attnscope {

/// Opens a model: a folder in Hugging Face layout (config.json, model.safetensors or
/// model.safetensors.index.json + shards, vocab.json/merges.txt or tokenizer.json), a .safetensors
/// file (config.json and the tokenizer are looked up in its folder) or a model.safetensors.index.json.
/// Qt resource folders such as ":/demo" work too (uncompressed resources are mapped in place).
/// Files are opened read-only, never modified, and stay mapped for the Model's lifetime; every
/// safetensors header and every tensor shape is validated before any weight is used.
/// Progress units: config, each weight file, each tensor checked (Gpt2WeightResolver::tensorCount),
/// tokenizer. Throws ModelError naming the file and the problem, or Cancelled.
/// The tokenizer is parsed on a background thread and waited for on first use (LazyTokenizer): its
/// errors (bad vocab.json/merges.txt, missing files, more tokens than vocab_size) are thrown as
/// ModelError from the first Tokenizer call, so callers that must report them at open time call
/// model->tokenizer().vocabSize() once.
std::shared_ptr<const Model> loadModel(const QString& path, const Progress& progress = {});

} // namespace attnscope
