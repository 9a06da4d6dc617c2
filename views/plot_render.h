#pragma once
// Drawing a laid-out QCustomPlot into PNG, SVG or PDF files: the one renderer behind exportHeatmap,
// exportMatrixFigure and exportPlot. Internal to views/.

#include "views/figure_export.h"

class QCustomPlot;

namespace attnscope {

/// Checks figure size (1–20000 px per side), scale (0, 16] and the total pixel count.
/// Returns false and sets *error ("<file>: <problem>").
bool validateFigureArgs(const QString& path, QSize size, double scale, QString* error);

/// Draws `plot` at `size` logical pixels. PNG: size×scale pixels on white. SVG/PDF: a page of `size`
/// at the plot's logical DPI with vector text, `title` and `description` as document metadata.
/// Returns false and sets *error ("<file>: <problem>") when the file cannot be written.
bool renderPlot(QCustomPlot* plot, const QString& path, ImageFormat format, QSize size, double scale,
                const QString& title, const QString& description, QString* error);

/// Sets *error to "<file>: <problem>" (if error is non-null) and returns false.
bool failWith(QString* error, const QString& file, const QString& problem);

} // namespace attnscope
