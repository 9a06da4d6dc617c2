#include "views/circuits/flow_graph_plot.h"

#include "views/figures/chart_figure.h"
#include "views/figures/token_axis.h"

#include <qcustomplot.h>

#include <QVBoxLayout>
#include <cmath>

namespace attnscope {

namespace {
QColor edgeColour(FlowEdge::Kind kind, double weight) {
    QColor c = kind == FlowEdge::Kind::Attention ? QColor(30, 100, 200) : kind == FlowEdge::Kind::Mlp ? QColor(230, 120, 20) : QColor(120, 120, 120);
    c.setAlphaF(float(std::clamp(0.25 + 0.75 * weight, 0.25, 1.0)));
    return c;
}
QString kindName(FlowEdge::Kind k) {
    return k == FlowEdge::Kind::Attention ? QObject::tr("attention") : k == FlowEdge::Kind::Mlp ? QObject::tr("MLP") : QObject::tr("residual");
}
} // namespace

FlowGraphPlot::FlowGraphPlot(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    plot_ = new QCustomPlot;
    plot_->setMinimumSize(300, 250);
    layout->addWidget(plot_);
    figure_ = new ChartFigure(plot_, QStringLiteral("flow_graph"), tr("Build the graph: every edge is a part of the residual stream's update."));
    figure_->setValues([this] { return values(); });
    figure_->setTooltip([this](const QPoint& pos) { return tooltip(pos); });
    plot_->xAxis->setLabel(tr("position"));
    plot_->yAxis->setLabel(tr("layer boundary"));
    connect(plot_, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) { pressPos_ = e->pos(); });
    connect(plot_, &QCustomPlot::mouseRelease, this, [this](QMouseEvent* e) {
        if ((e->pos() - pressPos_).manhattanLength() <= 3 && e->button() == Qt::LeftButton) clickAt(e->position() + QPointF(plot_->x(), plot_->y()));
    });
}

void FlowGraphPlot::clear() {
    graph_ = {};
    plot_->clearItems();
    plot_->clearGraphs();
    items_.clear();
    figure_->setHasData(false);
    plot_->replot();
}

void FlowGraphPlot::setGraph(const FlowGraph& graph, const QStringList& positions, const QStringList& boundaries) {
    clear();
    graph_ = graph;
    positions_ = positions;
    boundaries_ = boundaries;
    // "3 ␣cat" rotated, thinned to every k-th position when they do not fit (token_axis.h), as the heatmaps do
    if (auto t = plot_->xAxis->ticker().dynamicCast<TokenAxisTicker>()) t->setTokens(positions);
    else setTokenAxis(plot_->xAxis, positions, true);
    auto yt = QSharedPointer<QCPAxisTickerText>::create();
    for (int b = 0; b < boundaries.size(); ++b) yt->addTick(b, boundaries[b]);
    plot_->yAxis->setTicker(yt);
    // nodes an edge touches
    QSet<QPair<int, int>> nodes;
    for (const FlowEdge& e : graph.edges) {
        QCPAbstractItem* item = nullptr;
        const QPointF from(e.fromPosition, e.fromBoundary), to(e.toPosition, e.toBoundary);
        if (e.kind == FlowEdge::Kind::Mlp) {
            auto* c = new QCPItemCurve(plot_);
            c->start->setCoords(from);
            c->end->setCoords(to);
            c->startDir->setCoords(from + QPointF(0.35, 0.3));
            c->endDir->setCoords(to + QPointF(0.35, -0.3));
            c->setPen(QPen(edgeColour(e.kind, e.weight), 1 + 5 * e.weight));
            item = c;
        } else {
            auto* l = new QCPItemLine(plot_);
            l->start->setCoords(from);
            l->end->setCoords(to);
            l->setPen(QPen(edgeColour(e.kind, e.weight), 1 + 5 * e.weight));
            item = l;
        }
        item->setSelectable(false);
        items_.push_back(item);
        nodes.insert({e.fromBoundary, e.fromPosition});
        nodes.insert({e.toBoundary, e.toPosition});
    }
    QCPGraph* g = plot_->addGraph();
    g->setLineStyle(QCPGraph::lsNone);
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QColor(60, 60, 60), QColor(250, 250, 250), 7));
    for (const auto& n : nodes) g->addData(n.second, n.first);
    figure_->setHasData(!graph.edges.empty());
    figure_->setHomeRanges(QCPRange(-0.6, std::max<qsizetype>(1, positions.size()) - 0.4), QCPRange(-0.4, boundaries.size() - 0.6));
    figure_->restyle();
    plot_->replot();
}

QPointF FlowGraphPlot::nodePixel(int boundary, int position) const {
    return {plot_->xAxis->coordToPixel(position) + plot_->x(), plot_->yAxis->coordToPixel(boundary) + plot_->y()};
}

QPointF FlowGraphPlot::edgePixel(int index) const {
    const FlowEdge& e = graph_.edges[size_t(index)];
    if (e.kind == FlowEdge::Kind::Mlp) {
        // the Bézier curve at t = 1/2: (P0 + 3 P1 + 3 P2 + P3) / 8
        const QPointF p0(e.fromPosition, e.fromBoundary), p3(e.toPosition, e.toBoundary);
        const QPointF m = (p0 + 3 * (p0 + QPointF(0.35, 0.3)) + 3 * (p3 + QPointF(0.35, -0.3)) + p3) / 8;
        return {plot_->xAxis->coordToPixel(m.x()) + plot_->x(), plot_->yAxis->coordToPixel(m.y()) + plot_->y()};
    }
    return (nodePixel(e.fromBoundary, e.fromPosition) + nodePixel(e.toBoundary, e.toPosition)) / 2;
}

std::optional<std::pair<int, int>> FlowGraphPlot::nodeAt(const QPointF& pixel) const {
    std::optional<std::pair<int, int>> best;
    double bestD = 8;
    for (const FlowEdge& e : graph_.edges)
        for (auto [b, p] : {std::pair{e.fromBoundary, e.fromPosition}, std::pair{e.toBoundary, e.toPosition}}) {
            const double d = QLineF(nodePixel(b, p), pixel).length();
            if (d <= bestD) {
                bestD = d;
                best = std::pair{b, p};
            }
        }
    return best;
}

int FlowGraphPlot::edgeAt(const QPointF& pixel) const {
    int best = -1;
    double bestD = 6;
    const QPointF local = pixel - QPointF(plot_->x(), plot_->y());
    for (size_t i = 0; i < items_.size(); ++i) {
        const double d = items_[i]->selectTest(local, false);
        if (d >= 0 && d <= bestD) {
            bestD = d;
            best = int(i);
        }
    }
    return best;
}

void FlowGraphPlot::clickAt(const QPointF& pixel) {
    const QPointF p = pixel;
    if (auto n = nodeAt(p)) {
        emit nodeClicked(n->first, n->second);
        return;
    }
    if (int e = edgeAt(p); e >= 0) emit edgeClicked(e);
}

QString FlowGraphPlot::describeEdge(int index) const {
    if (index < 0 || index >= int(graph_.edges.size())) return {};
    const FlowEdge& e = graph_.edges[size_t(index)];
    const auto node = [this](int b, int p) {
        return QStringLiteral("%1 @ %2 %3").arg(boundaries_.value(b), QString::number(p), positions_.value(p));
    };
    QString s = tr("%1 → %2: %3 edge, weight %4").arg(node(e.fromBoundary, e.fromPosition), node(e.toBoundary, e.toPosition),
                                                     kindName(e.kind), QString::number(e.weight, 'f', 4));
    if (!e.heads.empty()) {
        const int layer = (e.toBoundary - 1) / 2;
        QStringList parts;
        for (size_t h = 0; h < e.heads.size(); ++h)
            if (e.heads[h] > 0) parts << QStringLiteral("L%1H%2 %3").arg(layer).arg(h).arg(e.heads[h], 0, 'f', 3);
        s += QStringLiteral(" (") + parts.join(QStringLiteral(", ")) + QStringLiteral(")");
    }
    return s;
}

QString FlowGraphPlot::tooltip(const QPoint& pos) const {
    const QPointF p = QPointF(pos) + QPointF(plot_->x(), plot_->y());
    if (auto n = nodeAt(p)) return tr("%1 at position %2 %3 (click: logit lens)").arg(boundaries_.value(n->first)).arg(n->second).arg(positions_.value(n->second));
    return describeEdge(edgeAt(p));
}

ValueTable FlowGraphPlot::values() const {
    ValueTable t;
    t.corner = QStringLiteral("edge");
    t.colLabels = {QStringLiteral("kind"), QStringLiteral("from_boundary"), QStringLiteral("from_position"), QStringLiteral("to_boundary"),
                   QStringLiteral("to_position"), QStringLiteral("weight")};
    for (size_t i = 0; i < graph_.edges.size(); ++i) {
        const FlowEdge& e = graph_.edges[i];
        t.rowLabels << QString::number(i);
        t.cells.push_back({flowEdgeKindName(e.kind), boundaries_.value(e.fromBoundary), QString::number(e.fromPosition),
                           boundaries_.value(e.toBoundary), QString::number(e.toPosition), exactNumber(e.weight)});
    }
    return t;
}

} // namespace attnscope
