#pragma once
// Picks and loads the tokenizer stored in a model folder, or a tokenizer file named on its own.

#include "model/tokenizers/tokenizer.h"

#include <QString>
#include <memory>

namespace attnscope {

/// Tokenizer for a Hugging Face model folder: vocab.json + merges.txt if both exist, else
/// tokenizer.json (loadHfTokenizerJson: GPT-2, Llama 2/3, Qwen2 ...), else tokenizer.model
/// (loadSentencePieceModel), else llama2.c's tokenizer.bin (loadLlama2cTokenizer: a llama2.c model
/// exported to HF layout keeps its vocabulary so). Works with Qt resource folders (":/demo").
/// Throws ModelError(dir, "no tokenizer: expected vocab.json and merges.txt, tokenizer.json,
/// tokenizer.model or llama2.c's tokenizer.bin") when none is present, and the loaders' ModelError for
/// a bad file.
std::unique_ptr<Tokenizer> loadTokenizerFromFolder(const QString& dir);

/// Cheap check that `dir` has tokenizer files, without parsing them. Throws the same ModelError as
/// loadTokenizerFromFolder when none is present.
void requireTokenizerFiles(const QString& dir);

/// True when every id from `modelVocab` on is a control token (a special added token): the tokenizer is larger than
/// the model's embedding only by tokens no text run produces unless special tokens are matched. Gemma 3's 270M and 1B
/// ship tokenizer.json with <image_soft_token> at id 262 144 (an added token of the multimodal sizes) beside a
/// vocab_size of 262 144; transformers loads both, and a prompt that names it fails at the embedding (runForward's
/// "Token id … is outside the vocabulary"). False for a tokenizer whose extra ids are ordinary pieces (another model's).
bool onlyControlTokensFrom(const Tokenizer& tokenizer, int modelVocab);

/// A tokenizer file given on its own (--tokenizer): *.json as tokenizer.json, *.model as a
/// SentencePiece model, anything else as llama2.c's tokenizer.bin (read up to `vocabSize` tokens
/// if given, see loadLlama2cTokenizer). Throws the loaders' ModelError.
std::unique_ptr<Tokenizer> loadTokenizerFile(const QString& path, std::optional<int> vocabSize = std::nullopt);

} // namespace attnscope
