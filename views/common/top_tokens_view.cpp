#include "views/common/top_tokens_view.h"

#include "views/figures/table_figure.h"
#include "views/figures/value_table.h"

#include <QFontDatabase>
#include <QHeaderView>
#include <QPainter>
#include <QStyledItemDelegate>

namespace attnscope {
namespace {

/// Draws the probability as a horizontal bar behind the number.
class ProbabilityDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        const double p = std::clamp(index.data(Qt::UserRole).toDouble(), 0.0, 1.0);
        QRect bar = option.rect.adjusted(2, 3, -2, -3);
        bar.setWidth(int(bar.width() * p));
        painter->fillRect(bar, QColor(0x21, 0x90, 0x8c, 90)); // viridis mid-teal, translucent
        QStyledItemDelegate::paint(painter, option, index);
    }
};

QTableWidgetItem* numberItem(const QString& text) {
    auto* item = new QTableWidgetItem(text);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    return item;
}

} // namespace

TopTokensView::TopTokensView(QWidget* parent) : QTableWidget(0, ColumnCount, parent) {
    setHorizontalHeaderLabels({tr("#"), tr("token"), tr("logit"), tr("probability")});
    verticalHeader()->hide();
    horizontalHeader()->setSectionResizeMode(RankColumn, QHeaderView::ResizeToContents);
    horizontalHeader()->setSectionResizeMode(TokenColumn, QHeaderView::Stretch);
    horizontalHeader()->setSectionResizeMode(LogitColumn, QHeaderView::ResizeToContents);
    horizontalHeader()->setSectionResizeMode(ProbabilityColumn, QHeaderView::ResizeToContents);
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    setSelectionBehavior(QAbstractItemView::SelectRows);
    setAlternatingRowColors(true);
    setItemDelegateForColumn(ProbabilityColumn, new ProbabilityDelegate(this));
    installTableFigure(this, QStringLiteral("top_tokens"), tr("Run a prompt to see the next-token predictions."));
}

void TopTokensView::setEmptyText(const QString& text) { tableFigureOf(this)->setEmptyText(text); }

void TopTokensView::setTokens(const QVector<TopToken>& tokens) {
    setRowCount(int(tokens.size()));
    const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    for (int r = 0; r < tokens.size(); ++r) {
        const TopToken& t = tokens[r];
        setItem(r, RankColumn, numberItem(QString::number(r + 1)));
        auto* tok = new QTableWidgetItem(t.display);
        tok->setFont(mono);
        tok->setToolTip(tr("token id %1").arg(t.id));
        tok->setData(Qt::UserRole, t.id);
        tok->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
        setItem(r, TokenColumn, tok);
        auto* logit = numberItem(QString::number(t.logit, 'f', 2));
        logit->setData(kExactValueRole, t.logit); // Copy values / CSV: the number itself
        setItem(r, LogitColumn, logit);
        auto* prob = numberItem(QStringLiteral("%1 %").arg(100.0 * t.probability, 0, 'f', 1));
        prob->setData(Qt::UserRole, t.probability);
        setItem(r, ProbabilityColumn, prob);
    }
}

} // namespace attnscope
