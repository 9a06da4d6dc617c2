#include "views/token_field.h"

#include <QCompleter>
#include <QStringListModel>

namespace attnscope {

TokenField::TokenField(QWidget* parent) : QLineEdit(parent) {
    setPlaceholderText(tr("token, e.g. ␣the"));
    setClearButtonEnabled(true);
    auto* completer = new QCompleter(new QStringListModel(this), this);
    completer->setCaseSensitivity(Qt::CaseSensitive);
    completer->setFilterMode(Qt::MatchStartsWith);
    completer->setMaxVisibleItems(12);
    setCompleter(completer);
    connect(completer, qOverload<const QString&>(&QCompleter::activated), this, [this](const QString& text) {
        setText(text);
        choose();
    });
    connect(this, &QLineEdit::returnPressed, this, &TokenField::choose);
}

void TokenField::setTokenizer(const Tokenizer* tokenizer) {
    if (tokenizer == tokenizer_) return;
    tokenizer_ = tokenizer;
    byDisplay_.clear();
    QStringList items;
    if (tokenizer) {
        const int n = tokenizer->vocabSize();
        items.reserve(n);
        for (int id = 0; id < n; ++id) {
            const QString d = tokenizer->displayToken(id);
            if (!byDisplay_.contains(d)) {
                byDisplay_.insert(d, id);
                items << d;
            }
        }
        items.sort(Qt::CaseSensitive);
    }
    static_cast<QStringListModel*>(completer()->model())->setStringList(items);
}

std::optional<int> TokenField::tokenId() const {
    if (!tokenizer_) return std::nullopt;
    const QString t = text();
    if (t.isEmpty()) return std::nullopt;
    if (auto it = byDisplay_.constFind(t); it != byDisplay_.constEnd()) return *it;
    if (auto id = tokenizer_->tokenId(t)) return id;
    if (t.startsWith(QLatin1Char('#'))) {
        bool ok = false;
        const int id = t.mid(1).toInt(&ok);
        if (ok && id >= 0 && id < tokenizer_->vocabSize()) return id;
    }
    QString raw = t;
    raw.replace(QChar(0x2423), QLatin1Char(' ')).replace(QChar(0x21B5), QLatin1Char('\n'));
    const std::vector<int> ids = tokenizer_->encode(raw);
    if (ids.size() == 1) return ids.front();
    return std::nullopt;
}

void TokenField::setTokenId(int id) {
    if (tokenizer_ && id >= 0 && id < tokenizer_->vocabSize()) setText(tokenizer_->displayToken(id));
}

void TokenField::choose() {
    if (auto id = tokenId()) {
        emit tokenChosen(*id);
        setStyleSheet({});
        setToolTip(tr("token id %1").arg(*id));
    } else {
        setStyleSheet(QStringLiteral("QLineEdit { border: 1px solid #b2182b; }"));
        setToolTip(tr("'%1' is not a single token of this vocabulary").arg(text()));
    }
}

} // namespace attnscope
