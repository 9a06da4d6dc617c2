#pragma once
// Finding the token a user means when they type a target for logit attribution ("␣Mary", " Mary",
// "ĠMary"): shared by the CLI's --dla and the GUI's token picker, so both resolve text the same way.

#include "model/tokenizers/tokenizer.h"

#include <QHash>
#include <QString>
#include <optional>
#include <utility>

namespace attnscope {

/// The single token whose decoded text is exactly `text` (e.g. " Mary" with its leading space).
/// Tries the tokenizer's encoding first, then any vocabulary entry decoding to `text` (special tokens
/// such as "<|endoftext|>"). Throws InputError naming the text and the problem: empty, or "is not a
/// single token: it encodes to N tokens [' Mar', 'ys']", or ambiguous.
int tokenForText(const Tokenizer& tokenizer, const QString& text);

/// "TOKEN" or "TOKEN,TOKEN2" as the CLI's --dla takes it: (t, -1) or (t, t'). A comma that is part of a
/// token (",") is kept: the whole value is tried as one token first, then each comma as the separator.
/// Throws InputError as tokenForText (for the whole value when no split works).
std::pair<int, int> parseTokenPair(const Tokenizer& tokenizer, const QString& value);

/// Display string -> id for the whole vocabulary (Tokenizer::displayToken), first id wins on a clash.
QHash<QString, int> displayTokenIndex(const Tokenizer& tokenizer);

/// What the GUI accepts as a token: an exact display string ("␣Mary"), a vocabulary string ("ĠMary"),
/// decoded text (" Mary", see tokenForText) or "#id". nullopt with *problem set when none matches.
std::optional<int> lookupToken(const Tokenizer& tokenizer, const QHash<QString, int>& displayIndex,
                               const QString& text, QString* problem = nullptr);

} // namespace attnscope
