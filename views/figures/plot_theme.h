#pragma once
// Theme colours and device pixel ratio of QCustomPlot figures: background, axes, tick labels, grid, titles and legends, for
// the light theme (also used for every export: files and copied images are drawn light, like print) and
// the dark one. Plots built with explicit black pens are restyled by applyPlotColors.

#include <QColor>

class QCustomPlot;

namespace attnscope {

struct PlotColors {
    QColor background; ///< plot and legend background
    QColor foreground; ///< axis lines, ticks, labels, titles, legend text
    QColor grid;       ///< grid lines, legend border
    QColor subGrid;
};

/// The colours of the light (dark = false) or dark theme.
PlotColors plotColors(bool dark);

/// Sets the plot's buffer device pixel ratio to its screen's when they differ (crisp on high-DPI
/// screens, also after the window moved to a screen of another scale) and queues a replot. Call on paint.
void syncDevicePixelRatio(QCustomPlot* plot);

/// Restyles every axis rect, axis, colour scale, text element and the legend of `plot`; does not replot.
void applyPlotColors(QCustomPlot* plot, const PlotColors& colors);

} // namespace attnscope
