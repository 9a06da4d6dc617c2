#include "views/figures/point_scatter.h"

#include "views/figures/chart_figure.h"

namespace attnscope {

PointScatter::PointScatter(const QString& figureName, const QString& emptyText, QWidget* parent) : QCustomPlot(parent) {
    figure_ = new ChartFigure(this, figureName, emptyText);
    figure_->setTooltip([this](const QPoint& p) {
        const int i = pointAt(p);
        return i < 0 ? QString() : describePoint(i);
    });
    connect(this, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
        if (e->button() == Qt::LeftButton) clickAt(e->position());
    });
}

QPointF PointScatter::pointPixel(int point) const {
    return {xAxis->coordToPixel(x_[size_t(point)]), yAxis->coordToPixel(y_[size_t(point)])};
}

int PointScatter::pointAt(const QPointF& pixel) const {
    int best = -1;
    double bestD = 8 * 8;
    for (int i = 0; i < pointCount(); ++i) {
        const QPointF d = pointPixel(i) - pixel;
        if (const double dd = QPointF::dotProduct(d, d); dd <= bestD) {
            bestD = dd;
            best = i;
        }
    }
    return best;
}

void PointScatter::clickAt(const QPointF& pixel) {
    if (const int i = pointAt(pixel); i >= 0) pointClickedAt(i);
}

} // namespace attnscope
