#pragma once
// The common base of the heatmap views (AttentionHeatmap, MatrixHeatmap): a QCustomPlot laid out by
// heatmap_plot.h ([title] over [cells | colour bar], token or index labels on both axes), hover
// tooltips, wheel zoom and drag pan with Reset zoom (double-click or the context menu), the shared
// figure actions (copy image / values, export), the empty-state sentence instead of axes, the theme
// and colour maps of Appearance, and crisp drawing on high-DPI screens. Subclasses say what the cells
// hold; the base draws them.

#include "views/figures/figure.h"
#include "views/figures/heatmap_plot.h"

#include <QWidget>

namespace attnscope {

class EmptyState;
class FigureActions;
class TokenAxisTicker;

class HeatmapView : public QWidget, public Figure {
    Q_OBJECT
public:
    ~HeatmapView() override;
    /// The plot, for export and tests.
    QCustomPlot* plot();
    /// Tooltip text of cell (row, col), "" when out of range.
    virtual QString describeCell(int row, int col) const = 0;
    /// describeCell() for a point in plot() coordinates; empty outside the cells.
    QString tooltipAt(const QPoint& plotPos) const;
    /// Centre of cell (row, col) in plot() pixel coordinates (after a layout).
    QPointF cellCentre(int row, int col) const;
    /// Each cell becomes k×k colour-map samples (sharp edges in SVG/PDF). Default 1.
    void setCellOversampling(int k);
    /// Lays the plot out for its current viewport (square cells when wanted).
    void fitCells();
    /// The shared context-menu actions.
    FigureActions* figureActions() const { return actions_; }

    /// The sentence shown instead of axes and colour bar while there is nothing to draw.
    void setEmptyText(const QString& text);
    QString emptyText() const;
    /// True while the empty-state sentence is shown (no data).
    bool isShowingEmptyState() const;
    /// The colour bar (hidden while there is no data).
    QCPColorScale* colorScale() const { return parts_.scale; }

    // Figure
    bool hasFigureData() const override { return dataRows() > 0 && dataCols() > 0; }
    /// The widget's size (the plot fills it).
    QSize figureSize() const override;
    void paintFigure(QCPPainter& painter, QSize size, bool vector) override;
    bool isZoomable() const override { return true; }
    void resetZoom() override { resetView(); }

public slots:
    /// Shows all cells again after zoom/pan.
    void resetView();

signals:
    /// Left click on cell (row, col).
    void cellClicked(int row, int col);

protected:
    HeatmapView(const QString& colLabel, const QString& rowLabel, const QString& valueLabel, QWidget* parent);
    virtual int dataRows() const = 0;
    virtual int dataCols() const = 0;
    /// The value drawn in cell (row, col); NaN = masked.
    virtual double cellValue(int row, int col) const = 0;
    virtual bool wantsSquareCells() const = 0;
    /// The colour map for the theme (NaN colour included).
    virtual QCPColorGradient gradient(bool dark) const = 0;
    /// The title over cells and colour bar (hidden when empty), wrapped to the plot's width by fitCells.
    void setTitle(const QString& text);
    /// Redraws after the data changed: empty state, cells, colour map, full view. Subclass constructors
    /// call it once at their end (the base cannot: it needs the subclass' virtuals).
    void dataChanged();
    /// Replot now (true) or on the next event-loop pass (false, the default: hidden export-only views
    /// never render on screen).
    void setImmediateReplot(bool on) { immediateReplot_ = on; }
    void replot();

    LayoutablePlot* plot_;
    HeatmapPlotParts parts_;
    QSharedPointer<TokenAxisTicker> xTicker_, yTicker_;

private:
    void fillCells();
    void applyTheme(bool dark);
    bool eventFilter(QObject* watched, QEvent* event) override;

    QString title_;
    EmptyState* empty_;
    FigureActions* actions_;
    int oversampling_ = 1;
    bool fitQueued_ = false;
    bool immediateReplot_ = false;
};

} // namespace attnscope
