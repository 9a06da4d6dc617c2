#include "views/graphs/graph_plot.h"

#include "views/figures/figure_actions.h"
#include "views/figures/palettes.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <qcustomplot.h>
#include <algorithm>
#include <cmath>
#include <map>

namespace attnscope {

namespace {
constexpr double kMargin = 10, kLeftAxis = 54, kMaxRadius = 11, kMinRadius = 3;
constexpr int kMaxDrawnLinks = 3000;

QColor kindFill(GraphNodeKind k) {
    switch (k) {
    case GraphNodeKind::Feature: return QColor(244, 162, 59);
    case GraphNodeKind::Error: return QColor(170, 170, 170);
    case GraphNodeKind::Token: return QColor(102, 187, 106);
    case GraphNodeKind::Logit: break;
    }
    return QColor(149, 117, 205);
}

const QColor kPinColor(230, 81, 0);

/// Supernode i's colour (its members' dashed rings and its legend swatch).
QColor supernodeColour(size_t i) {
    static const QColor colours[] = {QColor(0, 137, 123), QColor(123, 31, 162), QColor(194, 24, 91),
                                     QColor(46, 125, 50), QColor(21, 101, 192), QColor(175, 130, 0)};
    return colours[i % std::size(colours)];
}
} // namespace

QString graphFileFigureTitle(const QString& path) {
    return QCoreApplication::translate("GraphPanel", "%1 (opened from a file)").arg(QFileInfo(path).fileName());
}

GraphPlot::GraphPlot(QWidget* parent) : PaintedFigure(parent) {
    setMinimumSize(360, 260);
    actions_ = new FigureActions(this, this, QStringLiteral("attribution_graph"));
}

void GraphPlot::invalidate() {
    layoutValid_ = false;
    picture_ = QPixmap();
    update();
}

void GraphPlot::paintEvent(QPaintEvent*) {
    // the figure is drawn once into a pixmap (thousands of edges take a while) and reused while only the hovered node
    // changes; its ring is drawn over it
    const qreal dpr = devicePixelRatioF();
    if (picture_.isNull() || picture_.size() != size() * dpr) {
        picture_ = QPixmap(size() * dpr);
        picture_.setDevicePixelRatio(dpr);
        picture_.fill(palette().color(QPalette::Base));
        QPainter p(&picture_);
        paintContent(p, size(), palette());
    }
    QPainter p(this);
    p.drawPixmap(0, 0, picture_);
    if (hovered_ >= 0 && isNodeShown(hovered_)) {
        p.setRenderHint(QPainter::Antialiasing);
        p.setBrush(Qt::NoBrush);
        p.setPen(QPen(palette().color(QPalette::WindowText), 1.6));
        const double r = nodeRadius(hovered_) + 1.5;
        p.drawEllipse(nodeCenter(hovered_), r, r);
    }
}

void GraphPlot::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::FontChange) invalidate();
    PaintedFigure::changeEvent(event);
}

void GraphPlot::setDocument(std::shared_ptr<const GraphDocument> doc, const QString& title) {
    doc_ = std::move(doc);
    title_ = title;
    pinned_.assign(doc_ ? doc_->nodes.size() : 0, 0);
    if (doc_)
        for (const QString& id : doc_->pinnedIds)
            if (const int i = doc_->indexOf(id); i >= 0) pinned_[size_t(i)] = 1;
    selectedNode_ = selectedLink_ = hovered_ = -1;
    invalidate();
}

void GraphPlot::clear(const QString& text) {
    doc_.reset();
    pinned_.clear();
    title_.clear();
    empty_ = text;
    selectedNode_ = selectedLink_ = hovered_ = -1;
    invalidate();
}

void GraphPlot::nodesAdded() {
    if (doc_) pinned_.resize(doc_->nodes.size(), 0);
    invalidate();
}

void GraphPlot::setPinned(const std::vector<int>& nodes) {
    pinned_.assign(doc_ ? doc_->nodes.size() : 0, 0);
    for (int i : nodes)
        if (i >= 0 && size_t(i) < pinned_.size()) pinned_[size_t(i)] = 1;
    invalidate();
}

void GraphPlot::setPinnedOnly(bool on) {
    pinnedOnly_ = on;
    invalidate();
}

void GraphPlot::setSelection(int node, int link) {
    selectedNode_ = node;
    selectedLink_ = link;
    picture_ = QPixmap();
    update();
}

bool GraphPlot::isNodeShown(int node) const {
    if (!doc_ || node < 0 || size_t(node) >= doc_->nodes.size()) return false;
    return !pinnedOnly_ || pinned_[size_t(node)];
}

int GraphPlot::shownNodeCount() const {
    int n = 0;
    for (size_t i = 0; doc_ && i < doc_->nodes.size(); ++i) n += isNodeShown(int(i));
    return n;
}

int GraphPlot::shownLinkCount() const {
    int n = 0;
    if (doc_)
        for (const GraphDocumentLink& l : doc_->links) n += isNodeShown(l.source) && isNodeShown(l.target);
    return n;
}

const GraphPlot::Layout& GraphPlot::layoutFor(QSizeF size) const {
    if (layoutValid_ && layout_.size == size) return layout_;
    Layout& L = layout_;
    L = Layout{};
    L.size = size;
    layoutValid_ = true;
    if (!doc_) return L;
    const QFontMetricsF fm(font());
    const int rows = doc_->nLayers() + 2, cols = std::max(1, doc_->nPositions());
    const double top = kMargin + fm.height() + 6 + 2 * fm.height() + 4; // title, then two lines for the logits' labels
    const bool legend = !doc_->supernodes.empty() || std::any_of(doc_->nodes.begin(), doc_->nodes.end(), [](const GraphDocumentNode& n) { return n.qkOnly; });
    const double bottom = kMargin + 2 * fm.height() + 6 + // the token labels: position, token
                          (legend ? fm.height() + 6 : 0); // the supernodes' and QK-only nodes' legend
    L.plot = QRectF(kLeftAxis, top, std::max(10.0, size.width() - kLeftAxis - kMargin), std::max(10.0, size.height() - top - bottom));
    L.rowHeight = L.plot.height() / rows;
    // the shown nodes by cell (row, column), most influential first
    std::map<std::pair<int, int>, std::vector<int>> cells;
    for (size_t i = 0; i < doc_->nodes.size(); ++i)
        if (isNodeShown(int(i))) cells[{doc_->nodes[i].layer + 1, doc_->nodes[i].ctxIdx}].push_back(int(i));
    // a column is as wide as its most crowded cell (14 px a node) or its token label needs, as Neuronpedia's viewer does
    std::vector<double> weight(size_t(cols), 0);
    for (int c = 0; c < cols; ++c) weight[size_t(c)] = std::max(28.0, std::min(fm.horizontalAdvance(doc_->promptTokens.value(c)) + 10, 160.0));
    for (const auto& [cell, nodes] : cells) weight[size_t(cell.second)] = std::max(weight[size_t(cell.second)], 14.0 * double(nodes.size()));
    double total = 0;
    for (double w : weight) total += w;
    L.columnLeft.assign(size_t(cols) + 1, L.plot.left());
    for (int c = 0; c < cols; ++c) L.columnLeft[size_t(c) + 1] = L.columnLeft[size_t(c)] + L.plot.width() * weight[size_t(c)] / total;
    L.center.assign(doc_->nodes.size(), QPointF());
    L.radius.assign(doc_->nodes.size(), 0);
    for (auto& [cell, nodes] : cells) {
        std::stable_sort(nodes.begin(), nodes.end(), [&](int a, int b) { return doc_->sizeWeight(a) > doc_->sizeWeight(b); });
        const int m = int(nodes.size());
        // side by side across 90% of the column, in as many sub-rows as needed to keep nodes ≥ 7 px apart
        const double columnWidth = L.columnLeft[size_t(cell.second) + 1] - L.columnLeft[size_t(cell.second)];
        const double width = 0.9 * columnWidth, height = 0.8 * L.rowHeight;
        const int perRow = std::max(1, std::min(m, int(width / 7.0)));
        const int subRows = (m + perRow - 1) / perRow;
        const double dx = width / perRow, dy = height / subRows;
        const double rMax = std::clamp(std::min(dx, dy) / 2 - 0.5, kMinRadius, kMaxRadius);
        const double cx = L.columnLeft[size_t(cell.second)] + columnWidth / 2;
        const double cy = L.plot.top() + (rows - 1 - cell.first + 0.5) * L.rowHeight;
        for (int k = 0; k < m; ++k) {
            const int r = k / perRow, c = k % perRow;
            const int inRow = std::min(perRow, m - r * perRow);
            const int node = nodes[size_t(k)];
            L.center[size_t(node)] = QPointF(cx + (c - (inRow - 1) / 2.0) * dx, cy + (r - (subRows - 1) / 2.0) * dy);
            L.radius[size_t(node)] = kMinRadius + (rMax - kMinRadius) * std::sqrt(doc_->sizeWeight(node));
        }
    }
    return L;
}

QPointF GraphPlot::nodeCenter(int node) const { return layoutFor(QSizeF(size())).center[size_t(node)]; }
double GraphPlot::nodeRadius(int node) const { return layoutFor(QSizeF(size())).radius[size_t(node)]; }

int GraphPlot::nodeAt(const QPointF& pos) const {
    if (!doc_) return -1;
    const Layout& L = layoutFor(QSizeF(size()));
    int best = -1;
    double bestD = 0;
    for (size_t i = 0; i < doc_->nodes.size(); ++i) {
        if (!isNodeShown(int(i))) continue;
        const QPointF d = L.center[i] - pos;
        const double dist = std::hypot(d.x(), d.y());
        if (dist <= L.radius[i] + 2 && (best < 0 || dist < bestD)) {
            best = int(i);
            bestD = dist;
        }
    }
    return best;
}

double GraphPlot::maxShownWeight() const {
    double maxAbs = 0;
    if (doc_)
        for (const GraphDocumentLink& l : doc_->links)
            if (isNodeShown(l.source) && isNodeShown(l.target) && std::isfinite(l.weight)) maxAbs = std::max(maxAbs, std::abs(l.weight));
    return maxAbs;
}

double GraphPlot::linkWidth(int link, double maxAbs) const {
    const double w = std::abs(doc_->links[size_t(link)].weight);
    return 0.4 + 4.6 * (maxAbs > 0 && std::isfinite(w) ? w / maxAbs : 0.0);
}

double GraphPlot::linkWidth(int link) const { return linkWidth(link, maxShownWeight()); }

QPainterPath GraphPlot::linkPath(int link, const Layout& L) const {
    const GraphDocumentLink& l = doc_->links[size_t(link)];
    const QPointF a = L.center[size_t(l.source)], b = L.center[size_t(l.target)];
    QPainterPath path(a);
    const double dy = (b.y() - a.y()) / 2;
    path.cubicTo(a + QPointF(0, dy), b - QPointF(0, dy), b);
    return path;
}

std::vector<int> GraphPlot::drawnLinks(std::vector<double>* width) const {
    std::vector<int> order;
    width->assign(doc_->links.size(), 0);
    for (size_t i = 0; i < doc_->links.size(); ++i)
        if (isNodeShown(doc_->links[i].source) && isNodeShown(doc_->links[i].target)) order.push_back(int(i));
    const double maxAbs = maxShownWeight();
    for (int i : order) (*width)[size_t(i)] = linkWidth(i, maxAbs);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return (*width)[size_t(a)] < (*width)[size_t(b)]; });
    // a large graph: the kMaxDrawnLinks widest (and the selected node's), said in the title; the rest would be hairlines
    // that take seconds to stroke
    if (order.size() > size_t(kMaxDrawnLinks)) {
        std::vector<int> kept;
        for (size_t k = 0; k < order.size(); ++k) {
            const GraphDocumentLink& l = doc_->links[size_t(order[k])];
            if (k >= order.size() - size_t(kMaxDrawnLinks) || l.source == selectedNode_ || l.target == selectedNode_ || order[k] == selectedLink_)
                kept.push_back(order[k]);
        }
        order = std::move(kept);
    }
    return order;
}

int GraphPlot::linkAt(const QPointF& pos) const {
    if (!doc_) return -1;
    const Layout& L = layoutFor(QSizeF(size()));
    std::vector<double> widths;
    int best = -1;
    double bestWidth = 0;
    for (int i : drawnLinks(&widths)) {
        const GraphDocumentLink& l = doc_->links[size_t(i)];
        const double width = widths[size_t(i)], reach = width / 2 + 3;
        if (!QRectF(L.center[size_t(l.source)], L.center[size_t(l.target)]).normalized().adjusted(-reach, -reach, reach, reach).contains(pos)) continue;
        // the curve of linkPath, evaluated directly (QPainterPath::pointAtPercent measures arc lengths: slow)
        const QPointF a = L.center[size_t(l.source)], b = L.center[size_t(l.target)];
        const QPointF c1 = a + QPointF(0, (b.y() - a.y()) / 2), c2 = b - QPointF(0, (b.y() - a.y()) / 2);
        for (int k = 0; k <= 48; ++k) {
            const double t = k / 48.0, u = 1 - t;
            const QPointF d = u * u * u * a + 3 * u * u * t * c1 + 3 * u * t * t * c2 + t * t * t * b - pos;
            if (d.x() * d.x() + d.y() * d.y() <= reach * reach) {
                if (best < 0 || width > bestWidth) {
                    best = i;
                    bestWidth = width;
                }
                break;
            }
        }
    }
    return best;
}

QPointF GraphPlot::linkMidpoint(int link) const { return linkPath(link, layoutFor(QSizeF(size()))).pointAtPercent(0.5); }

void GraphPlot::paintContent(QPainter& p, QSizeF size, const QPalette& palette) const {
    p.setRenderHint(QPainter::Antialiasing);
    p.setFont(font());
    if (!hasFigureData()) {
        p.setPen(palette.color(QPalette::PlaceholderText));
        p.drawText(QRectF(QPointF(0, 0), size).adjusted(20, 0, -20, 0), Qt::AlignCenter | Qt::TextWordWrap, empty_);
        return;
    }
    const Layout& L = layoutFor(size);
    const QFontMetricsF fm(font());
    const QColor text = palette.color(QPalette::WindowText);
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(text);
    const int shownLinks = shownLinkCount();
    const QString title = shownLinks > kMaxDrawnLinks ? tr("%1 — the %2 strongest of %3 edges drawn").arg(title_).arg(kMaxDrawnLinks).arg(shownLinks)
                                                      : title_;
    p.drawText(QRectF(kMargin, kMargin, size.width() - 2 * kMargin, fm.height()), Qt::AlignCenter,
               QFontMetricsF(bold).elidedText(title, Qt::ElideLeft, size.width() - 2 * kMargin));
    p.setFont(font());
    // rows: alternate bands and the layer names at the left
    const int rows = doc_->nLayers() + 2;
    QColor band = palette.color(QPalette::AlternateBase);
    for (int r = 0; r < rows; ++r) {
        const QRectF row(L.plot.left(), L.plot.top() + (rows - 1 - r) * L.rowHeight, L.plot.width(), L.rowHeight);
        if (r % 2 == 1) p.fillRect(row, band);
        const QString name = r == 0 ? tr("emb") : r == rows - 1 ? tr("logits") : QStringLiteral("L%1").arg(r - 1);
        p.setPen(palette.color(QPalette::PlaceholderText));
        p.drawText(QRectF(kMargin, row.top(), kLeftAxis - kMargin - 4, row.height()), Qt::AlignRight | Qt::AlignVCenter, name);
    }
    // the token labels under their columns: position, then the token (elided to the column); on narrow columns (long
    // prompts) a position number that would overlap the last one drawn is left out
    p.setPen(palette.color(QPalette::PlaceholderText));
    double lastRight = -1e9;
    for (int c = 0; c < doc_->nPositions(); ++c) {
        const double width = L.columnLeft[size_t(c) + 1] - L.columnLeft[size_t(c)];
        const QRectF col(L.columnLeft[size_t(c)], L.plot.bottom() + 3, width, fm.height());
        const QString number = QString::number(c);
        const double half = fm.horizontalAdvance(number) / 2.0;
        if (col.center().x() - half >= lastRight + 4) {
            p.drawText(QRectF(col.center().x() - half - 1, col.top(), 2 * half + 2, col.height()), Qt::AlignHCenter | Qt::AlignTop, number);
            lastRight = col.center().x() + half;
        }
        p.save();
        p.setPen(text);
        const QString token = doc_->promptTokens.value(c);
        p.drawText(col.translated(0, fm.height()), Qt::AlignHCenter | Qt::AlignTop, fm.elidedText(token, Qt::ElideRight, width - 4));
        p.restore();
    }
    // the links, thinnest first; those of the selected node stand out
    std::vector<double> width;
    const std::vector<int> order = drawnLinks(&width);
    QCPColorGradient rb = redBlueGradient();
    p.setBrush(Qt::NoBrush);
    for (int i : order) {
        const GraphDocumentLink& l = doc_->links[size_t(i)];
        const bool touches = selectedNode_ >= 0 && (l.source == selectedNode_ || l.target == selectedNode_);
        QColor c = rb.color(l.weight >= 0 ? 0.85 : -0.85, QCPRange(-1, 1));
        const double rel = (width[size_t(i)] - 0.4) / 4.6;
        c.setAlphaF(selectedNode_ < 0 ? 0.2 + 0.6 * rel : touches ? 0.9 : 0.06);
        p.setPen(QPen(c, width[size_t(i)], Qt::SolidLine, Qt::RoundCap));
        p.drawPath(linkPath(i, L));
    }
    if (selectedLink_ >= 0 && size_t(selectedLink_) < doc_->links.size() && isNodeShown(doc_->links[size_t(selectedLink_)].source) &&
        isNodeShown(doc_->links[size_t(selectedLink_)].target)) {
        p.setPen(QPen(text, width[size_t(selectedLink_)] + 2.5, Qt::DashLine, Qt::RoundCap));
        p.drawPath(linkPath(selectedLink_, L));
    }
    // the nodes
    for (size_t i = 0; i < doc_->nodes.size(); ++i) {
        if (!isNodeShown(int(i))) continue;
        const GraphDocumentNode& n = doc_->nodes[i];
        const QPointF c = L.center[i];
        const double r = L.radius[i];
        const QRectF box(c.x() - r, c.y() - r, 2 * r, 2 * r);
        p.setBrush(kindFill(n.kind));
        // a QK-only node (a pinned QK contributor pruning left out): a dashed outline
        p.setPen(n.qkOnly ? QPen(text, int(i) == selectedNode_ ? 2.2 : 1.4, Qt::DashLine) : QPen(text, int(i) == selectedNode_ ? 2.2 : 0.7));
        if (n.kind == GraphNodeKind::Feature) p.drawEllipse(box);
        else if (n.kind == GraphNodeKind::Error) p.drawRect(box);
        else p.drawRoundedRect(box, r / 3, r / 3);
        if (pinned_[i]) {
            p.setBrush(Qt::NoBrush);
            p.setPen(QPen(kPinColor, 2.4));
            p.drawEllipse(box.adjusted(-3.5, -3.5, 3.5, 3.5));
        }
    }
    // supernodes: each member's dashed ring in the supernode's colour, and a legend line at the bottom
    double legendX = kLeftAxis;
    for (size_t s = 0; s < doc_->supernodes.size(); ++s) {
        const QStringList& group = doc_->supernodes[s];
        const QColor colour = supernodeColour(s);
        p.setBrush(Qt::NoBrush);
        p.setPen(QPen(colour, 2.0, Qt::DashLine));
        int members = 0;
        for (int k = 1; k < group.size(); ++k) {
            const int i = doc_->indexOf(group[k]);
            if (i < 0 || !isNodeShown(i)) continue;
            const double r = L.radius[size_t(i)] + 6.5;
            p.drawEllipse(L.center[size_t(i)], r, r);
            ++members;
        }
        const QString label = QStringLiteral("%1 (%2)").arg(group.value(0)).arg(members);
        const double y = size.height() - kMargin - fm.height();
        p.fillRect(QRectF(legendX, y + fm.height() / 2 - 5, 10, 10), colour);
        p.setPen(text);
        const double w = std::min(fm.horizontalAdvance(label) + 2, 220.0);
        p.drawText(QRectF(legendX + 14, y, w, fm.height()), Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(label, Qt::ElideRight, w));
        legendX += 14 + w + 14;
    }
    // the QK-only nodes' legend entry: a dashed circle and their count
    if (const auto qkOnly = std::count_if(doc_->nodes.begin(), doc_->nodes.end(), [](const GraphDocumentNode& n) { return n.qkOnly; }); qkOnly > 0) {
        const double y = size.height() - kMargin - fm.height();
        p.setBrush(kindFill(GraphNodeKind::Feature));
        p.setPen(QPen(text, 1.4, Qt::DashLine));
        p.drawEllipse(QPointF(legendX + 5, y + fm.height() / 2), 5, 5);
        p.setPen(text);
        const QString label = tr("QK-only: pinned from a QK trace, pruned from the graph (%1)").arg(qkOnly);
        p.drawText(QRectF(legendX + 14, y, size.width() - legendX - 14 - kMargin, fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(label, Qt::ElideRight, size.width() - legendX - 14 - kMargin));
    }
    // the logits' tokens above them, the most probable first, on one of two lines; a label that would overlap one
    // already placed is left out (the card names every node)
    std::vector<int> logits;
    for (size_t i = 0; i < doc_->nodes.size(); ++i)
        if (isNodeShown(int(i)) && doc_->nodes[i].kind == GraphNodeKind::Logit) logits.push_back(int(i));
    std::stable_sort(logits.begin(), logits.end(), [&](int a, int b) { return doc_->nodes[size_t(a)].tokenProb > doc_->nodes[size_t(b)].tokenProb; });
    std::vector<QRectF> placed;
    p.setPen(text);
    for (int i : logits) {
        const QString label = doc_->nodeLabel(i).mid(6).section(QStringLiteral(" (p="), 0, 0); // the token, without "logit " and p
        const double w = std::min(fm.horizontalAdvance(label) + 4, 120.0);
        for (int line = 0; line < 2; ++line) {
            const double left = std::clamp(L.center[size_t(i)].x() - w / 2, 0.0, std::max(0.0, size.width() - w)); // inside the figure
            const QRectF box(left, L.center[size_t(i)].y() - L.radius[size_t(i)] - (line + 1) * fm.height() - 1, w, fm.height());
            if (std::any_of(placed.begin(), placed.end(), [&](const QRectF& r) { return r.intersects(box); })) continue;
            p.drawText(box, Qt::AlignCenter, fm.elidedText(label, Qt::ElideRight, w));
            placed.push_back(box);
            break;
        }
    }
}

ValueTable GraphPlot::figureValues() const {
    ValueTable t;
    t.colLabels = {tr("source"), tr("target"), tr("weight")};
    if (!doc_) return t;
    for (const GraphDocumentLink& l : doc_->links)
        if (isNodeShown(l.source) && isNodeShown(l.target))
            t.cells.push_back({doc_->nodes[size_t(l.source)].nodeId, doc_->nodes[size_t(l.target)].nodeId, exactNumber(l.weight)});
    return t;
}

QString GraphPlot::toolTipAt(const QPointF& pos) const {
    if (const int i = nodeAt(pos); i >= 0) {
        const GraphDocumentNode& n = doc_->nodes[size_t(i)];
        return n.kind == GraphNodeKind::Feature && !n.clerp.isEmpty() ? doc_->nodeLabel(i) + QStringLiteral(": ") + n.clerp : doc_->nodeLabel(i);
    }
    const int l = linkAt(pos);
    if (l < 0) return {};
    const GraphDocumentLink& link = doc_->links[size_t(l)];
    return tr("%1 → %2: %3 (click for the heads that carry it)")
        .arg(doc_->nodeLabel(link.source), doc_->nodeLabel(link.target)).arg(link.weight, 0, 'g', 4);
}

void GraphPlot::mouseMoveEvent(QMouseEvent* event) {
    const int i = nodeAt(event->position());
    if (i != hovered_) {
        hovered_ = i;
        update();
        emit nodeHovered(i);
    }
    PaintedFigure::mouseMoveEvent(event);
}

void GraphPlot::mousePressEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton) {
        const int node = nodeAt(event->position());
        const int link = node < 0 ? linkAt(event->position()) : -1;
        if (link >= 0) emit linkClicked(link);
        else emit nodeClicked(node);
    }
    PaintedFigure::mousePressEvent(event);
}

void GraphPlot::mouseDoubleClickEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton)
        if (const int node = nodeAt(event->position()); node >= 0) emit nodeDoubleClicked(node);
    PaintedFigure::mouseDoubleClickEvent(event);
}

void GraphPlot::leaveEvent(QEvent* event) {
    if (hovered_ >= 0) {
        hovered_ = -1;
        update();
        emit nodeHovered(-1);
    }
    PaintedFigure::leaveEvent(event);
}

} // namespace attnscope
