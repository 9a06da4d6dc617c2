#pragma once
// Tables as figures. A TableFigure (title, column and row headers, each cell's text on its background
// colour) is drawn with QPainter into PNG/SVG/PDF through the one figure renderer; TableViewFigure makes
// any QTableView (score tables, the logit lens, top tokens, detector and matrix tables) a Figure with
// the shared menu (Copy image / values, Export PNG/SVG/PDF/CSV), hover values (row and column labels
// and the exact number) and an empty-state sentence while it has no rows.

#include "views/figures/figure.h"
#include "views/figures/figure_export.h"

#include <QColor>
#include <QObject>
#include <QPointer>
#include <QStringList>
#include <vector>

class QPainter;
class QTableView;

namespace attnscope {

class EmptyState;
class FigureActions;

struct TableFigure {
    QString title;
    QString corner;                        ///< text of the top-left header cell (e.g. "boundary \\ token")
    QStringList rowLabels;                 ///< [rows]
    QStringList colLabels;                 ///< [cols]
    std::vector<QStringList> text;         ///< [rows][cols]
    std::vector<std::vector<QColor>> fill; ///< [rows][cols]; invalid colour = white
};

/// Captures a table view: header labels (or 1-based indices), cell texts and background colours
/// (Qt::BackgroundRole), in the view's row order. Row labels only when the vertical header is shown.
TableFigure tableFigureFrom(const QTableView& table, const QString& title);

/// Size in logical pixels the figure needs (columns sized to their longest text).
QSize tableFigureSize(const TableFigure& figure);

/// Draws the figure at tableFigureSize on white (black or white cell text, whichever contrasts with the fill).
void paintTableFigure(QPainter& painter, const TableFigure& figure);

/// Writes the figure: PNG tableFigureSize×scale pixels; SVG/PDF vector. Returns false and sets *error
/// ("<file>: <problem>") if the file cannot be written. GUI thread only.
bool exportTableFigure(const TableFigure& figure, const QString& filePath, ImageFormat format, double scale,
                       QString* error);

/// Writes the table's exact values as CSV (valueTableOf: header row = corner + column labels; first
/// column = row labels when the vertical header is visible). Returns false and sets *error on failure.
bool exportTableCsv(const QTableView& table, const QString& path, QString* error);

/// Black or white, whichever reads better on `background` (WCAG relative luminance).
QColor contrastingTextColor(const QColor& background);

/// A table view as a Figure. Created by installTableFigure; a child of the view.
class TableViewFigure : public QObject, public Figure {
    Q_OBJECT
public:
    TableViewFigure(QTableView* view, const QString& baseName, const QString& emptyText);

    /// Title of exported figures (default: none).
    void setTitle(const QString& title) { title_ = title; }
    /// Text of the top-left header cell in figures and copied values.
    void setCorner(const QString& corner) { corner_ = corner; }
    /// The sentence shown over the empty table ("" = none).
    void setEmptyText(const QString& text);
    QString emptyText() const;
    bool isShowingEmptyState() const;
    FigureActions* figureActions() const { return actions_; }
    /// What hovering cell (row, col) shows: "row label, column label: exact value", then the cell's own tooltip.
    QString describeCell(int row, int col) const;

    // Figure
    bool hasFigureData() const override;
    QString figureTitle() const override { return title_; }
    QSize figureSize() const override;
    void paintFigure(QCPPainter& painter, QSize size, bool vector) override;
    ValueTable figureValues() const override;

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void watchModel();
    void updateEmptyState();
    QString rowLabel(int row) const;

    QPointer<QTableView> view_;
    QString title_, corner_;
    QPointer<EmptyState> empty_; ///< a child of the viewport, which may go first when the view is destroyed
    FigureActions* actions_;
};

/// Makes `view` a figure (menu, hover values, empty state). Returns the installed TableViewFigure.
TableViewFigure* installTableFigure(QTableView* view, const QString& baseName, const QString& emptyText = {});
/// The TableViewFigure installed on `view`, or nullptr.
TableViewFigure* tableFigureOf(const QTableView* view);

} // namespace attnscope
