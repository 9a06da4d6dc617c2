#include "views/plot_render.h"

#include <qcustomplot.h>

#include <QFileInfo>
#include <QImage>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <cmath>
#include <memory>

namespace attnscope {
namespace {

constexpr int kMaxSide = 20000;         // logical pixels per side
constexpr double kMaxPixels = 268435456; // 2^28 output pixels (1 GiB of ARGB)

bool renderPng(QCustomPlot* plot, const QString& path, QSize size, double scale, QString* error) {
    const QSize px(int(std::lround(size.width() * scale)), int(std::lround(size.height() * scale)));
    QImage image(px, QImage::Format_ARGB32_Premultiplied);
    if (image.isNull())
        return failWith(error, path, QObject::tr("out of memory for a %1×%2 image").arg(px.width()).arg(px.height()));
    image.fill(Qt::white);
    QCPPainter painter(&image);
    painter.setMode(QCPPainter::pmNoCaching);
    if (scale > 1.0) painter.setMode(QCPPainter::pmNonCosmetic);
    painter.scale(scale, scale);
    plot->toPainter(&painter, size.width(), size.height());
    painter.end();
    if (!image.save(path, "PNG"))
        return failWith(error, path, QObject::tr("cannot write PNG (folder missing or not writable?)"));
    return true;
}

bool renderVector(QCustomPlot* plot, const QString& path, ImageFormat format, QSize size, const QString& title,
                  const QString& description, QString* error) {
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
        svg->setDescription(description);
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
        return failWith(error, path, QObject::tr("cannot write %1 (folder missing or not writable?)")
                                         .arg(imageFormatSuffix(format).toUpper()));
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    // The PDF page is a whole number of points; stretch by the rounding difference.
    painter.scale(double(device->width()) / size.width(), double(device->height()) / size.height());
    plot->toPainter(&painter, size.width(), size.height());
    painter.end();
    device.reset(); // flush and close the file
    if (QFileInfo(path).size() == 0) return failWith(error, path, QObject::tr("nothing was written"));
    return true;
}

} // namespace

bool failWith(QString* error, const QString& file, const QString& problem) {
    if (error) *error = file + QStringLiteral(": ") + problem;
    return false;
}

bool validateFigureArgs(const QString& path, QSize size, double scale, QString* error) {
    if (size.width() <= 0 || size.height() <= 0 || size.width() > kMaxSide || size.height() > kMaxSide)
        return failWith(error, path, QObject::tr("figure size %1×%2 must be 1–%3 pixels per side")
                                         .arg(size.width()).arg(size.height()).arg(kMaxSide));
    if (!(scale > 0.0 && scale <= 16.0))
        return failWith(error, path, QObject::tr("scale %1 must be in (0, 16]").arg(scale));
    if (double(size.width()) * size.height() * scale * scale > kMaxPixels)
        return failWith(error, path, QObject::tr("%1×%2 at scale %3 is too many pixels")
                                         .arg(size.width()).arg(size.height()).arg(scale));
    return true;
}

bool renderPlot(QCustomPlot* plot, const QString& path, ImageFormat format, QSize size, double scale,
                const QString& title, const QString& description, QString* error) {
    if (format == ImageFormat::Png) return renderPng(plot, path, size, scale, error);
    return renderVector(plot, path, format, size, title, description, error);
}

} // namespace attnscope
