#pragma once
// The information-flow graph drawn (Ferrando & Voita 2024; the LLM Transparency Tool's picture): positions
// across, layer boundaries up (embed, L0attn = resid_mid of layer 0, L0mlp = resid_post of layer 0, …).
// Attention edges run from key position j at the layer's input to query position i at its resid_mid, MLP edges
// bow to the right from resid_mid to resid_post, residual edges go straight up; width and opacity grow with the
// weight (blue attention, orange MLP, grey residual). Hover names an edge or node; clicking one emits
// edgeClicked / nodeClicked. It is a ChartFigure: zoom, pan, Copy, Export PNG/SVG/PDF/CSV (the edges).

#include "model/analysis/circuits/information_flow.h"
#include "views/figures/figure.h"

#include <QStringList>
#include <QWidget>
#include <optional>

class QCustomPlot;
class QCPAbstractItem;

namespace attnscope {

class ChartFigure;

class FlowGraphPlot : public QWidget {
    Q_OBJECT
public:
    explicit FlowGraphPlot(QWidget* parent = nullptr);
    /// Draws `graph`; `positions` labels the x axis ("3 ␣cat", every k-th when they do not fit: token_axis.h),
    /// `boundaries` the y axis (lensBoundaryName of each).
    void setGraph(const FlowGraph& graph, const QStringList& positions, const QStringList& boundaries);
    void clear();
    const FlowGraph& graph() const { return graph_; }

    /// Widget pixel of node (boundary, position).
    QPointF nodePixel(int boundary, int position) const;
    /// Widget pixel halfway along edge `index` (on its line or curve).
    QPointF edgePixel(int index) const;
    /// The node within 8 px of `pixel`, if any: (boundary, position).
    std::optional<std::pair<int, int>> nodeAt(const QPointF& pixel) const;
    /// The edge nearest `pixel` within 6 px, or -1.
    int edgeAt(const QPointF& pixel) const;
    /// What a click at `pixel` does (tests call it directly): a node wins over an edge.
    void clickAt(const QPointF& pixel);
    /// "L0attn 3 ← embed 1: attention 0.4213 (L0H0 0.40, …)" for the tooltip and the details panel.
    QString describeEdge(int index) const;

    ChartFigure* figure() const { return figure_; }
    QCustomPlot* plot() const { return plot_; }

signals:
    void edgeClicked(int index);
    void nodeClicked(int boundary, int position);

private:
    ValueTable values() const;
    QString tooltip(const QPoint& pos) const;

    FlowGraph graph_;
    QStringList positions_, boundaries_;
    QCustomPlot* plot_;
    ChartFigure* figure_;
    std::vector<QCPAbstractItem*> items_; ///< [edge]
    QPoint pressPos_;
};

} // namespace attnscope
