#include "views/common/token_picker.h"

#include "model/analysis/common/target_token.h"

#include <QAbstractListModel>
#include <QCompleter>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>

namespace attnscope {
namespace {

/// The vocabulary for the completer: the display string completes (Qt::EditRole), the popup shows it
/// with the id (Qt::DisplayRole).
class VocabularyModel : public QAbstractListModel {
public:
    using QAbstractListModel::QAbstractListModel;
    void setTokenizer(const Tokenizer* tokenizer) {
        beginResetModel();
        display_.clear();
        if (tokenizer) {
            display_.reserve(tokenizer->vocabSize());
            for (int id = 0; id < tokenizer->vocabSize(); ++id) display_ << tokenizer->displayToken(id);
        }
        endResetModel();
    }
    int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : int(display_.size()); }
    QVariant data(const QModelIndex& index, int role) const override {
        if (!index.isValid() || index.row() >= display_.size()) return {};
        if (role == Qt::EditRole) return display_[index.row()];
        if (role == Qt::DisplayRole) return QStringLiteral("%1    id %2").arg(display_[index.row()]).arg(index.row());
        if (role == Qt::UserRole) return index.row();
        return {};
    }

private:
    QStringList display_;
};

/// "not one token: ␣c + at" for a text that encodes to several tokens, "no such token" otherwise.
QString shortProblem(const Tokenizer& tokenizer, const QString& text) {
    const std::vector<int> ids = tokenizer.encode(text);
    if (ids.size() < 2) return QObject::tr("no such token");
    QStringList parts;
    for (size_t i = 0; i < std::min<size_t>(ids.size(), 4); ++i) parts << tokenizer.displayToken(ids[i]);
    if (ids.size() > 4) // the label stays short; the tooltip has them all
        return QObject::tr("not one token: %1 tokens, %2 + …").arg(ids.size()).arg(parts.join(QStringLiteral(" + ")));
    return QObject::tr("not one token: %1").arg(parts.join(QStringLiteral(" + ")));
}

} // namespace

TokenPicker::TokenPicker(QWidget* parent) : QWidget(parent) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    edit_ = new QLineEdit;
    edit_->setClearButtonEnabled(true);
    edit_->setPlaceholderText(tr("token, e.g. ␣the"));
    edit_->setToolTip(howToType());
    idLabel_ = new QLabel;
    idLabel_->setMinimumWidth(60);
    idLabel_->setTextFormat(Qt::PlainText);
    auto* model = new VocabularyModel(this);
    completer_ = new QCompleter(model, this);
    completer_->setCompletionRole(Qt::EditRole);
    completer_->setCaseSensitivity(Qt::CaseInsensitive);
    completer_->setFilterMode(Qt::MatchContains);
    completer_->setMaxVisibleItems(15);
    edit_->setCompleter(completer_);
    layout->addWidget(edit_, 1);
    layout->addWidget(idLabel_);
    connect(edit_, &QLineEdit::textChanged, this, &TokenPicker::resolve);
    connect(edit_, &QLineEdit::returnPressed, this, &TokenPicker::choose);
    connect(completer_, qOverload<const QModelIndex&>(&QCompleter::activated), this, [this](const QModelIndex& index) {
        // the completion's own id: display strings can clash, the chosen entry cannot
        const int id = index.data(Qt::UserRole).toInt();
        setTokenId(id);
        emit tokenChosen(id);
    });
    setEnabled(false);
}

void TokenPicker::setTokenizer(const Tokenizer* tokenizer) {
    if (tokenizer == tokenizer_) return;
    tokenizer_ = tokenizer;
    displayIndex_ = tokenizer_ ? displayTokenIndex(*tokenizer_) : QHash<QString, int>();
    static_cast<VocabularyModel*>(completer_->model())->setTokenizer(tokenizer_);
    setEnabled(tokenizer_ != nullptr);
    resolve();
}

void TokenPicker::setText(const QString& text) {
    edit_->setText(text);
    resolve();
}

QString TokenPicker::text() const { return edit_->text(); }

void TokenPicker::clear() { setText(QString()); }

void TokenPicker::setTokenId(int id) {
    if (!tokenizer_ || id < 0 || id >= tokenizer_->vocabSize()) return;
    const QSignalBlocker block(edit_); // one resolution below, not one per keystroke-like change
    edit_->setText(tokenizer_->displayToken(id));
    resolve();
    if (id_ != id) { // another token shares the display string: the id asked for wins
        id_ = id;
        idLabel_->setText(tr("id %1").arg(id));
        emit tokenChanged(id);
    }
}

QString TokenPicker::statusText() const { return idLabel_->text(); }

void TokenPicker::setPlaceholderText(const QString& text) { edit_->setPlaceholderText(text); }

void TokenPicker::resolve() {
    std::optional<int> id;
    problem_.clear();
    const QString text = edit_->text();
    if (tokenizer_ && !text.isEmpty()) id = lookupToken(*tokenizer_, displayIndex_, text, &problem_);
    if (id) problem_.clear();
    idLabel_->setText(id ? tr("id %1").arg(*id) : text.isEmpty() || !tokenizer_ ? QString() : shortProblem(*tokenizer_, text));
    idLabel_->setToolTip(problem_);
    edit_->setToolTip(problem_.isEmpty() ? howToType() : problem_);
    const bool changed = id != id_;
    id_ = id;
    updateStatusColour();
    if (changed) emit tokenChanged(id ? *id : -1);
}

QString TokenPicker::howToType() {
    return tr("Type a token: its display string (␣Mary, with ␣ for a leading space), the text it decodes to, the "
              "vocabulary string (ĠMary) or #id. Suggestions come from the vocabulary.");
}

void TokenPicker::updateStatusColour() {
    QPalette pal; // only the text colour is set: the rest follows the theme
    if (!id_ && !edit_->text().isEmpty())
        pal.setColor(QPalette::WindowText, palette().color(QPalette::Window).lightness() < 128 ? QColor(0xff, 0x85, 0x85)
                                                                                               : QColor(0xb0, 0x1c, 0x1c));
    idLabel_->setPalette(pal);
}

void TokenPicker::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) updateStatusColour();
}

void TokenPicker::choose() {
    if (id_) emit tokenChosen(*id_);
}

} // namespace attnscope
