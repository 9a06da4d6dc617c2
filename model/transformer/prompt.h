#pragma once
// Turning the user's prompt into the ids the model runs, and the labels shown on token axes.

#include "model/tokenizers/tokenizer.h"

#include <QStringList>
#include <vector>

namespace attnscope {

/// Token ids for `text`, with the tokenizer's BOS (<|endoftext|> for GPT-2, <s> for Llama 2) first
/// when prependBos is set, as TransformerLens does by default (Tokenizer::addsBos() is the model's
/// default for it). BOS comes exactly once: when the text's own ids already start with it (the
/// prompt begins with "<s>" and the tokenizer matches special tokens), none is added. Hugging Face
/// and llama.cpp would give two BOS there (llama.cpp warns "the prompt also starts with a BOS
/// token"); a second BOS is never what a prompt typed here means. Never throws; may return an
/// empty vector.
std::vector<int> tokenizePrompt(const Tokenizer& tokenizer, const QString& text, bool prependBos);

/// Display labels for ids (Tokenizer::displayToken), one per position.
QStringList tokenLabels(const Tokenizer& tokenizer, const std::vector<int>& ids);

} // namespace attnscope
