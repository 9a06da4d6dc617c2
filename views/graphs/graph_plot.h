#pragma once
// An attribution graph drawn as Neuronpedia's graph viewer lays it out: positions across (the prompt's tokens
// under their columns), layers up (the token embeddings in the bottom row, each layer's features and error nodes
// above, the logits in the top row). Several nodes of one (layer, position) cell sit side by side. A node's size
// grows with its influence (GraphDocument::sizeWeight); an edge's width with |weight| / max|weight| and its
// colour with the sign (red positive, blue negative). Features are circles, error nodes grey squares,
// embeddings green and logits purple rounded squares (logits labelled with their token). Hovering a node emits
// nodeHovered, clicking one nodeClicked (clicking an edge linkClicked); the selected node's edges stand out, pinned
// nodes get an orange ring, each supernode's members a dashed ring in its colour (named in a legend at the bottom), a QK
// trace's contributors pinned in although pruning left them out (GraphDocumentNode::qkOnly) a dashed outline, and
// the pinned-subgraph mode draws only the pinned nodes and the edges among them. Of a
// graph with more than 3 000 shown edges the 3 000 widest are drawn (and the selected node's), as the title says. The
// figure menu copies or exports it (PNG/SVG/PDF) and its edges (CSV).

#include "model/analysis/graphs/graph_document.h"
#include "views/figures/painted_figure.h"

#include <QPainterPath>
#include <QPixmap>
#include <memory>
#include <vector>

namespace attnscope {

class FigureActions;

/// The figure's title for a graph opened from `path` (the Graph tab and `attnscope --open-graph --export`).
QString graphFileFigureTitle(const QString& path);

class GraphPlot : public PaintedFigure {
    Q_OBJECT
public:
    explicit GraphPlot(QWidget* parent = nullptr);

    /// Shows `doc` (pins: doc->pinnedIds; nothing selected).
    void setDocument(std::shared_ptr<const GraphDocument> doc, const QString& title);
    /// Back to the empty state, showing `text`.
    void clear(const QString& text);
    const GraphDocument* document() const { return doc_.get(); }
    QString emptyText() const { return empty_; }

    /// The document gained nodes (QK-only contributors appended by the tab): lays it out again, keeping pins and selection.
    void nodesAdded();
    /// Pinned nodes (indices into the document's nodes), drawn with a ring.
    void setPinned(const std::vector<int>& nodes);
    /// Only the pinned nodes and the links among them.
    void setPinnedOnly(bool on);
    bool pinnedOnly() const { return pinnedOnly_; }
    /// The selected node (−1: none) and link (−1: none), drawn highlighted.
    void setSelection(int node, int link);
    int selectedNode() const { return selectedNode_; }

    bool isNodeShown(int node) const;
    int shownNodeCount() const;
    int shownLinkCount() const;
    /// A node's centre and radius in widget coordinates (a shown node).
    QPointF nodeCenter(int node) const;
    double nodeRadius(int node) const;
    /// The shown node under `pos` (within its radius + 2 px), or −1.
    int nodeAt(const QPointF& pos) const;
    /// A link's pen width: 0.4 + 4.6·|weight| / max|weight| over the shown links.
    double linkWidth(int link) const;
    /// The drawn link whose curve passes within its half width + 3 px of `pos` (the widest of several), or −1.
    int linkAt(const QPointF& pos) const;
    /// A point halfway along a shown link's curve, in widget coordinates.
    QPointF linkMidpoint(int link) const;
    FigureActions* actions() const { return actions_; }

    // Figure
    bool hasFigureData() const override { return doc_ && !doc_->nodes.empty(); }
    QString figureTitle() const override { return title_; }
    /// source, target, weight (exact) of every shown link.
    ValueTable figureValues() const override;
    QSize sizeHint() const override { return {900, 560}; }
    /// The hovered node's label (a feature's with its clerp: "L1 F17 @3: begins a clause"), the link's, or nothing.
    QString toolTipAt(const QPointF& pos) const override;

signals:
    /// The mouse is over `node` (−1: over no node).
    void nodeHovered(int node);
    /// A click on `node` (−1: on no node and no link).
    void nodeClicked(int node);
    /// A click on a link away from any node.
    void linkClicked(int link);
    /// A double click on `node` (the tab pins or unpins it).
    void nodeDoubleClicked(int node);

protected:
    void paintContent(QPainter& p, QSizeF size, const QPalette& palette) const override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    /// The cached picture, with the hovered node's ring over it.
    void paintEvent(QPaintEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    struct Layout {
        QSizeF size;
        std::vector<QPointF> center; ///< [node] (shown nodes)
        std::vector<double> radius;  ///< [node]
        QRectF plot;                 ///< the rows' area
        std::vector<double> columnLeft; ///< [pos + 1] column edges (a column is as wide as its fullest cell needs)
        double rowHeight = 0;
    };
    const Layout& layoutFor(QSizeF size) const;
    double maxShownWeight() const;
    /// The links drawn, thinnest first (at most kMaxDrawnLinks besides the selected node's), and every link's width.
    std::vector<int> drawnLinks(std::vector<double>* width) const;
    double linkWidth(int link, double maxAbs) const;
    QPainterPath linkPath(int link, const Layout& layout) const;
    void invalidate();

    std::shared_ptr<const GraphDocument> doc_;
    std::vector<char> pinned_;
    bool pinnedOnly_ = false;
    int selectedNode_ = -1, selectedLink_ = -1, hovered_ = -1;
    QString title_, empty_;
    mutable Layout layout_;
    mutable bool layoutValid_ = false;
    QPixmap picture_; ///< paintContent at the widget's size (null: to be drawn again)
    FigureActions* actions_ = nullptr;
};

} // namespace attnscope
