#include "views/figures/palettes.h"

#include "views/figures/appearance.h"

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
    g.setNanColor(maskedCellColor(false));
    return g;
}

QCPColorGradient withNanColor(QCPColorGradient g, bool dark) {
    g.setNanColor(maskedCellColor(dark));
    return g;
}

bool colorBlindSafe() { return Appearance::instance().colorMaps() == Appearance::ColorMaps::ColorBlindSafe; }

} // namespace

QColor maskedCellColor(bool dark) { return dark ? QColor(0x4a, 0x4a, 0x4a) : QColor(0xdd, 0xdd, 0xdd); }

QColor maskedCellColor() { return maskedCellColor(Appearance::instance().isDark()); }

QCPColorGradient viridisGradient() {
    return gradientFromStops({"#440154", "#472d7b", "#3b528b", "#2c728e", "#21908c", "#27ad81", "#5dc863",
                              "#aadc32", "#fde725"});
}

QCPColorGradient cividisGradient() {
    return gradientFromStops({"#00224e", "#35456c", "#666970", "#948e77", "#c8b866", "#fee838"});
}

QCPColorGradient redBlueGradient() {
    return gradientFromStops({"#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7", "#f4a582",
                              "#d6604d", "#b2182b"});
}

QCPColorGradient blueOrangeGradient() {
    return gradientFromStops({"#08519c", "#3182bd", "#6baed6", "#c6dbef", "#f7f7f7", "#fdd0a2", "#fd8d3c",
                              "#e6550d", "#a63603"});
}

QCPColorGradient sequentialGradient(bool dark) {
    return withNanColor(colorBlindSafe() ? cividisGradient() : viridisGradient(), dark);
}

QCPColorGradient sequentialGradient() { return sequentialGradient(Appearance::instance().isDark()); }

QCPColorGradient divergingGradient(bool dark) {
    return withNanColor(colorBlindSafe() ? blueOrangeGradient() : redBlueGradient(), dark);
}

QCPColorGradient divergingGradient() { return divergingGradient(Appearance::instance().isDark()); }

QString sequentialMapName() { return colorBlindSafe() ? QStringLiteral("cividis") : QStringLiteral("viridis"); }

QString divergingMapName() { return colorBlindSafe() ? QStringLiteral("blue–orange") : QStringLiteral("red–blue"); }

QColor sequentialColor(double t) {
    // color() fills the gradient's lookup table on first use: one per map, rebuilt when the choice changes
    static QCPColorGradient viridis = viridisGradient(), cividis = cividisGradient();
    QCPColorGradient& g = colorBlindSafe() ? cividis : viridis;
    return QColor::fromRgb(g.color(std::clamp(t, 0.0, 1.0), QCPRange(0.0, 1.0)));
}

QCPRange symmetricRange(double maxAbs, double minimum) {
    const double m = std::isfinite(maxAbs) ? std::max(std::abs(maxAbs), minimum) : minimum;
    return QCPRange(-m, m);
}

} // namespace attnscope
