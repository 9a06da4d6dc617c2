#include "views/figures/figure_export.h"

#include "model/core/errors.h"
#include "views/figures/figure.h"
#include "views/figures/matrix_heatmap.h"
#include "views/figures/plot_render.h"

#include <qcustomplot.h>

#include <QDir>
#include <QFileInfo>
#include <cmath>

namespace attnscope {
namespace {

/// Exports `data` drawn by a hidden View (never shown): the View's InputError becomes the file's error.
template <typename View, typename Data>
bool exportThroughHiddenView(void (View::*set)(const Data&), const Data& data, const QString& filePath,
                             ImageFormat format, QSize size, double scale, QString* error) {
    View view;
    try {
        (view.*set)(data);
    } catch (const InputError& e) {
        return failWith(error, filePath, e.message());
    }
    return exportFigure(view, filePath, format, size, scale, error);
}

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

bool exportFigure(Figure& figure, const QString& filePath, ImageFormat format, QSize size, double scale,
                  QString* error) {
    if (!figure.hasFigureData()) return failWith(error, filePath, QObject::tr("nothing to export yet"));
    if (!size.isValid()) size = figure.figureSize(); // QSize(): the on-screen size
    const bool vector = format != ImageFormat::Png;
    return renderFigure(filePath, format, size, scale, figure.figureTitle(),
                        QStringLiteral("Figure exported by AttnScope"),
                        [&](QCPPainter& painter) { figure.paintFigure(painter, size, vector); }, error);
}

bool exportFigure(Figure& figure, const QString& filePath, QSize size, double scale, QString* error) {
    const QString suffix = QFileInfo(filePath).suffix();
    if (suffix.compare(QLatin1String("csv"), Qt::CaseInsensitive) == 0) {
        if (!figure.hasFigureData()) return failWith(error, filePath, QObject::tr("nothing to export yet"));
        return figure.figureValues().writeCsv(filePath, error);
    }
    const std::optional<ImageFormat> format = suffix.isEmpty() ? std::nullopt : imageFormatFromName(suffix);
    if (!format) return failWith(error, filePath, QObject::tr("unknown format (use .png, .svg, .pdf or .csv)"));
    return exportFigure(figure, filePath, *format, size, scale, error);
}

QImage figureImage(Figure& figure, QSize size, double scale) {
    if (!figure.hasFigureData()) return {};
    if (!size.isValid()) size = figure.figureSize(); // QSize(): the on-screen size
    if (!validateFigureArgs(QString(), size, scale, nullptr)) return {};
    return renderFigureImage(size, scale, [&](QCPPainter& painter) { figure.paintFigure(painter, size, false); });
}

bool exportHeatmap(AttentionHeatmap& view, const QString& filePath, ImageFormat format, QSize size, double scale,
                   QString* error) {
    return exportFigure(view, filePath, format, size, scale, error);
}

bool exportHeatmap(const AttentionHeatmapData& data, const QString& filePath, ImageFormat format, QSize size,
                   double scale, QString* error) {
    return exportThroughHiddenView(&AttentionHeatmap::setData, data, filePath, format, size, scale, error);
}

bool exportMatrixHeatmap(MatrixHeatmap& view, const QString& filePath, ImageFormat format, QSize size,
                         double scale, QString* error) {
    return exportFigure(view, filePath, format, size, scale, error);
}

bool exportMatrixFigure(const MatrixFigure& figure, const QString& filePath, ImageFormat format, QSize size,
                        double scale, QString* error) {
    return exportThroughHiddenView(&MatrixHeatmap::setFigure, figure, filePath, format, size, scale, error);
}

QString heatmapTitle(const QString& modelName, int layer, int head, int kvHead) {
    if (kvHead >= 0) return QStringLiteral("%1 — layer %2, head %3 (K/V head %4)").arg(modelName).arg(layer).arg(head).arg(kvHead);
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
