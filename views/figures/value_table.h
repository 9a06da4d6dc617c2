#pragma once
// The numbers behind a figure as a table of text: a header row (corner + column labels), then one
// row per data row (row label + cells). Numbers are written exactly as the view stores them (the
// shortest text that reads back to the same float or double), so a spreadsheet gets the real values.
// The source of "Copy values" (TSV on the clipboard) and of every figure's CSV export.

#include "model/core/tensor.h"

#include <QStringList>
#include <vector>

class QAbstractItemModel;

namespace attnscope {

struct ValueTable {
    QString corner;              ///< top-left header cell, e.g. "query \\ key"
    QStringList colLabels;       ///< [cols]
    QStringList rowLabels;       ///< [rows]; empty = no label column
    std::vector<QStringList> cells; ///< [rows][cols]

    bool isEmpty() const { return cells.empty(); }
    /// Header row then data rows, tab-separated, "\n" line ends. Tabs and line breaks inside a cell
    /// become spaces (spreadsheets split on them).
    QString toTsv() const;
    /// The same rows as RFC 4180 CSV (writeCsv). Returns false and sets *error on failure.
    bool writeCsv(const QString& path, QString* error) const;
};

/// Shortest decimal text that parses back to exactly `v` ("0.1", "1e-08", "-3.25"); NaN → "".
QString exactNumber(float v);
QString exactNumber(double v);

/// A matrix with its labels (empty = indices). NaN cells are empty.
ValueTable valueTableOf(const Matrix& values, const QStringList& rowLabels, const QStringList& colLabels,
                        const QString& corner = {});

/// The item data role that holds a cell's exact number when it differs from Qt::DisplayRole's text.
/// Cells that store their value as a double/float in Qt::UserRole (score tables) are read from there.
constexpr int kExactValueRole = Qt::UserRole + 64;

/// The cells of a table model: per cell kExactValueRole, else a floating-point Qt::UserRole, else a
/// floating-point Qt::DisplayRole (exactNumber), else the display text. Row labels from the vertical
/// header when `rowHeaders`.
ValueTable valueTableOf(const QAbstractItemModel& model, bool rowHeaders, const QString& corner = {});

/// The exact text of one cell, as valueTableOf(model) writes it.
QString exactCellText(const QAbstractItemModel& model, int row, int col);

} // namespace attnscope
