#include "views/token_picker.h"

#include "model/analysis/target_token.h"

#include <QCompleter>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QStringListModel>

namespace attnscope {

TokenPicker::TokenPicker(QWidget* parent) : QWidget(parent) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    edit_ = new QLineEdit;
    edit_->setClearButtonEnabled(true);
    edit_->setToolTip(tr("Type a token: its display string (␣Mary, with ␣ for a leading space), the text it decodes "
                         "to, the vocabulary string (ĠMary) or #id. Suggestions come from the vocabulary."));
    idLabel_ = new QLabel;
    idLabel_->setMinimumWidth(60);
    model_ = new QStringListModel(this);
    completer_ = new QCompleter(model_, this);
    completer_->setCaseSensitivity(Qt::CaseInsensitive);
    completer_->setFilterMode(Qt::MatchContains);
    completer_->setMaxVisibleItems(15);
    edit_->setCompleter(completer_);
    layout->addWidget(edit_, 1);
    layout->addWidget(idLabel_);
    connect(edit_, &QLineEdit::textChanged, this, &TokenPicker::resolve);
    connect(completer_, qOverload<const QString&>(&QCompleter::activated), this, &TokenPicker::resolve);
    setEnabled(false);
}

void TokenPicker::setTokenizer(const Tokenizer* tokenizer) {
    if (tokenizer == tokenizer_) return;
    tokenizer_ = tokenizer;
    displayIndex_.clear();
    QStringList items;
    if (tokenizer_) {
        displayIndex_ = displayTokenIndex(*tokenizer_);
        items.reserve(tokenizer_->vocabSize());
        for (int id = 0; id < tokenizer_->vocabSize(); ++id) items << tokenizer_->displayToken(id);
    }
    model_->setStringList(items);
    setEnabled(tokenizer_ != nullptr);
    resolve();
}

void TokenPicker::setText(const QString& text) {
    edit_->setText(text);
    resolve();
}

QString TokenPicker::text() const { return edit_->text(); }

void TokenPicker::setTokenId(int id) {
    if (tokenizer_ && id >= 0 && id < tokenizer_->vocabSize()) setText(tokenizer_->displayToken(id));
}

QString TokenPicker::statusText() const { return idLabel_->text(); }

void TokenPicker::setPlaceholderText(const QString& text) { edit_->setPlaceholderText(text); }

void TokenPicker::resolve() {
    std::optional<int> id;
    QString problem;
    if (tokenizer_ && !edit_->text().isEmpty()) id = lookupToken(*tokenizer_, displayIndex_, edit_->text(), &problem);
    idLabel_->setText(id ? tr("id %1").arg(*id) : edit_->text().isEmpty() ? QString() : tr("not a token"));
    idLabel_->setToolTip(problem);
    QPalette pal = idLabel_->palette();
    pal.setColor(QPalette::WindowText, id || edit_->text().isEmpty() ? palette().color(QPalette::WindowText) : QColor(190, 30, 30));
    idLabel_->setPalette(pal);
    if (id != id_) {
        id_ = id;
        emit tokenChanged(id ? *id : -1);
    }
}

} // namespace attnscope
