#pragma once
// Figures to files, without a visible window (works under QT_QPA_PLATFORM=offscreen as long as a
// QApplication exists): exportFigure writes any Figure (heatmaps, charts, tables, diagrams) as PNG, SVG,
// PDF or CSV; the heatmap functions below are what the headless CLI and the main window call.
// Files are always drawn in the light (print) theme.

#include "model/core/progress.h"
#include "views/attention/attention_heatmap.h"

#include <QImage>
#include <QSize>
#include <QString>
#include <functional>
#include <optional>

namespace attnscope {

class Figure;

enum class ImageFormat { Png, Svg, Pdf };

/// "png", "svg" or "pdf".
QString imageFormatSuffix(ImageFormat format);
/// Format named by a file suffix or a format name (case-insensitive); nullopt if unknown.
std::optional<ImageFormat> imageFormatFromName(const QString& suffixOrPath);

/// Writes `figure` to `filePath`, the format chosen by the suffix: .png (size×scale pixels), .svg/.pdf
/// (vector, `size` at the screen's logical DPI) or .csv (figureValues(), exact numbers). An empty `size`
/// means figureSize(). Returns false and sets *error ("<file>: <problem>") when there is nothing to
/// export, the suffix is unknown, the arguments are invalid or the file cannot be written. GUI thread.
bool exportFigure(Figure& figure, const QString& filePath, QSize size, double scale, QString* error);
/// The same in a given image format, whatever the suffix.
bool exportFigure(Figure& figure, const QString& filePath, ImageFormat format, QSize size, double scale,
                  QString* error);

/// The figure as an image of size×scale pixels (devicePixelRatio = scale; empty size = figureSize()),
/// as "Copy image" puts it on the clipboard. Null when there is nothing to draw.
QImage figureImage(Figure& figure, QSize size, double scale);

/// Renders `data` as a figure (title, token labels on both axes, colour bar, square cells).
/// `size`: figure size in logical pixels (fonts are laid out for it). PNG: the image is
/// size×scale pixels (scale 2 = the same figure at double resolution). SVG/PDF: vector text and
/// frame, cells as an embedded image oversampled for sharp edges; the page is `size` at the
/// screen's logical DPI (96 → 800 px = 8.33 in), `scale` is ignored.
/// Returns false and sets *error ("<file>: <problem>") if the arguments are invalid or the file
/// cannot be written. Must be called on the GUI thread.
bool exportHeatmap(const AttentionHeatmapData& data, const QString& filePath, ImageFormat format, QSize size,
                   double scale, QString* error);

/// Same as above with an existing heatmap widget (the GUI's "export current view"): what it
/// shows, including its zoom, is drawn at `size`. The widget's own layout is restored afterwards.
bool exportHeatmap(AttentionHeatmap& view, const QString& filePath, ImageFormat format, QSize size, double scale,
                   QString* error);

/// "model — layer L, head H", with "(K/V head G)" when kvHead ≥ 0 (grouped-query attention: the K/V head the
/// query head reads).
QString heatmapTitle(const QString& modelName, int layer, int head, int kvHead = -1);

/// File name used by exportAllHeads: "L{layer}_H{head}.{suffix}", e.g. "L0_H11.png".
QString headFileName(int layer, int head, ImageFormat format);

/// Writes one figure per head, `dir`/L{layer}_H{head}.{ext}, for layers 0..nLayers-1 and heads
/// 0..nHeads-1 (layer-major), creating `dir` if needed. `dataFor(layer, head)` produces each
/// figure. Reports progress per file; throws Cancelled when progress is cancelled (files already
/// written stay), InputError naming the file when one cannot be written or the folder created.
/// Returns the written paths in order.
QStringList exportAllHeads(int nLayers, int nHeads,
                           const std::function<AttentionHeatmapData(int layer, int head)>& dataFor,
                           const QString& dir, ImageFormat format, QSize size, double scale,
                           const Progress& progress = {});

} // namespace attnscope
