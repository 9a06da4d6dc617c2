#pragma once
// Turning the user's prompt into the ids the model runs, and the labels shown on token axes.

#include "model/tokenizers/tokenizer.h"

#include <QStringList>
#include <vector>

namespace attnscope {

/// Token ids for `text`, with the tokenizer's BOS (<|endoftext|> for GPT-2) first when prependBos is
/// set, as TransformerLens does by default. Never throws; may return an empty vector.
std::vector<int> tokenizePrompt(const Tokenizer& tokenizer, const QString& text, bool prependBos);

/// Display labels for ids (Tokenizer::displayToken), one per position.
QStringList tokenLabels(const Tokenizer& tokenizer, const std::vector<int>& ids);

} // namespace attnscope
