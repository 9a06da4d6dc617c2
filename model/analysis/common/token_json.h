#pragma once
// Tokens in the JSON dumps: every token id goes with its text ("token_ids" beside "tokens", "token_id"
// beside "token"), the text being the token's bytes in the middle of a sequence as UTF-8 (Tokenizer::tokenBytes:
// a SentencePiece "▁the" is " the", GPT-2's "Ġthe" is " the").

#include "model/tokenizers/tokenizer.h"

#include <QJsonArray>
#include <QString>
#include <span>

namespace attnscope {

/// The text a dump writes beside token id `id`.
QString tokenText(const Tokenizer& tokenizer, int id);
/// [id, …] of `ids`.
QJsonArray tokenIdsJson(std::span<const int> ids);
/// [text, …] of `ids` (tokenText of each), to sit beside tokenIdsJson(ids).
QJsonArray tokenTextsJson(const Tokenizer& tokenizer, std::span<const int> ids);

} // namespace attnscope
