#include "views/figures/plot_theme.h"

#include <qcustomplot.h>

namespace attnscope {
namespace {

void styleAxis(QCPAxis* axis, const PlotColors& c) {
    axis->setBasePen(QPen(c.foreground, 0));
    axis->setTickPen(QPen(c.foreground, 0));
    axis->setSubTickPen(QPen(c.foreground, 0));
    axis->setLabelColor(c.foreground);
    axis->setTickLabelColor(c.foreground);
    axis->grid()->setPen(QPen(c.grid, 0, Qt::DotLine));
    axis->grid()->setSubGridPen(QPen(c.subGrid, 0, Qt::DotLine));
    axis->grid()->setZeroLinePen(QPen(c.grid, 0));
}

void styleElement(QCPLayoutElement* e, const PlotColors& c) {
    if (!e) return; // an empty cell of a layout grid
    if (auto* rect = qobject_cast<QCPAxisRect*>(e)) {
        rect->setBackground(Qt::NoBrush);
        for (QCPAxis* axis : rect->axes()) styleAxis(axis, c);
    } else if (auto* scale = qobject_cast<QCPColorScale*>(e)) {
        styleAxis(scale->axis(), c);
    } else if (auto* text = qobject_cast<QCPTextElement*>(e)) {
        text->setTextColor(c.foreground);
    } else if (auto* legend = qobject_cast<QCPLegend*>(e)) {
        legend->setBrush(c.background);
        legend->setBorderPen(QPen(c.grid, 0));
        legend->setTextColor(c.foreground);
    }
}

} // namespace

PlotColors plotColors(bool dark) {
    if (dark) return {QColor(0x19, 0x19, 0x19), // the dark palette's base, like the tables
                       QColor(0xe0, 0xe0, 0xe0), QColor(0x5a, 0x5a, 0x5a), QColor(0x3a, 0x3a, 0x3a)};
    return {QColor(Qt::white), QColor(Qt::black), QColor(0xc8, 0xc8, 0xc8), QColor(0xe6, 0xe6, 0xe6)};
}

void syncDevicePixelRatio(QCustomPlot* plot) {
    if (plot->bufferDevicePixelRatio() == plot->devicePixelRatioF()) return;
    plot->setBufferDevicePixelRatio(plot->devicePixelRatioF());
    plot->replot(QCustomPlot::rpQueuedReplot);
}

void applyPlotColors(QCustomPlot* plot, const PlotColors& colors) {
    plot->setBackground(colors.background);
    // recursive: axis rects list their inset layouts (legends) too
    for (QCPLayoutElement* e : plot->plotLayout()->elements(true)) styleElement(e, colors);
    if (plot->legend) styleElement(plot->legend, colors);
}

} // namespace attnscope
