#pragma once
// SentencePiece's tokenizer.model (a serialized ModelProto), read and encoded through Debian's
// libsentencepiece, so its normalizer (NFKC, whitespace rules) and model type (BPE or unigram) are
// exactly the library's. Builds without the library (CMake did not find it) reject the file with
// a clear error.

#include "model/tokenizers/spm_tokenizer.h"

namespace attnscope {

/// Whether this build can read tokenizer.model files.
bool sentencePieceAvailable();

/// Reads `path`. encode() is SentencePieceProcessor::Encode; decoding, labels and lookups use the
/// model's pieces, scores and types (SpmTokenizer). BOS is the model's bos_id (none if -1), added by
/// default (as Llama's tokenizer.model is used; SentencePiece itself adds none). Throws
/// ModelError(path, ...): missing or unreadable file, not a SentencePiece model (the library's
/// message), or a build without libsentencepiece.
std::unique_ptr<SpmTokenizer> loadSentencePieceModel(const QString& path);
/// loadSentencePieceModel on file contents already in memory; `label` names the file in errors.
std::unique_ptr<SpmTokenizer> sentencePieceModelFromBytes(const QByteArray& bytes, const QString& label);

} // namespace attnscope
