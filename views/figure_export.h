#pragma once
// Heatmap figures to image files, without a visible window (works under QT_QPA_PLATFORM=offscreen
// as long as a QApplication exists). Shared by the GUI's export actions and the headless CLI.

#include "model/core/progress.h"
#include "views/attention_heatmap.h"

#include <QSize>
#include <QString>
#include <functional>
#include <optional>

namespace attnscope {

enum class ImageFormat { Png, Svg, Pdf };

/// "png", "svg" or "pdf".
QString imageFormatSuffix(ImageFormat format);
/// Format named by a file suffix or a format name (case-insensitive); nullopt if unknown.
std::optional<ImageFormat> imageFormatFromName(const QString& suffixOrPath);

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
