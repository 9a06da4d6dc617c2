#pragma once
// Checks on rendered images (exports, screenshots): a picture with real content has many colours.
// Header-only: the support library does not link Qt Gui.

#include <QImage>
#include <QSet>

namespace attnscope::test {

/// Distinct colours on a grid of every `step`-th pixel.
inline int distinctColours(const QImage& img, int step = 3) {
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += step)
        for (int x = 0; x < img.width(); x += step) colours.insert(img.pixel(x, y));
    return int(colours.size());
}

} // namespace attnscope::test
