#pragma once
// Drawing a figure into PNG, SVG or PDF files or into an image: the one renderer behind every export
// (exportFigure, exportHeatmap, exportMatrixFigure, exportPlot, table figures) and "Copy image".
// Internal to views/.

#include "views/figures/figure_export.h"

#include <QImage>
#include <functional>

class QCPPainter;

namespace attnscope {

/// Draws a figure of the given logical size with a painter.
using FigurePainter = std::function<void(QCPPainter& painter)>;

/// Checks figure size (1–20000 px per side), scale (0, 16] and the total pixel count.
/// Returns false and sets *error ("<file>: <problem>").
bool validateFigureArgs(const QString& path, QSize size, double scale, QString* error);

/// An image of size×scale device pixels (devicePixelRatio = scale) on white, drawn by `draw` at
/// `size` logical pixels. Null when out of memory.
QImage renderFigureImage(QSize size, double scale, const FigurePainter& draw);

/// Writes what `draw` paints at `size` logical pixels. PNG: renderFigureImage. SVG/PDF: a page of
/// `size` at the screen's logical DPI (fonts are measured at it; 96 → 800 px = 8.33 in) with vector text, `title` and `description` as document
/// metadata, `scale` ignored. Returns false and sets *error ("<file>: <problem>") on failure.
bool renderFigure(const QString& path, ImageFormat format, QSize size, double scale, const QString& title,
                  const QString& description, const FigurePainter& draw, QString* error);

/// Sets *error to "<file>: <problem>" (if error is non-null) and returns false.
bool failWith(QString* error, const QString& file, const QString& problem);

} // namespace attnscope
