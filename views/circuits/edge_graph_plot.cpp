#include "views/circuits/edge_graph_plot.h"

#include "model/core/errors.h"
#include "views/figures/figure_actions.h"
#include "views/figures/palettes.h"

#include <QPainter>
#include <QPainterPath>
#include <qcustomplot.h>
#include <cmath>

namespace attnscope {

namespace {
constexpr double kMargin = 12, kNodeHeight = 22, kMaxNodeWidth = 72;
} // namespace

QString edgeSenderLabel(const EdgeSender& s) {
    switch (s.kind) {
    case EdgeSender::Kind::Input: return QStringLiteral("input");
    case EdgeSender::Kind::Head: return QStringLiteral("L%1H%2").arg(s.layer).arg(s.head);
    case EdgeSender::Kind::Mlp: break;
    }
    return QStringLiteral("MLP%1").arg(s.layer);
}

QString edgeReceiverLabel(const EdgeReceiver& r) {
    switch (r.kind) {
    case EdgeReceiver::Kind::Q: return QStringLiteral("L%1H%2 q").arg(r.layer).arg(r.head);
    case EdgeReceiver::Kind::K: return QStringLiteral("L%1H%2 k").arg(r.layer).arg(r.head);
    case EdgeReceiver::Kind::V: return QStringLiteral("L%1H%2 v").arg(r.layer).arg(r.head);
    case EdgeReceiver::Kind::Mlp: return QStringLiteral("MLP%1").arg(r.layer);
    case EdgeReceiver::Kind::Logits: break;
    }
    return QStringLiteral("logits");
}

EdgeGraphPlot::EdgeGraphPlot(QWidget* parent) : PaintedFigure(parent) {
    setMinimumSize(320, 240);
    new FigureActions(this, this, QStringLiteral("edge_attribution_circuit"));
}

void EdgeGraphPlot::setCircuit(const ModelConfig& cfg, const EdgeAttribution& a, const std::vector<int>& circuit, const QString& title) {
    std::vector<ScoredEdge> edges;
    for (int i : circuit) {
        if (i < 0 || size_t(i) >= a.graph.edges.size())
            throw InputError(tr("Edge %1 is not in the graph (%2 edges).").arg(i).arg(a.graph.edges.size()));
        const ScoredEdge& e = a.graph.edges[size_t(i)];
        if (e.sender < 0 || size_t(e.sender) >= a.graph.senders.size() || e.receiver < 0 || size_t(e.receiver) >= a.graph.receivers.size())
            throw InputError(tr("Edge %1 joins nodes the graph does not have.").arg(i));
        edges.push_back(e);
    }
    cfg_ = cfg;
    graph_.senders = a.graph.senders;
    graph_.receivers = a.graph.receivers;
    edges_ = std::move(edges);
    maxAbs_ = 0;
    for (const ScoredEdge& e : edges_)
        if (std::isfinite(e.score)) maxAbs_ = std::max(maxAbs_, std::abs(e.score));
    title_ = title;
    update();
}

void EdgeGraphPlot::clear(const QString& text) {
    edges_.clear();
    maxAbs_ = 0;
    title_.clear();
    empty_ = text;
    update();
}

double EdgeGraphPlot::edgeWidth(int i) const {
    const double s = std::abs(edges_[size_t(i)].score);
    return 0.5 + 5.5 * (maxAbs_ > 0 && std::isfinite(s) ? s / maxAbs_ : 0.0);
}

QColor EdgeGraphPlot::edgeColor(int i) const {
    return redBlueGradient().color(edges_[size_t(i)].score >= 0 ? 0.85 : -0.85, QCPRange(-1, 1));
}

QRectF EdgeGraphPlot::nodeRect(int row, int col, int cols, QSizeF size) const {
    const double top = kMargin + QFontMetricsF(font()).height() + 8; // below the title
    const int rows = 2 * cfg_.n_layers + 2;
    const double rowStep = rows > 1 ? (size.height() - top - kMargin - kNodeHeight) / (rows - 1) : 0;
    const double cell = (size.width() - 2 * kMargin) / std::max(1, cols);
    const double w = std::min(kMaxNodeWidth, cell - 8);
    return {kMargin + cell * (col + 0.5) - w / 2, top + rowStep * row, w, kNodeHeight};
}

QRectF EdgeGraphPlot::senderRect(const EdgeSender& s, QSizeF size) const {
    switch (s.kind) {
    case EdgeSender::Kind::Input: return nodeRect(0, 0, 1, size);
    case EdgeSender::Kind::Head: return nodeRect(2 * s.layer + 1, s.head, cfg_.n_heads, size);
    case EdgeSender::Kind::Mlp: break;
    }
    return nodeRect(2 * s.layer + 2, 0, 1, size);
}

QRectF EdgeGraphPlot::receiverRect(const EdgeReceiver& r, QSizeF size) const {
    switch (r.kind) {
    case EdgeReceiver::Kind::Q:
    case EdgeReceiver::Kind::K:
    case EdgeReceiver::Kind::V: return nodeRect(2 * r.layer + 1, r.head, cfg_.n_heads, size);
    case EdgeReceiver::Kind::Mlp: return nodeRect(2 * r.layer + 2, 0, 1, size);
    case EdgeReceiver::Kind::Logits: break;
    }
    return nodeRect(2 * cfg_.n_layers + 1, 0, 1, size);
}

QPointF EdgeGraphPlot::senderCenter(const EdgeSender& s) const { return senderRect(s, size()).center(); }
QPointF EdgeGraphPlot::logitsCenter() const { return receiverRect(EdgeReceiver{}, size()).center(); }

QPainterPath EdgeGraphPlot::edgePath(int i, QSizeF size) const {
    const ScoredEdge& e = edges_[size_t(i)];
    const EdgeReceiver& r = graph_.receivers[size_t(e.receiver)];
    const QRectF from = senderRect(graph_.senders[size_t(e.sender)], size), to = receiverRect(r, size);
    const double dx = r.kind == EdgeReceiver::Kind::Q ? -to.width() / 4 : r.kind == EdgeReceiver::Kind::V ? to.width() / 4 : 0;
    const QPointF a(from.center().x(), from.bottom()), b(to.center().x() + dx, to.top());
    const double dy = (b.y() - a.y()) / 2;
    QPainterPath path(a);
    path.cubicTo(a + QPointF(0, dy), b - QPointF(0, dy), b);
    return path;
}

QPointF EdgeGraphPlot::edgePixel(int i) const { return edgePath(i, size()).pointAtPercent(0.5); }

int EdgeGraphPlot::edgeAt(const QPointF& pos) const {
    int best = -1;
    for (int i = 0; i < edgeCount(); ++i) {
        const QPainterPath path = edgePath(i, size());
        const double reach = edgeWidth(i) / 2 + 3;
        for (int k = 0; k <= 64; ++k) {
            const QPointF d = path.pointAtPercent(k / 64.0) - pos;
            if (d.x() * d.x() + d.y() * d.y() <= reach * reach) {
                if (best < 0 || edgeWidth(i) > edgeWidth(best)) best = i;
                break;
            }
        }
    }
    return best;
}

QString EdgeGraphPlot::describeEdge(int i) const {
    const ScoredEdge& e = edges_[size_t(i)];
    return tr("%1 → %2: %3")
        .arg(edgeSenderLabel(graph_.senders[size_t(e.sender)]), edgeReceiverLabel(graph_.receivers[size_t(e.receiver)]))
        .arg(e.score, 0, 'g', 4);
}

void EdgeGraphPlot::paintContent(QPainter& p, QSizeF size, const QPalette& palette) const {
    p.setRenderHint(QPainter::Antialiasing);
    p.setFont(font());
    if (edges_.empty()) {
        p.setPen(palette.color(QPalette::PlaceholderText));
        p.drawText(QRectF(QPointF(0, 0), size).adjusted(20, 0, -20, 0), Qt::AlignCenter | Qt::TextWordWrap, empty_);
        return;
    }
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(palette.color(QPalette::WindowText));
    p.drawText(QRectF(kMargin, kMargin, size.width() - 2 * kMargin, QFontMetricsF(font()).height()), Qt::AlignCenter,
               QFontMetricsF(bold).elidedText(title_, Qt::ElideRight, size.width() - 2 * kMargin));
    // the edges, the thinnest first so the strongest stay on top
    std::vector<int> order(edges_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return edgeWidth(a) < edgeWidth(b); });
    p.setBrush(Qt::NoBrush);
    for (int i : order) {
        QColor c = edgeColor(i);
        c.setAlphaF(0.85);
        p.setPen(QPen(c, edgeWidth(i), Qt::SolidLine, Qt::RoundCap));
        p.drawPath(edgePath(i, size));
    }
    // the nodes: those the circuit touches solid, the others faint
    QSet<QString> used;
    for (const ScoredEdge& e : edges_) {
        used.insert(edgeSenderLabel(graph_.senders[size_t(e.sender)]));
        used.insert(edgeReceiverLabel(graph_.receivers[size_t(e.receiver)]).section(QLatin1Char(' '), 0, 0));
    }
    p.setFont(font());
    const auto node = [&](const QRectF& r, const QString& label) {
        const bool on = used.contains(label);
        QColor fill = palette.color(QPalette::Base), line = palette.color(QPalette::WindowText), text = line;
        if (!on) {
            line = palette.color(QPalette::Mid);
            text = palette.color(QPalette::PlaceholderText);
        }
        p.setPen(QPen(line, on ? 1.2 : 0.8));
        p.setBrush(fill);
        p.drawRoundedRect(r, 4, 4);
        p.setPen(text);
        p.drawText(r, Qt::AlignCenter, QFontMetricsF(font()).elidedText(label, Qt::ElideRight, r.width() - 2));
    };
    node(nodeRect(0, 0, 1, size), QStringLiteral("input"));
    for (int l = 0; l < cfg_.n_layers; ++l) {
        for (int h = 0; h < cfg_.n_heads; ++h) node(nodeRect(2 * l + 1, h, cfg_.n_heads, size), QStringLiteral("L%1H%2").arg(l).arg(h));
        node(nodeRect(2 * l + 2, 0, 1, size), QStringLiteral("MLP%1").arg(l));
    }
    node(nodeRect(2 * cfg_.n_layers + 1, 0, 1, size), QStringLiteral("logits"));
}

ValueTable EdgeGraphPlot::figureValues() const {
    ValueTable t;
    t.colLabels = {tr("sender"), tr("receiver"), tr("score")};
    for (const ScoredEdge& e : edges_)
        t.cells.push_back({edgeSenderLabel(graph_.senders[size_t(e.sender)]), edgeReceiverLabel(graph_.receivers[size_t(e.receiver)]),
                           exactNumber(e.score)});
    return t;
}

QString EdgeGraphPlot::toolTipAt(const QPointF& pos) const {
    const int i = edgeAt(pos);
    return i < 0 ? QString() : describeEdge(i);
}

} // namespace attnscope
