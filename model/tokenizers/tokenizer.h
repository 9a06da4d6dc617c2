#pragma once
// Tokenizer interface: text <-> token ids, plus display strings for token axes.

#include "model/tokenizers/token_display.h"

#include <QByteArray>
#include <QString>
#include <optional>
#include <span>
#include <vector>

namespace attnscope {

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    /// Token ids for `text` (no BOS added). Never throws on any input, including invalid UTF-16.
    virtual std::vector<int> encode(const QString& text) const = 0;
    /// The raw bytes a sequence of ids stands for (joined, so multi-token UTF-8 decodes correctly).
    virtual QByteArray decodeBytes(std::span<const int> ids) const = 0;
    /// decodeBytes as UTF-8 text (invalid sequences become U+FFFD; a leading U+FEFF is kept: utf8Text).
    QString decode(std::span<const int> ids) const { return utf8Text(decodeBytes(ids)); }
    /// The bytes one token stands for in the middle of a sequence (a SentencePiece "▁the" is " the" here,
    /// where decodeBytes of that token alone drops the dummy-prefix space): the per-token text of dumps.
    virtual QByteArray tokenBytes(int id) const { return decodeBytes(std::span<const int>(&id, 1)); }
    /// One token as shown on axes and in tables: leading space as "␣", newline "↵", tab "→",
    /// a token whose bytes are not complete UTF-8 as byte escapes ("\xF0\x9F"); an id outside the
    /// vocabulary (a padded d_vocab row) as "⟨id N⟩" (displayUnknownId).
    virtual QString displayToken(int id) const = 0;
    /// The vocabulary's own string for a token (e.g. "Ġthe" for GPT-2), for lookups and autocomplete.
    virtual QString tokenString(int id) const = 0;
    /// Id of an exact vocabulary string (as tokenString returns), if present.
    virtual std::optional<int> tokenId(const QString& tokenString) const = 0;
    virtual int vocabSize() const = 0;
    /// The beginning-of-sequence token prepended when "Prepend BOS" is on (<|endoftext|> for GPT-2,
    /// <s> for Llama 2, <|begin_of_text|> for Llama 3); none for a model without one (Qwen2).
    virtual std::optional<int> bosId() const = 0;
    /// Whether prompts of this model start with bosId() by default: what the model's own tokenizer
    /// does (HF add_bos_token or a TemplateProcessing post-processor that starts with it, GGUF
    /// tokenizer.ggml.add_bos_token, llama2.c always). The default of the app's "Prepend BOS" box.
    /// GPT-2 vocabularies say true: the app follows TransformerLens, which prepends <|endoftext|>
    /// (HF's GPT-2 tokenizer does not). Never true without a bosId(). encode() never adds BOS
    /// itself; tokenizePrompt (model/transformer/prompt.h) does.
    virtual bool addsBos() const { return bosId().has_value(); }
};

} // namespace attnscope
