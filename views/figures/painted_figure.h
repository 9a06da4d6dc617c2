#pragma once
// A figure drawn with QPainter on a plain widget (token chips, the edge-attribution graph): the widget paints
// paintContent() in its own palette, exports draw it in the light (print) theme, and hover shows toolTipAt()'s
// text. Subclasses implement paintContent, toolTipAt and the rest of Figure (data, title, values).

#include "views/figures/figure.h"

#include <QWidget>

namespace attnscope {

class PaintedFigure : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit PaintedFigure(QWidget* parent = nullptr);

    // Figure
    /// The widget's size (its size hint before it is laid out).
    QSize figureSize() const override;
    /// paintContent over the light theme's base colour.
    void paintFigure(QCPPainter& painter, QSize size, bool vector) override;

protected:
    /// Draws the figure over (0, 0, size) with `palette`'s colours (the background is already filled).
    virtual void paintContent(QPainter& p, QSizeF size, const QPalette& palette) const = 0;
    /// The tooltip at a widget position ("" = none).
    virtual QString toolTipAt(const QPointF& pos) const = 0;

    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;
};

} // namespace attnscope
