#pragma once
// A QCustomPlot chart (bars, lines: the cumulative logit chart) as a Figure: wheel zoom and drag pan on
// its axis rect, Reset zoom (double-click or menu) back to the ranges given by setHomeRanges, hover
// tooltips from a callback, the theme's colours, high-DPI buffers, the shared figure menu and an
// empty-state sentence instead of axes while it has no data.

#include "views/figures/figure.h"

#include <qcustomplot.h>

#include <QObject>
#include <QPointer>
#include <functional>

namespace attnscope {

class EmptyState;
class FigureActions;

class ChartFigure : public QObject, public Figure {
    Q_OBJECT
public:
    /// Attaches to `plot` (a child of it).
    ChartFigure(QCustomPlot* plot, const QString& baseName, const QString& emptyText);

    /// The numbers behind the chart (Copy values, CSV).
    void setValues(std::function<ValueTable()> values) { values_ = std::move(values); }
    /// Tooltip text for a point in plot coordinates ("" = none).
    void setTooltip(std::function<QString(const QPoint&)> tooltip) { tooltip_ = std::move(tooltip); }
    /// The ranges Reset zoom returns to; applies them now.
    void setHomeRanges(const QCPRange& x, const QCPRange& y);
    /// Shows the chart (true) or the empty-state sentence (false).
    void setHasData(bool on);
    bool isShowingEmptyState() const;
    void setEmptyText(const QString& text);
    /// Restyles the plot for the current theme (after new plottables were added) and replots.
    void restyle();
    FigureActions* figureActions() const { return actions_; }
    QCustomPlot* plot() const { return plot_; }

    // Figure
    bool hasFigureData() const override { return hasData_; }
    QString figureTitle() const override;
    QSize figureSize() const override;
    void paintFigure(QCPPainter& painter, QSize size, bool vector) override;
    ValueTable figureValues() const override { return values_ ? values_() : ValueTable(); }
    bool isZoomable() const override { return true; }
    void resetZoom() override;

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QPointer<QCustomPlot> plot_;
    std::function<ValueTable()> values_;
    std::function<QString(const QPoint&)> tooltip_;
    QCPRange homeX_, homeY_;
    bool hasData_ = false;
    EmptyState* empty_;
    FigureActions* actions_;
};

} // namespace attnscope
