#pragma once
// A line edit for typing one vocabulary token, with autocomplete over the tokenizer's display strings
// ("␣the", "↵"). A minimal local stand-in for the shared token picker (views/token_picker.h, written
// by another helper); accepts a display string, the vocabulary's own string ("Ġthe"), "#id", or any
// text that encodes to exactly one token.

#include "model/tokenizers/tokenizer.h"

#include <QHash>
#include <QLineEdit>
#include <optional>

namespace attnscope {

class TokenField : public QLineEdit {
    Q_OBJECT
public:
    explicit TokenField(QWidget* parent = nullptr);
    /// The vocabulary to complete from (null = none). The tokenizer must outlive this widget's use of it.
    void setTokenizer(const Tokenizer* tokenizer);
    /// The token the current text names, if any (see the header comment for what is accepted).
    std::optional<int> tokenId() const;
    /// Shows token `id` (its display string).
    void setTokenId(int id);

signals:
    /// Enter pressed or a completion chosen on a text that names a token.
    void tokenChosen(int id);

private:
    void choose();
    const Tokenizer* tokenizer_ = nullptr;
    QHash<QString, int> byDisplay_;
};

} // namespace attnscope
