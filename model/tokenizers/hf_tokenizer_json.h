#pragma once
// Hugging Face tokenizer.json for the models AttnScope opens: picks the tokenizer the file describes.
//  - SentencePiece-style BPE (Llama 2, Mistral, TinyLlama): model.byte_fallback, or a normalizer
//    that writes spaces as "▁" (Prepend("▁") + Replace(" ", "▁")), or a Metaspace pre_tokenizer.
//    Read into SpmTokenizer with the MergeList rule.
//  - byte-level BPE (GPT-2, Llama 3, Qwen2): everything else (Gpt2BpeTokenizer::fromTokenizerJsonObject).

#include "model/tokenizers/spm_tokenizer.h"

#include <QJsonObject>
#include <memory>

namespace attnscope {

struct HfTokenizerConfig;

/// The tokenizer of `path` (a tokenizer.json), with tokenizer_config.json beside it if present
/// (add_bos_token, bos_token). Throws ModelError naming the file: unreadable, invalid JSON, a model
/// type other than BPE, an unsupported normalizer/pre_tokenizer, a bad vocabulary, merge or added
/// token (see Gpt2BpeTokenizer::fromTokenizerJson and spmFromTokenizerJson).
std::unique_ptr<Tokenizer> loadHfTokenizerJson(const QString& path);
/// loadHfTokenizerJson on file contents already in memory (no tokenizer_config.json);
/// `label` names the file in errors.
std::unique_ptr<Tokenizer> hfTokenizerFromJsonBytes(const QByteArray& json, const QString& label);

/// Whether a parsed tokenizer.json describes a SentencePiece-style BPE (see above).
bool isSentencePieceStyle(const QJsonObject& root);

/// A SentencePiece-style tokenizer.json as SpmTokenizer: model.vocab (pieces by id), model.merges
/// (ranks), byte_fallback, unk_token, fuse_unk; added_tokens (special ones become control tokens,
/// matched in text only after setMatchSpecialTokens(true), the others user-defined); the
/// normalizer Prepend("▁")/Replace(" ", "▁") (alone or in a Sequence) or the pre_tokenizer
/// Metaspace (replacement "▁", prepend_scheme always/first/never, split); BOS from the
/// post_processor and tokenizer_config.json (hfBos; "<s>" and not added otherwise).
/// Source: tokenizers src/models/bpe/model.rs, src/normalizers/{prepend,replace}.rs,
/// src/pre_tokenizers/metaspace.rs. Throws ModelError(label, ...) for anything else in the
/// normalizer or pre_tokenizer, a merge of tokens not in the vocabulary ("model.merges[i]: ..."),
/// and the errors of readHfVocab/placeHfAddedTokens.
std::unique_ptr<SpmTokenizer> spmFromTokenizerJson(const QJsonObject& root, const HfTokenizerConfig& config, const QString& label);

} // namespace attnscope
