#include "views/figures/painted_figure.h"

#include "views/figures/appearance.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>
#include <qcustomplot.h>

namespace attnscope {

PaintedFigure::PaintedFigure(QWidget* parent) : QWidget(parent) { setMouseTracking(true); }

QSize PaintedFigure::figureSize() const { return size().isEmpty() ? sizeHint() : size(); }

void PaintedFigure::paintFigure(QCPPainter& painter, QSize size, bool) {
    const QPalette light = Appearance::lightPalette();
    painter.fillRect(QRect(QPoint(0, 0), size), light.color(QPalette::Base));
    paintContent(painter, size, light);
}

void PaintedFigure::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Base));
    paintContent(p, size(), palette());
}

bool PaintedFigure::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(e);
        if (const QString text = toolTipAt(help->pos()); !text.isEmpty()) QToolTip::showText(help->globalPos(), text, this);
        else QToolTip::hideText();
        return true;
    }
    return QWidget::event(e);
}

} // namespace attnscope
