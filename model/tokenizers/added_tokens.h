#pragma once
// Tokens matched as whole units in the text before the tokenizer's own splitting and merging: Hugging
// Face added_tokens, SentencePiece user-defined symbols, and (when asked for) control tokens such as
// "<s>" or "<|begin_of_text|>". Sources: tokenizers src/tokenizer/added_vocabulary.rs
// (AddedVocabulary::split_with_indices, leftmost-longest), llama.cpp llama-vocab.cpp tokenizer_st_partition.

#include <QHash>
#include <QString>
#include <QStringView>
#include <vector>

namespace attnscope {

/// One piece of a split text: a run of ordinary text, or a matched token.
struct TextFragment {
    qsizetype start = 0;  ///< UTF-16 offset in the text
    qsizetype length = 0; ///< UTF-16 length
    int token = -1;       ///< the matched token's id, or -1 for ordinary text
};

class AddedTokens {
public:
    /// Adds `text` as a token matched in the text with id `id`. `special` tokens are matched only
    /// while setMatchSpecial(true); the others always. Empty texts are ignored; a text added twice
    /// keeps its last id.
    void add(const QString& text, int id, bool special);
    /// Whether special tokens are matched too (default false: "<s>" in the text is plain text).
    void setMatchSpecial(bool on) { matchSpecial_ = on; }
    bool matchSpecial() const { return matchSpecial_; }
    /// `text` cut at every match, leftmost first and the longest at a position; the fragments tile
    /// the text. Without tokens to match, one fragment (none for an empty text).
    std::vector<TextFragment> split(QStringView text) const;

private:
    struct Entry {
        QString text;
        int id;
        bool special;
    };
    /// First UTF-16 unit -> entries starting with it, longest first.
    QHash<char16_t, std::vector<Entry>> byFirst_;
    bool matchSpecial_ = false;
    bool anyPlain_ = false; ///< some entry is matched without matchSpecial_
};

} // namespace attnscope
