#pragma once
// Tables with coloured cells (the logit-lens table, token rankings, projection lists) as figures
// (PNG/SVG/PDF, drawn with QPainter: title, column and row headers, each cell's text on its
// background colour) and as CSV.

#include "views/figure_export.h"

#include <QColor>
#include <QStringList>
#include <vector>

class QTableWidget;

namespace attnscope {

struct TableFigure {
    QString title;
    QString corner;                        ///< text of the top-left header cell (e.g. "boundary \\ token")
    QStringList rowLabels;                 ///< [rows]
    QStringList colLabels;                 ///< [cols]
    std::vector<QStringList> text;         ///< [rows][cols]
    std::vector<std::vector<QColor>> fill; ///< [rows][cols]; invalid colour = white
};

/// Captures a QTableWidget: header labels (or 1-based indices), cell texts and background colours.
TableFigure tableFigureFrom(const QTableWidget& table, const QString& title);

/// Size in logical pixels the figure needs (columns sized to their longest text).
QSize tableFigureSize(const TableFigure& figure);

/// Draws the figure (black or white cell text, whichever contrasts with the fill). PNG: the image is
/// tableFigureSize×scale pixels; SVG/PDF: vector output. Returns false and sets *error
/// ("<file>: <problem>") if the file cannot be written. GUI thread only.
bool exportTableFigure(const TableFigure& figure, const QString& filePath, ImageFormat format, double scale,
                       QString* error);

/// Writes the table as CSV (header row = corner + column labels; first column = row labels when the
/// table's vertical header is visible). Returns false and sets *error on failure.
bool exportTableCsv(const QTableWidget& table, const QString& path, QString* error);

/// Black or white, whichever reads better on `background` (WCAG relative luminance).
QColor contrastingTextColor(const QColor& background);

} // namespace attnscope
