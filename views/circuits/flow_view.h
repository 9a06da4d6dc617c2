#pragma once
// The information-flow sub-tab of the Circuits tab: for the last forward pass, the contributions of every
// attention head (per key position) and MLP to each residual representation are computed once on a worker
// thread (flowContributions); the graph is then pruned at threshold τ from the chosen output position
// (flowGraph, instant) and drawn by FlowGraphPlot. Clicking an edge lists its per-head split; clicking a node
// shows the logit lens at that (boundary, position). Export: the plot's menu (PNG/SVG/PDF/CSV) and Export JSON
// (the CLI's "flow" object). Math: model/analysis/circuits/information_flow.h.

#include "model/analysis/circuits/information_flow.h"
#include "views/common/background_tool.h"

#include <QWidget>
#include <memory>
#include <optional>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;
class QTableWidget;

namespace attnscope {

class FlowGraphPlot;

class FlowView : public QWidget {
    Q_OBJECT
public:
    explicit FlowView(QWidget* parent = nullptr);
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache, const QStringList& labels);

    void setThreshold(double tau);
    void setPosition(int position); ///< -1 = the last
    void setNorm(FlowNorm norm);
    /// Computes the contributions in the background (if not yet for this run and norm), then the graph.
    void build();
    BackgroundTask& task() { return tool_.task(); }
    /// The graph shown (nullopt before build()).
    const std::optional<FlowGraph>& graph() const { return graph_; }
    FlowGraphPlot* plot() const { return plot_; }
    /// The details panel: its heading and its table (edge: head, part; node: rank, token, probability).
    QString detailsTitle() const;
    QTableWidget* detailsTable() const { return details_; }
    /// Shows edge `index`'s per-head split / the logit lens of a node in the details panel.
    void showEdge(int index);
    void showNode(int boundary, int position);
    /// Writes flowGraphToJson of the graph shown. Returns an error ("<file>: <problem>") or "".
    QString exportJson(const QString& path) const;

private:
    void prune();

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    QStringList labels_;
    std::shared_ptr<const FlowContributions> contributions_;
    std::optional<FlowGraph> graph_;
    QComboBox* norm_;
    QDoubleSpinBox* threshold_;
    QCheckBox* renormalise_;
    QSpinBox* position_;
    FlowGraphPlot* plot_;
    QLabel* detailsTitle_;
    QTableWidget* details_;
    BackgroundTool tool_;
};

} // namespace attnscope
