#include "views/attention/block_diagram.h"

#include "views/figures/appearance.h"
#include "views/figures/figure_actions.h"

#include <qcustomplot.h>

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>

namespace attnscope {
namespace {

constexpr double kArrow = 14; // horizontal gap between boxes, holding the arrow
constexpr double kMargin = 4;

} // namespace

BlockDiagram::BlockDiagram(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    setToolTip(tr("One attention block; the current step is highlighted. Click a box to jump to it."));
    new FigureActions(this, this, QStringLiteral("attention_block"));
}

QStringList BlockDiagram::boxLabels(bool rotary) {
    if (rotary)
        return {QStringLiteral("embed"),   QStringLiteral("RMSNorm"), QStringLiteral("Q/K/V"),
                QStringLiteral("RoPE"),    QStringLiteral("scores"),  QStringLiteral("scale"),
                QStringLiteral("mask"),    QStringLiteral("softmax"), QStringLiteral("· V"),
                QStringLiteral("concat"),  QStringLiteral("W_O"),     QStringLiteral("+ resid")};
    return {QStringLiteral("embed"),   QStringLiteral("+ pos"),   QStringLiteral("ln_1"),
            QStringLiteral("Q/K/V"),   QStringLiteral("scores"),  QStringLiteral("scale"),
            QStringLiteral("mask"),    QStringLiteral("softmax"), QStringLiteral("· V"),
            QStringLiteral("concat"),  QStringLiteral("W_O"),     QStringLiteral("+ resid")};
}

int BlockDiagram::boxForStep(const QString& name, bool rotary) {
    if (name == QLatin1String("softcapped")) return boxForStep(QStringLiteral("scaled"), rotary); // Gemma 2: part of scaling
    if (name.startsWith(QLatin1String("head_result_")) || name == QLatin1String("attn_out_additive")) return 10;
    if (name == QLatin1String("q") || name == QLatin1String("k") || name == QLatin1String("v") || name == QLatin1String("q_norm") ||
        name == QLatin1String("k_norm"))
        return rotary ? 2 : 3;
    if (rotary) {
        static const QStringList order{"embed", "ln1", "qkv", "rope", "scores", "scaled",
                                       "masked", "pattern", "z", "concat", "attn_out", "resid_mid"};
        if (name == QLatin1String("pos_embed") || name == QLatin1String("resid_pre")) return 0;
        if (name == QLatin1String("q_rot") || name == QLatin1String("k_rot")) return 3;
        return int(order.indexOf(name));
    }
    static const QStringList order{"embed", "pos_embed", "ln1", "qkv", "scores", "scaled",
                                   "masked", "pattern", "z", "concat", "attn_out", "resid_mid"};
    if (name == QLatin1String("resid_pre")) return 1;
    return int(order.indexOf(name));
}

void BlockDiagram::setRotary(bool rotary) {
    if (rotary == rotary_) return;
    rotary_ = rotary;
    update();
}

void BlockDiagram::setCurrentBox(int index) {
    if (index == current_) return;
    current_ = index;
    update();
}

QRectF BlockDiagram::boxRect(int index) const { return boxRect(index, size()); }

QRectF BlockDiagram::boxRect(int index, QSizeF size) const {
    const int n = int(boxLabels(rotary_).size());
    const double w = (size.width() - 2 * kMargin - (n - 1) * kArrow) / n;
    return QRectF(kMargin + index * (w + kArrow), kMargin, w, size.height() - 2 * kMargin);
}

QSize BlockDiagram::figureSize() const { return size().isEmpty() ? sizeHint() : size(); }

void BlockDiagram::paintFigure(QCPPainter& painter, QSize size, bool) {
    const QPalette light = Appearance::lightPalette();
    painter.fillRect(QRect(QPoint(0, 0), size), light.color(QPalette::Window));
    paintDiagram(painter, size, light);
}

ValueTable BlockDiagram::figureValues() const {
    ValueTable t;
    t.colLabels = QStringList{tr("step"), tr("box"), tr("current")};
    const QStringList labels = boxLabels(rotary_);
    for (int i = 0; i < labels.size(); ++i)
        t.cells.push_back({QString::number(i + 1), labels[i], i == current_ ? QStringLiteral("yes") : QString()});
    return t;
}

QSize BlockDiagram::sizeHint() const { return {900, fontMetrics().height() * 2 + 16}; }

QSize BlockDiagram::minimumSizeHint() const { return {600, fontMetrics().height() * 2 + 16}; }

void BlockDiagram::paintEvent(QPaintEvent*) {
    QPainter p(this);
    paintDiagram(p, size(), palette());
}

void BlockDiagram::paintDiagram(QPainter& p, QSizeF size, const QPalette& palette) const {
    p.setRenderHint(QPainter::Antialiasing);
    const QStringList labels = boxLabels(rotary_);
    const QColor accent = palette.color(QPalette::Highlight);
    for (int i = 0; i < labels.size(); ++i) {
        const QRectF r = boxRect(i, size);
        const bool on = i == current_;
        p.setPen(QPen(on ? accent.darker(130) : palette.color(QPalette::Mid), on ? 2 : 1));
        p.setBrush(on ? accent : palette.color(QPalette::Base));
        p.drawRoundedRect(r, 5, 5);
        QFont f = font();
        f.setBold(on);
        p.setFont(f);
        p.setPen(on ? palette.color(QPalette::HighlightedText) : palette.color(QPalette::Text));
        p.drawText(r, Qt::AlignCenter | Qt::TextWordWrap, labels[i]);
        if (i + 1 < labels.size()) { // arrow to the next box
            const double y = r.center().y(), x0 = r.right() + 2, x1 = r.right() + kArrow - 2;
            p.setPen(QPen(palette.color(QPalette::Text), 1.2));
            p.drawLine(QPointF(x0, y), QPointF(x1, y));
            QPainterPath head;
            head.moveTo(x1, y);
            head.lineTo(x1 - 4, y - 3);
            head.lineTo(x1 - 4, y + 3);
            head.closeSubpath();
            p.fillPath(head, palette.color(QPalette::Text));
        }
    }
}

void BlockDiagram::mousePressEvent(QMouseEvent* event) {
    for (int i = 0; i < boxLabels().size(); ++i)
        if (boxRect(i).contains(event->position())) {
            emit boxClicked(i);
            return;
        }
    QWidget::mousePressEvent(event);
}

} // namespace attnscope
