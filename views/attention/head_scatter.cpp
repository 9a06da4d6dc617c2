#include "views/attention/head_scatter.h"

#include "views/figures/chart_figure.h"
#include "views/figures/palettes.h"

#include <cmath>

namespace attnscope {

HeadScatter::HeadScatter(QWidget* parent)
    : PointScatter(QStringLiteral("head_metrics_scatter"), tr("Run a prompt: every head is placed by the two head metrics chosen above."),
                   parent) {
    setMinimumHeight(200);
    ring_ = addRing();
    figure_->setValues([this] {
        ValueTable t;
        t.colLabels = {tr("head"), headMetricKey(xMetric_), headMetricKey(yMetric_)};
        for (int i = 0; i < pointCount(); ++i)
            t.cells.push_back({QStringLiteral("L%1H%2").arg(heads_[size_t(i)].first).arg(heads_[size_t(i)].second),
                               exactNumber(x_[size_t(i)]), exactNumber(y_[size_t(i)])});
        return t;
    });
}

QCPGraph* HeadScatter::addRing() {
    QCPGraph* ring = addGraph();
    ring->setName(tr("selected head"));
    ring->setLineStyle(QCPGraph::lsNone);
    ring->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(QColor(214, 39, 40), 2), Qt::NoBrush, 14));
    return ring;
}

void HeadScatter::clear() {
    heads_.clear();
    x_.clear();
    y_.clear();
    for (QCPGraph* g : layerGraphs_) removeGraph(g);
    layerGraphs_.clear();
    ring_->data()->clear();
    figure_->setHasData(false);
    replot(QCustomPlot::rpQueuedReplot);
}

void HeadScatter::setMetrics(const HeadMetrics& metrics, HeadMetric x, HeadMetric y) {
    const std::pair<int, int> selected{ringLayer_, ringHead_};
    clear();
    xMetric_ = x;
    yMetric_ = y;
    xAxis->setLabel(headMetricKey(x));
    yAxis->setLabel(headMetricKey(y));
    const int L = metrics.nLayers();
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int l = 0; l < L; ++l) {
        QCPGraph* g = addGraph();
        g->setName(tr("layer %1").arg(l));
        g->setLineStyle(QCPGraph::lsNone);
        const QColor c = sequentialColor(L > 1 ? 0.1 + 0.8 * l / (L - 1) : 0.5);
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, c, c, 7));
        layerGraphs_.push_back(g);
        for (int h = 0; h < metrics.nHeads(); ++h) {
            const double vx = metrics[x](l, h), vy = metrics[y](l, h);
            if (!std::isfinite(vx) || !std::isfinite(vy)) continue;
            heads_.emplace_back(l, h);
            x_.push_back(vx);
            y_.push_back(vy);
            g->addData(vx, vy);
            x0 = std::min(x0, vx), x1 = std::max(x1, vx), y0 = std::min(y0, vy), y1 = std::max(y1, vy);
        }
    }
    removeGraph(ring_);
    ring_ = addRing(); // added last: drawn over the layers' points
    if (heads_.empty()) return;
    const double px = std::max(1e-6, 0.06 * (x1 - x0)), py = std::max(1e-6, 0.06 * (y1 - y0));
    figure_->setHasData(true);
    figure_->setHomeRanges(QCPRange(x0 - px, x1 + px), QCPRange(y0 - py, y1 + py));
    figure_->restyle();
    setSelectedHead(selected.first, selected.second);
}

void HeadScatter::setSelectedHead(int layer, int head) {
    ringLayer_ = layer;
    ringHead_ = head;
    ring_->data()->clear();
    for (int i = 0; i < pointCount(); ++i)
        if (heads_[size_t(i)] == std::pair{layer, head}) ring_->addData(x_[size_t(i)], y_[size_t(i)]);
    replot(QCustomPlot::rpQueuedReplot);
}

QString HeadScatter::describePoint(int point) const {
    return tr("L%1H%2: %3 %4, %5 %6")
        .arg(heads_[size_t(point)].first)
        .arg(heads_[size_t(point)].second)
        .arg(headMetricKey(xMetric_))
        .arg(x_[size_t(point)], 0, 'g', 4)
        .arg(headMetricKey(yMetric_))
        .arg(y_[size_t(point)], 0, 'g', 4);
}

} // namespace attnscope
