#pragma once
// Read-only tables of scored tokens and token pairs (embedding-space projections, component readouts,
// checkpoint differences): one row per entry, rank first, the token id in each token cell's tooltip
// and Qt::UserRole, the exact score in the score cell's Qt::UserRole. Every score table is a table
// figure (views/figures/table_figure.h): copy / export menu, hover values, empty-state sentence.

#include "model/analysis/common/topk_accumulator.h"
#include "model/tokenizers/tokenizer.h"

#include <QStringList>
#include <vector>

class QTableWidget;
class QTableWidgetItem;
class QWidget;

namespace attnscope {

/// A sortable-looking, non-editable table with the given column headers and no vertical header, shown
/// as `emptyText` while it has no rows; `baseName` names its exported files.
QTableWidget* makeScoreTable(const QStringList& headers, const QString& baseName, const QString& emptyText,
                             QWidget* parent = nullptr);

/// Every column as wide as its contents, the last one too (makeScoreTable stretches the last column over the
/// free width, which puts a number column's right-aligned values far from the rest of their row): for tables
/// of several number columns, such as the stitch and fine-tuning tables.
void sizeColumnsToContents(QTableWidget* table);

/// Columns: #, token, score. Rank starts at 1.
void fillTokenTable(QTableWidget* table, const std::vector<ScoredToken>& tokens, const Tokenizer& tokenizer);

/// Columns: #, row token, column token, score.
void fillPairTable(QTableWidget* table, const std::vector<ScoredPair>& pairs, const Tokenizer& tokenizer);

/// A read-only token cell: display string, the id in Qt::UserRole and the tooltip.
QTableWidgetItem* tokenCell(const Tokenizer& tokenizer, int id);
/// A read-only right-aligned number cell, 5 significant digits (the value also in Qt::UserRole).
QTableWidgetItem* scoreCell(double value);
/// A read-only right-aligned 1-based rank cell.
QTableWidgetItem* rankCell(int rank);
/// A read-only cell naming a head or neuron ("L1H3", "L0N17"): its layer in Qt::UserRole and its head or
/// neuron index in Qt::UserRole + 1.
QTableWidgetItem* componentCell(const QString& name, int layer, int index);

} // namespace attnscope
