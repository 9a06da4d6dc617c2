#pragma once
// A circuit found by edge attribution (EAP, EAP-IG) drawn as EAP-IG's visualization.py draws it: the input at the
// top, each layer's heads in a row and its MLP below them, the logits at the bottom; the circuit's edges as curves
// from a sender's bottom to a receiver's top (a head's q, k and v inputs at the left, middle and right of its top),
// width ∝ |score| / max|score|, red for a positive score and blue for a negative one. Nodes no edge of the circuit
// touches are drawn faint. Hover names an edge and its score; the figure menu copies or exports the graph
// (PNG/SVG/PDF) and the edges (CSV).

#include "model/analysis/gradients/edge_attribution.h"
#include "views/figures/painted_figure.h"

#include <vector>

namespace attnscope {

/// "input", "L1H2", "MLP1" (the app's names for a sender).
QString edgeSenderLabel(const EdgeSender& s);
/// "L2H0 q", "MLP2", "logits".
QString edgeReceiverLabel(const EdgeReceiver& r);

class EdgeGraphPlot : public PaintedFigure {
    Q_OBJECT
public:
    explicit EdgeGraphPlot(QWidget* parent = nullptr);

    /// Draws the edges `circuit` (indices into a.graph.edges, e.g. selectCircuitEdges's) of the model `cfg`
    /// under `title`. Throws InputError for an index outside the graph.
    void setCircuit(const ModelConfig& cfg, const EdgeAttribution& a, const std::vector<int>& circuit, const QString& title);
    /// Back to the empty state, showing `text`.
    void clear(const QString& text);
    QString emptyText() const { return empty_; }
    int edgeCount() const { return int(edges_.size()); }
    /// The circuit's i-th edge as drawn.
    const ScoredEdge& edge(int i) const { return edges_[size_t(i)]; }
    /// Its pen width in pixels: 0.5 + 5.5·|score| / max|score|.
    double edgeWidth(int i) const;
    /// Its colour: red (score > 0) or blue (< 0), on the diverging map at full intensity.
    QColor edgeColor(int i) const;
    /// The centre of a sender's node (the input, a head, an MLP) and of the logits, in widget coordinates.
    QPointF senderCenter(const EdgeSender& s) const;
    QPointF logitsCenter() const;
    /// A point on edge i's curve (its middle), in widget coordinates.
    QPointF edgePixel(int i) const;
    /// The edge whose curve passes within its half width + 3 px of `pos` (the thickest of several), or −1.
    int edgeAt(const QPointF& pos) const;
    /// "L0H1 → L1H0 k: 0.123".
    QString describeEdge(int i) const;

    // Figure
    bool hasFigureData() const override { return !edges_.empty(); }
    QString figureTitle() const override { return title_; }
    /// sender, receiver, score (exact) of every edge drawn.
    ValueTable figureValues() const override;
    QSize sizeHint() const override { return {900, 600}; }

protected:
    void paintContent(QPainter& p, QSizeF size, const QPalette& palette) const override;
    /// describeEdge of the edge there.
    QString toolTipAt(const QPointF& pos) const override;

private:
    /// Node rectangles for a drawing of `size`: row r (0 = input, 2l+1 = layer l's heads, 2l+2 = its MLP,
    /// 2L+1 = logits), column c among the row's nodes.
    QRectF nodeRect(int row, int col, int cols, QSizeF size) const;
    QRectF senderRect(const EdgeSender& s, QSizeF size) const;
    QRectF receiverRect(const EdgeReceiver& r, QSizeF size) const;
    QPainterPath edgePath(int i, QSizeF size) const;

    ModelConfig cfg_;
    EdgeGraph graph_; ///< senders and receivers (the edges drawn are edges_)
    std::vector<ScoredEdge> edges_;
    double maxAbs_ = 0;
    QString title_, empty_;
};

} // namespace attnscope
