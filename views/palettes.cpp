#include "views/palettes.h"

#include <cmath>
#include <initializer_list>
#include <utility>

namespace attnscope {
namespace {

/// Evenly spaced stops from a list of "#rrggbb" colours.
QCPColorGradient gradientFromStops(std::initializer_list<const char*> hex) {
    QCPColorGradient g;
    g.clearColorStops();
    const int n = int(hex.size());
    int i = 0;
    for (const char* c : hex) g.setColorStopAt(double(i++) / double(n - 1), QColor(QLatin1String(c)));
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    g.setLevelCount(350); // QCustomPlot's maximum useful resolution; smooth for 8-bit output
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(maskedCellColor());
    return g;
}

} // namespace

QColor maskedCellColor() { return QColor(0xdd, 0xdd, 0xdd); }

QCPColorGradient viridisGradient() {
    return gradientFromStops({"#440154", "#472d7b", "#3b528b", "#2c728e", "#21908c", "#27ad81", "#5dc863",
                              "#aadc32", "#fde725"});
}

QCPColorGradient divergingGradient() {
    return gradientFromStops({"#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7", "#f4a582",
                              "#d6604d", "#b2182b"});
}

QCPRange symmetricRange(double maxAbs, double minimum) {
    const double m = std::isfinite(maxAbs) ? std::max(std::abs(maxAbs), minimum) : minimum;
    return QCPRange(-m, m);
}

} // namespace attnscope
