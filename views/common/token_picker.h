#pragma once
// The one widget for entering a vocabulary token (DLA targets, the logit lens target, projection and
// reverse-search tokens): a line edit that completes over the whole vocabulary (the popup lists each
// token's display string and id, "␣Mary   id 5335"), accepts a display string, the vocabulary's own
// string ("ĠMary"), decoded text (" Mary") or "#id" (lookupToken), and shows beside it the resolved id
// or why the text is not one token ("not one token: ␣M + ary").

#include "model/tokenizers/tokenizer.h"

#include <QHash>
#include <QWidget>
#include <optional>

class QCompleter;
class QLabel;
class QLineEdit;

namespace attnscope {

class TokenPicker : public QWidget {
    Q_OBJECT
public:
    explicit TokenPicker(QWidget* parent = nullptr);
    /// The vocabulary to pick from (null = none; the picker is then disabled). `tokenizer` must
    /// outlive the picker's use of it (the panels keep the model alive).
    void setTokenizer(const Tokenizer* tokenizer);
    /// Sets the text (as if typed) and resolves it.
    void setText(const QString& text);
    QString text() const;
    /// Empties the field (no token).
    void clear();
    /// Selects a token by id (shows its display string).
    void setTokenId(int id);
    /// The resolved token, if the text names exactly one.
    std::optional<int> tokenId() const { return id_; }
    /// The label beside the field: "id 5335", or the validation message ("not one token: ␣c + at",
    /// "no such token"); "" while the field is empty.
    QString statusText() const;
    /// The full problem when the text is not one token (the label's tooltip), "" otherwise.
    QString problem() const { return problem_; }
    QLineEdit* lineEdit() const { return edit_; }
    QCompleter* completer() const { return completer_; }
    void setPlaceholderText(const QString& text);

signals:
    /// The resolved token changed while typing (-1 = none).
    void tokenChanged(int id);
    /// Enter pressed or a completion chosen on a text that names a token.
    void tokenChosen(int id);

protected:
    void changeEvent(QEvent* event) override;

private:
    static QString howToType();
    void resolve();
    void choose();
    void updateStatusColour();

    const Tokenizer* tokenizer_ = nullptr;
    QHash<QString, int> displayIndex_;
    QLineEdit* edit_;
    QLabel* idLabel_;
    QCompleter* completer_;
    std::optional<int> id_;
    QString problem_;
};

} // namespace attnscope
