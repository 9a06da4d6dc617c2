#pragma once
// The plot skeleton of the heatmap views (HeatmapView): a QCustomPlot laid out as
// [title] over [cells | colour bar], a framed axis rect, crisp (non-interpolated) cells that can be
// oversampled for vector export, and a layout pass that makes the cells square (or fills the area).

#include <qcustomplot.h>

#include <functional>

namespace attnscope {

/// QCustomPlot whose layout can be computed without drawing (fitting the cells needs the axis rect).
class LayoutablePlot : public QCustomPlot {
public:
    using QCustomPlot::QCustomPlot;
    void layoutNow() { updateLayout(); }
};

/// `f` at `pt` points, optionally bold.
QFont withPointSize(QFont f, double pt, bool bold = false);

/// The widget font with its family resolved ("DejaVu Sans"), not an alias like "Sans Serif" that
/// SVG viewers don't know.
QFont resolvedFont(const QFont& f);

/// Thin axis with outward ticks, 10 pt label, 9 pt tick labels (colours: applyPlotColors).
void styleHeatmapAxis(QCPAxis* axis, const QFont& base, const QString& label);

/// The parts of a heatmap plot built by buildHeatmapPlot.
struct HeatmapPlotParts {
    QCPTextElement* title = nullptr;
    QCPAxisRect* rect = nullptr;   ///< bottom axis = columns, left axis = rows (reversed: row 0 at top)
    QCPColorScale* scale = nullptr;
    QCPColorMap* map = nullptr;    ///< no interpolation, tight boundary off
};

/// Clears `plot` and builds title / cells / colour bar with the given axis and colour-bar labels.
HeatmapPlotParts buildHeatmapPlot(QCustomPlot* plot, const QFont& base, const QString& colLabel,
                                  const QString& rowLabel, const QString& valueLabel);

/// Fills `map` with rows×cols cells centred on integer coordinates 0..cols-1 (x) and 0..rows-1 (y),
/// each cell k×k samples (k > 1 keeps cell edges sharp when viewers resample embedded images).
/// value(row, col) = NaN draws the cell in the gradient's NaN colour.
void fillHeatmapCells(QCPColorMap* map, int rows, int cols, int k, const std::function<double(int, int)>& value);

/// `text` broken at spaces into lines ('\n') no wider than `width` pixels in `font` (a word wider than that
/// gets a line of its own), so a centred title longer than its plot is wrapped instead of cut at both ends.
QString wrapToWidth(const QString& text, const QFont& font, int width);

/// The margin fitHeatmapCells keeps around the plot layout, in pixels.
inline constexpr int kHeatmapPad = 8;

/// Lays `plot` out for its current viewport. square = true: cells become square, the spare width
/// or height becomes equal margins; false: the cells fill the area. Returns nothing; `rect`'s
/// axis ranges decide the number of cells across and down.
void fitHeatmapCells(LayoutablePlot* plot, QCPAxisRect* rect, bool square);

/// (row, col) of the cell under plot pixel `pos`, or (-1, -1) outside the cells.
QPoint heatmapCellAt(QCPAxisRect* rect, const QPoint& pos);

} // namespace attnscope
