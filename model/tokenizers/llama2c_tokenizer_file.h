#pragma once
// llama2.c's tokenizer.bin: int32 max_token_length, then per token float32 score, int32 length and
// the token's bytes (little-endian). Written by llama2.c tokenizer.py export() from a SentencePiece
// model, which stores "▁" as a space and the BOS/EOS pieces as "\n<s>\n" and "\n</s>\n".
// Source: karpathy/llama2.c run.c build_tokenizer(), encode(); tokenizer.py export().

#include "model/tokenizers/spm_tokenizer.h"

namespace attnscope {

/// Reads `path` as a llama2.c tokenizer.bin. Without `vocabSize` every token up to the end of the
/// file is read; with it exactly that many (run.c reads config.vocab_size tokens and ignores the
/// rest). Throws ModelError(path, ...) for: a missing or unreadable file; a file shorter than its
/// header; max_token_length not positive; a token whose record or bytes run past the end of the
/// file (checked before anything is allocated); a negative length or one above max_token_length;
/// a NaN score; fewer tokens than vocabSize.
std::unique_ptr<SpmTokenizer> loadLlama2cTokenizer(const QString& path, std::optional<int> vocabSize = std::nullopt);

/// loadLlama2cTokenizer on file contents already in memory; `label` names the file in errors.
/// The vocabulary is what run.c's encode() sees, in SentencePiece's own spelling: spaces become
/// "▁" again; tokens 0, 1, 2 are <unk>, <s>, </s> (unknown, control, control; the file's
/// "\n<s>\n" and "\n</s>\n" are the export's display form); "<0xNN>" tokens are byte tokens (at
/// id NN + 3 in llama2.c's files, where run.c looks them up); BOS = 1, EOS = 2, added by default.
/// The text gets the dummy prefix "▁" only if it is not empty, as in run.c.
std::unique_ptr<SpmTokenizer> llama2cTokenizerFromBytes(const QByteArray& bytes, const QString& label,
                                                        std::optional<int> vocabSize = std::nullopt);

} // namespace attnscope
