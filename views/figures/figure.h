#pragma once
// What every heatmap, chart, table and diagram offers to the shared figure actions (views/figures/figure_actions.h:
// Copy image, Copy values, Export PNG/SVG/PDF/CSV, Reset zoom) and to the one export path
// (exportFigure in views/figures/figure_export.h). Views implement it next to their QWidget base.

#include "views/figures/value_table.h"

#include <QSize>
#include <QString>

class QCPPainter;

namespace attnscope {

class Figure {
public:
    virtual ~Figure() = default;
    /// False while the view shows its empty state: nothing to copy or export.
    virtual bool hasFigureData() const = 0;
    /// Title for file metadata and suggested file names ("" = none).
    virtual QString figureTitle() const = 0;
    /// Logical size the figure is drawn at when none is asked for: its on-screen size, or the size its
    /// content needs (tables).
    virtual QSize figureSize() const = 0;
    /// Draws the figure in the light (print) theme over (0, 0, size) with `painter` (already scaled for
    /// PNG output). `vector`: SVG/PDF, where embedded images should be oversampled. Restores the view.
    virtual void paintFigure(QCPPainter& painter, QSize size, bool vector) = 0;
    /// The numbers the figure shows, exactly (Copy values, CSV).
    virtual ValueTable figureValues() const = 0;
    /// Whether the figure zooms and pans (wheel, drag); resetZoom() shows all of it again.
    virtual bool isZoomable() const { return false; }
    virtual void resetZoom() {}
};

} // namespace attnscope
