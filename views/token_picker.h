#pragma once
// A line edit for choosing one vocabulary token by typing: autocompletes from the vocabulary's
// display strings ("␣Mary"), accepts a display string, the vocabulary's own string ("ĠMary"),
// decoded text (" Mary") or "#id" (lookupToken), and shows the resolved id (or the problem) beside it.

#include "model/tokenizers/tokenizer.h"

#include <QHash>
#include <QWidget>
#include <memory>
#include <optional>

class QCompleter;
class QLabel;
class QLineEdit;
class QStringListModel;

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
    /// Selects a token by id (shows its display string).
    void setTokenId(int id);
    /// The resolved token, if the text names one.
    std::optional<int> tokenId() const { return id_; }
    /// The id/problem label's text ("id 5335", or why the text is not a token).
    QString statusText() const;
    QLineEdit* lineEdit() const { return edit_; }
    void setPlaceholderText(const QString& text);

signals:
    /// The resolved token changed (-1 = none).
    void tokenChanged(int id);

private:
    void resolve();

    const Tokenizer* tokenizer_ = nullptr;
    QHash<QString, int> displayIndex_;
    QLineEdit* edit_;
    QLabel* idLabel_;
    QCompleter* completer_;
    QStringListModel* model_;
    std::optional<int> id_;
};

} // namespace attnscope
