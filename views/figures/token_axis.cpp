#include "views/figures/token_axis.h"

#include "views/figures/cached_tick_labels.h"

#include <QFontMetrics>
#include <cmath>

namespace attnscope {

int niceLabelStep(double x) {
    if (!(x > 1.0)) return 1;
    for (int decade = 1;; decade *= 10) {
        for (int m : {1, 2, 5})
            if (m * decade >= x) return m * decade;
        if (decade > 100000000) return decade * 10;
    }
}

TokenAxisTicker::TokenAxisTicker(QCPAxis* axis) : axis_(axis) {}

void TokenAxisTicker::setTokens(const QStringList& tokens) {
    if (tokens == tokens_ && !tokens.isEmpty()) return; // same prompt, other head: labels already measured
    tokens_ = tokens;
    if (!axis_) return;
    QStringList labels;
    labels.reserve(tokens_.size());
    for (int p = 0; p < tokens_.size(); ++p) labels << labelFor(p);
    reserveTickLabelSpace(axis_, labels);
}

QString TokenAxisTicker::labelFor(int position) const {
    if (position < 0 || position >= tokens_.size()) return {};
    QString t = tokens_[position];
    if (maxLabelChars_ > 1 && t.size() > maxLabelChars_) t = t.left(maxLabelChars_ - 1) + QChar(0x2026);
    return showIndex_ ? QString::number(position) + QLatin1Char(' ') + t : t;
}

int TokenAxisTicker::labelStep(const QCPRange& range) const {
    if (!axis_) return 1;
    const bool horizontal = axis_->orientation() == Qt::Horizontal;
    const double pixels = horizontal ? axis_->axisRect()->width() : axis_->axisRect()->height();
    if (pixels <= 0) return 1;
    // Along the axis every label takes one line height (x labels are rotated 90°), plus some air.
    const double perLabel = QFontMetricsF(axis_->tickLabelFont()).height() * 1.15;
    return niceLabelStep(range.size() * perLabel / pixels);
}

double TokenAxisTicker::getTickStep(const QCPRange& range) { return labelStep(range); }

int TokenAxisTicker::getSubTickCount(double) { return 0; }

QString TokenAxisTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
    return labelFor(int(std::lround(tick)));
}

QVector<double> TokenAxisTicker::createTickVector(double tickStep, const QCPRange& range) {
    QVector<double> ticks;
    const int step = std::max(1, int(std::lround(tickStep)));
    const int n = int(tokens_.size());
    // Multiples of step, so 0 is always labelled when it is in view.
    int first = int(std::ceil(std::max(range.lower, 0.0) / step)) * step;
    const int last = std::min(n - 1, int(std::floor(range.upper)));
    for (int p = first; p <= last; p += step) ticks.append(p);
    return ticks;
}

QSharedPointer<TokenAxisTicker> setTokenAxis(QCPAxis* axis, const QStringList& tokens, bool showIndex) {
    auto ticker = QSharedPointer<TokenAxisTicker>::create(axis);
    ticker->setShowIndex(showIndex);
    axis->setTicker(ticker);
    installCachedTickLabels(axis); // many distinct labels: measure and shape each token once
    axis->setNumberFormat(QStringLiteral("g")); // no "1·10⁵" for a token spelled "1e5"
    axis->setSubTicks(false);
    axis->grid()->setVisible(false);
    axis->setTickLabelRotation(axis->orientation() == Qt::Horizontal ? -90 : 0);
    ticker->setTokens(tokens); // after font and rotation: reserves room for the widest label
    return ticker;
}

} // namespace attnscope
