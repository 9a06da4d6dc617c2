#include "views/figures/plot_render.h"

#include <qcustomplot.h>

#include <QFileInfo>
#include <QGuiApplication>
#include <QPdfWriter>
#include <QScreen>
#include <QSvgGenerator>
#include <cmath>
#include <memory>

namespace attnscope {
namespace {

constexpr int kMaxSide = 20000;         // logical pixels per side
constexpr double kMaxPixels = 268435456; // 2^28 output pixels (1 GiB of ARGB)

/// The DPI the widgets' fonts are laid out at, so that a vector page matches the screen.
int logicalDpi() {
    const QScreen* screen = QGuiApplication::primaryScreen();
    return screen ? int(std::lround(screen->logicalDotsPerInchX())) : 96;
}

bool renderVector(const QString& path, ImageFormat format, QSize size, const QString& title,
                  const QString& description, const FigurePainter& draw, QString* error) {
    const int dpi = logicalDpi();
    std::unique_ptr<QPaintDevice> device;
    if (format == ImageFormat::Svg) {
        auto svg = std::make_unique<QSvgGenerator>();
        svg->setFileName(path);
        svg->setSize(size);
        svg->setViewBox(QRect(QPoint(0, 0), size));
        svg->setResolution(dpi);
        // Qt 6.4's QSvgGenerator writes <title>/<desc> verbatim (a "<" or "&" makes the file invalid XML).
        svg->setTitle(title.toHtmlEscaped());
        svg->setDescription(description.toHtmlEscaped());
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
    QCPPainter painter;
    if (!painter.begin(device.get()))
        return failWith(error, path, QObject::tr("cannot write %1 (folder missing or not writable?)")
                                         .arg(imageFormatSuffix(format).toUpper()));
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    // The PDF page is a whole number of points; stretch by the rounding difference.
    painter.scale(double(device->width()) / size.width(), double(device->height()) / size.height());
    draw(painter);
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

QImage renderFigureImage(QSize size, double scale, const FigurePainter& draw) {
    const QSize px(int(std::lround(size.width() * scale)), int(std::lround(size.height() * scale)));
    QImage image(px, QImage::Format_ARGB32_Premultiplied);
    if (image.isNull()) return image;
    image.fill(Qt::white);
    QCPPainter painter(&image);
    painter.setRenderHint(QPainter::TextAntialiasing);
    painter.setMode(QCPPainter::pmNoCaching);
    if (scale > 1.0) painter.setMode(QCPPainter::pmNonCosmetic);
    painter.scale(scale, scale);
    draw(painter);
    painter.end();
    image.setDevicePixelRatio(scale); // pasted at its logical size, crisp on high-DPI screens
    return image;
}

bool renderFigure(const QString& path, ImageFormat format, QSize size, double scale, const QString& title,
                  const QString& description, const FigurePainter& draw, QString* error) {
    if (!validateFigureArgs(path, size, scale, error)) return false;
    if (format != ImageFormat::Png) return renderVector(path, format, size, title, description, draw, error);
    QImage image = renderFigureImage(size, scale, draw);
    if (image.isNull())
        return failWith(error, path, QObject::tr("out of memory for a %1×%2 image")
                                         .arg(std::lround(size.width() * scale)).arg(std::lround(size.height() * scale)));
    image.setDevicePixelRatio(1.0); // no DPI metadata: the file is its pixels
    if (!image.save(path, "PNG"))
        return failWith(error, path, QObject::tr("cannot write PNG (folder missing or not writable?)"));
    return true;
}

} // namespace attnscope
