#include "views/common/score_tables.h"

#include "views/figures/table_figure.h"

#include <QFontDatabase>
#include <QHeaderView>
#include <QTableWidget>

namespace attnscope {

QTableWidget* makeScoreTable(const QStringList& headers, const QString& baseName, const QString& emptyText,
                             QWidget* parent) {
    auto* t = new QTableWidget(0, int(headers.size()), parent);
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->hide();
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setAlternatingRowColors(true);
    t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    t->horizontalHeader()->setStretchLastSection(true);
    installTableFigure(t, baseName, emptyText);
    return t;
}

void sizeColumnsToContents(QTableWidget* table) {
    table->horizontalHeader()->setStretchLastSection(false);
    table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
}

QTableWidgetItem* tokenCell(const Tokenizer& tokenizer, int id) {
    auto* item = new QTableWidgetItem(tokenizer.displayToken(id));
    item->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    item->setData(Qt::UserRole, id);
    item->setToolTip(QObject::tr("token id %1").arg(id));
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    return item;
}

QTableWidgetItem* scoreCell(double value) {
    auto* item = new QTableWidgetItem(QString::number(value, 'g', 5));
    item->setData(Qt::UserRole, value);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    return item;
}

QTableWidgetItem* rankCell(int rank) {
    auto* item = new QTableWidgetItem(QString::number(rank));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    return item;
}

QTableWidgetItem* componentCell(const QString& name, int layer, int index) {
    auto* item = new QTableWidgetItem(name);
    item->setData(Qt::UserRole, layer);
    item->setData(Qt::UserRole + 1, index);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    return item;
}

void fillTokenTable(QTableWidget* table, const std::vector<ScoredToken>& tokens, const Tokenizer& tokenizer) {
    table->setRowCount(int(tokens.size()));
    for (int r = 0; r < int(tokens.size()); ++r) {
        table->setItem(r, 0, rankCell(r + 1));
        table->setItem(r, 1, tokenCell(tokenizer, tokens[size_t(r)].id));
        table->setItem(r, 2, scoreCell(tokens[size_t(r)].score));
    }
}

void fillPairTable(QTableWidget* table, const std::vector<ScoredPair>& pairs, const Tokenizer& tokenizer) {
    table->setRowCount(int(pairs.size()));
    for (int r = 0; r < int(pairs.size()); ++r) {
        table->setItem(r, 0, rankCell(r + 1));
        table->setItem(r, 1, tokenCell(tokenizer, pairs[size_t(r)].row));
        table->setItem(r, 2, tokenCell(tokenizer, pairs[size_t(r)].col));
        table->setItem(r, 3, scoreCell(pairs[size_t(r)].score));
    }
}

} // namespace attnscope
