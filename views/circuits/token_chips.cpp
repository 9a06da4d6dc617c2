#include "views/circuits/token_chips.h"

#include "views/figures/figure_actions.h"
#include "views/figures/palettes.h"

#include <QPainter>
#include <qcustomplot.h>
#include <cmath>

namespace attnscope {

namespace {
constexpr double kMargin = 10, kSpacing = 6, kPadX = 8, kPadY = 4;
} // namespace

TokenChips::TokenChips(QWidget* parent) : PaintedFigure(parent) {
    QSizePolicy policy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
    new FigureActions(this, this, QStringLiteral("saliency"));
}

void TokenChips::setChips(const QString& title, const QStringList& tokens, const std::vector<double>& values) {
    title_ = title;
    tokens_ = tokens;
    values_ = values;
    maxAbs_ = 0;
    for (double v : values_)
        if (std::isfinite(v)) maxAbs_ = std::max(maxAbs_, std::abs(v));
    updateGeometry();
    update();
}

void TokenChips::setEmptyText(const QString& text) {
    empty_ = text;
    update();
}

QColor TokenChips::chipColor(double value, double maxAbs) {
    if (!std::isfinite(value)) return maskedCellColor(false);
    const double t = maxAbs > 0 ? std::clamp(value / maxAbs, -1.0, 1.0) : 0.0;
    return redBlueGradient().color(t, QCPRange(-1, 1));
}

std::vector<QRectF> TokenChips::layoutChips(double width, double* height) const {
    const QFontMetricsF fm(font());
    double x = kMargin, y = kMargin + (title_.isEmpty() ? 0 : fm.height() + kSpacing);
    const double h = 2 * fm.height() + 2 * kPadY;
    std::vector<QRectF> rects;
    for (int i = 0; i < tokens_.size(); ++i) {
        const QString value = QString::number(values_[size_t(i)], 'g', 3);
        const double w = std::max(fm.horizontalAdvance(tokens_[i]), fm.horizontalAdvance(value)) + 2 * kPadX;
        if (x > kMargin && x + w > width - kMargin) {
            x = kMargin;
            y += h + kSpacing;
        }
        rects.emplace_back(x, y, w, h);
        x += w + kSpacing;
    }
    if (height) *height = (rects.empty() ? y : y + h) + kMargin;
    return rects;
}

int TokenChips::heightForWidth(int width) const {
    double h = 0;
    layoutChips(width, &h);
    return int(std::ceil(std::max(h, 80.0)));
}

QSize TokenChips::sizeHint() const { return {600, heightForWidth(600)}; }

QSize TokenChips::figureSize() const {
    const int w = std::max(width(), 200);
    return {w, std::max(height(), heightForWidth(w))};
}

QRectF TokenChips::chipRect(int index) const {
    const std::vector<QRectF> r = layoutChips(width(), nullptr);
    return index >= 0 && size_t(index) < r.size() ? r[size_t(index)] : QRectF();
}

int TokenChips::chipAt(const QPointF& pos) const {
    const std::vector<QRectF> r = layoutChips(width(), nullptr);
    for (size_t i = 0; i < r.size(); ++i)
        if (r[i].contains(pos)) return int(i);
    return -1;
}

QString TokenChips::describeChip(int index) const {
    return tr("position %1 %2: %3").arg(index).arg(tokens_.value(index)).arg(values_[size_t(index)], 0, 'g', 6);
}

void TokenChips::paintContent(QPainter& p, QSizeF size, const QPalette& palette) const {
    p.setRenderHint(QPainter::Antialiasing);
    p.setFont(font());
    const QFontMetricsF fm(font());
    if (values_.empty()) {
        p.setPen(palette.color(QPalette::PlaceholderText));
        p.drawText(QRectF(QPointF(0, 0), size), Qt::AlignCenter | Qt::TextWordWrap, empty_);
        return;
    }
    if (!title_.isEmpty()) {
        QFont bold = font();
        bold.setBold(true);
        p.setFont(bold);
        p.setPen(palette.color(QPalette::WindowText));
        p.drawText(QRectF(kMargin, kMargin, size.width() - 2 * kMargin, fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
                   QFontMetricsF(bold).elidedText(title_, Qt::ElideRight, size.width() - 2 * kMargin));
        p.setFont(font());
    }
    const std::vector<QRectF> rects = layoutChips(size.width(), nullptr);
    for (size_t i = 0; i < rects.size(); ++i) {
        const QColor fill = chipColor(values_[i], maxAbs_);
        p.setPen(QPen(palette.color(QPalette::Mid), 1));
        p.setBrush(fill);
        p.drawRoundedRect(rects[i], 4, 4);
        p.setPen(fill.lightnessF() < 0.5 ? QColor(Qt::white) : QColor(Qt::black)); // readable on the darkest fills
        const QRectF inner = rects[i].adjusted(kPadX, kPadY, -kPadX, -kPadY);
        p.drawText(QRectF(inner.left(), inner.top(), inner.width(), fm.height()), Qt::AlignCenter, tokens_[int(i)]);
        p.drawText(QRectF(inner.left(), inner.top() + fm.height(), inner.width(), fm.height()), Qt::AlignCenter,
                   QString::number(values_[i], 'g', 3));
    }
}

ValueTable TokenChips::figureValues() const {
    ValueTable t;
    t.colLabels = {tr("position"), tr("token"), tr("attribution")};
    for (int i = 0; i < tokens_.size(); ++i) t.cells.push_back({QString::number(i), tokens_[i], exactNumber(values_[size_t(i)])});
    return t;
}

QString TokenChips::toolTipAt(const QPointF& pos) const {
    const int i = chipAt(pos);
    return i < 0 ? QString() : describeChip(i);
}

} // namespace attnscope
