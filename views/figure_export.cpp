#include "views/figure_export.h"

#include "model/core/errors.h"

#include <qcustomplot.h>

#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <cmath>

namespace attnscope {
namespace {

constexpr int kMaxSide = 20000;         // logical pixels per side
constexpr double kMaxPixels = 268435456; // 2^28 output pixels (1 GiB of ARGB)

bool fail(QString* error, const QString& file, const QString& problem) {
    if (error) *error = file + QStringLiteral(": ") + problem;
    return false;
}

/// Cells per side of the embedded image for vector output: at least ~1200 samples across.
int vectorOversampling(int positions) { return positions <= 0 ? 1 : std::clamp(1200 / positions, 1, 64); }

bool renderPng(QCustomPlot* plot, const QString& path, QSize size, double scale, QString* error) {
    const QSize px(int(std::lround(size.width() * scale)), int(std::lround(size.height() * scale)));
    QImage image(px, QImage::Format_ARGB32_Premultiplied);
    if (image.isNull()) return fail(error, path, QObject::tr("out of memory for a %1×%2 image").arg(px.width()).arg(px.height()));
    image.fill(Qt::white);
    QCPPainter painter(&image);
    painter.setMode(QCPPainter::pmNoCaching);
    if (scale > 1.0) painter.setMode(QCPPainter::pmNonCosmetic);
    painter.scale(scale, scale);
    plot->toPainter(&painter, size.width(), size.height());
    painter.end();
    if (!image.save(path, "PNG"))
        return fail(error, path, QObject::tr("cannot write PNG (folder missing or not writable?)"));
    return true;
}

bool renderVector(QCustomPlot* plot, const QString& path, ImageFormat format, QSize size, const QString& title,
                  QString* error) {
    // Lay text out at the DPI the widget's fonts were measured at, so the page matches the screen.
    const int dpi = plot->logicalDpiX();
    QCPPainter painter;
    std::unique_ptr<QPaintDevice> device;
    if (format == ImageFormat::Svg) {
        auto svg = std::make_unique<QSvgGenerator>();
        svg->setFileName(path);
        svg->setSize(size);
        svg->setViewBox(QRect(QPoint(0, 0), size));
        svg->setResolution(dpi);
        svg->setTitle(title);
        svg->setDescription(QStringLiteral("Attention pattern exported by AttnScope"));
        device = std::move(svg);
    } else {
        auto pdf = std::make_unique<QPdfWriter>(path);
        pdf->setResolution(dpi);
        pdf->setPageSize(QPageSize(QSizeF(size) * 72.0 / dpi, QPageSize::Point, QString(), QPageSize::ExactMatch));
        pdf->setPageMargins(QMarginsF(0, 0, 0, 0));
        pdf->setTitle(title);
        pdf->setCreator(QStringLiteral("AttnScope"));
        device = std::move(pdf);
    }
    if (!painter.begin(device.get()))
        return fail(error, path, QObject::tr("cannot write %1 (folder missing or not writable?)")
                                     .arg(imageFormatSuffix(format).toUpper()));
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    // The PDF page is a whole number of points; stretch by the rounding difference.
    painter.scale(double(device->width()) / size.width(), double(device->height()) / size.height());
    plot->toPainter(&painter, size.width(), size.height());
    painter.end();
    device.reset(); // flush and close the file
    if (QFileInfo(path).size() == 0) return fail(error, path, QObject::tr("nothing was written"));
    return true;
}

bool validate(const QString& path, QSize size, double scale, QString* error) {
    if (size.width() <= 0 || size.height() <= 0 || size.width() > kMaxSide || size.height() > kMaxSide)
        return fail(error, path, QObject::tr("figure size %1×%2 must be 1–%3 pixels per side")
                                     .arg(size.width()).arg(size.height()).arg(kMaxSide));
    if (!(scale > 0.0 && scale <= 16.0))
        return fail(error, path, QObject::tr("scale %1 must be in (0, 16]").arg(scale));
    if (double(size.width()) * size.height() * scale * scale > kMaxPixels)
        return fail(error, path, QObject::tr("%1×%2 at scale %3 is too many pixels").arg(size.width()).arg(size.height()).arg(scale));
    return true;
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

bool exportHeatmap(AttentionHeatmap& view, const QString& filePath, ImageFormat format, QSize size, double scale,
                   QString* error) {
    if (!validate(filePath, size, scale, error)) return false;
    QCustomPlot* plot = view.plot();
    const QRect oldViewport = plot->viewport();
    plot->setViewport(QRect(QPoint(0, 0), size));
    view.fitSquareCells();
    bool ok;
    if (format == ImageFormat::Png) {
        ok = renderPng(plot, filePath, size, scale, error);
    } else {
        view.setCellOversampling(vectorOversampling(view.positions()));
        ok = renderVector(plot, filePath, format, size, view.title(), error);
        view.setCellOversampling(1);
    }
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
        return fail(error, filePath, e.message());
    }
    return exportHeatmap(view, filePath, format, size, scale, error);
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
