#pragma once
// Picks and loads the tokenizer stored in a model folder.

#include "model/tokenizers/tokenizer.h"

#include <QString>
#include <memory>

namespace attnscope {

/// Tokenizer for a Hugging Face model folder: vocab.json + merges.txt if both exist, else
/// tokenizer.json. Works with Qt resource folders (":/demo").
/// Throws ModelError(dir, "no tokenizer: expected vocab.json and merges.txt, or tokenizer.json")
/// when neither is present, and the loaders' ModelError for a bad file.
std::unique_ptr<Tokenizer> loadTokenizerFromFolder(const QString& dir);

/// Cheap check that `dir` has tokenizer files (vocab.json + merges.txt, or tokenizer.json), without
/// parsing them. Throws the same ModelError as loadTokenizerFromFolder when neither is present.
void requireTokenizerFiles(const QString& dir);

} // namespace attnscope
