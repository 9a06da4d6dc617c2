#include "views/figure_export.h"

#include "model/core/errors.h"
#include "views/plot_render.h"

#include <qcustomplot.h>

#include <QDir>
#include <QFileInfo>
#include <cmath>

namespace attnscope {
namespace {

/// Cells per side of the embedded image for vector output: at least ~1200 samples across.
int vectorOversampling(int positions) { return positions <= 0 ? 1 : std::clamp(1200 / positions, 1, 64); }

} // namespace

QString imageFormatSuffix(ImageFormat format) {
    switch (format) {
    case ImageFormat::Png: return QStringLiteral("png");
    case ImageFormat::Svg: return QStringLiteral("svg");
    case ImageFormat::Pdf: return QStringLiteral("pdf");
    }
    return {};
}

std::optional<ImageFormat> imageFormatFromName(const QString& suffixOrPath) {
    const QString s = QFileInfo(suffixOrPath).suffix().isEmpty() ? suffixOrPath.toLower()
                                                                 : QFileInfo(suffixOrPath).suffix().toLower();
    for (ImageFormat f : {ImageFormat::Png, ImageFormat::Svg, ImageFormat::Pdf})
        if (s == imageFormatSuffix(f)) return f;
    return std::nullopt;
}

bool exportHeatmap(AttentionHeatmap& view, const QString& filePath, ImageFormat format, QSize size, double scale,
                   QString* error) {
    if (!validateFigureArgs(filePath, size, scale, error)) return false;
    QCustomPlot* plot = view.plot();
    const QRect oldViewport = plot->viewport();
    plot->setViewport(QRect(QPoint(0, 0), size));
    view.fitSquareCells();
    if (format != ImageFormat::Png) view.setCellOversampling(vectorOversampling(view.positions()));
    const bool ok = renderPlot(plot, filePath, format, size, scale, view.title(),
                               QStringLiteral("Attention pattern exported by AttnScope"), error);
    view.setCellOversampling(1);
    plot->setViewport(oldViewport);
    view.fitSquareCells();
    plot->replot(QCustomPlot::rpQueuedReplot);
    return ok;
}

bool exportHeatmap(const AttentionHeatmapData& data, const QString& filePath, ImageFormat format, QSize size,
                   double scale, QString* error) {
    AttentionHeatmap view; // never shown
    try {
        view.setData(data);
    } catch (const InputError& e) {
        return failWith(error, filePath, e.message());
    }
    return exportHeatmap(view, filePath, format, size, scale, error);
}

QString heatmapTitle(const QString& modelName, int layer, int head) {
    return QStringLiteral("%1 — layer %2, head %3").arg(modelName).arg(layer).arg(head);
}

QString headFileName(int layer, int head, ImageFormat format) {
    return QStringLiteral("L%1_H%2.%3").arg(layer).arg(head).arg(imageFormatSuffix(format));
}

QStringList exportAllHeads(int nLayers, int nHeads,
                           const std::function<AttentionHeatmapData(int layer, int head)>& dataFor,
                           const QString& dir, ImageFormat format, QSize size, double scale,
                           const Progress& progress) {
    if (nLayers < 0 || nHeads < 0) throw InputError(QObject::tr("negative layer or head count"));
    if (!QDir().mkpath(dir)) throw InputError(QObject::tr("%1: cannot create the folder").arg(dir));
    AttentionHeatmap view; // one hidden widget for all figures
    QStringList written;
    const qint64 total = qint64(nLayers) * nHeads;
    for (int layer = 0; layer < nLayers; ++layer)
        for (int head = 0; head < nHeads; ++head) {
            const QString name = headFileName(layer, head, format);
            progress.step(written.size(), total, name);
            const QString path = QDir(dir).filePath(name);
            QString error;
            try {
                view.setData(dataFor(layer, head));
            } catch (const InputError& e) {
                throw InputError(path + QStringLiteral(": ") + e.message());
            }
            if (!exportHeatmap(view, path, format, size, scale, &error)) throw InputError(error);
            written << path;
        }
    progress.step(total, total, QObject::tr("done"));
    return written;
}

} // namespace attnscope
