#pragma once
// The circuit sub-tab of the Circuits tab: edge attribution patching finds the edges between heads, MLPs, the
// input and the logits that carry the metric from the clean to the corrupted prompt — EAP (gradients at the clean
// run) or EAP-IG (gradients along the embeddings' path, `steps` points) — keeps the top N by |score| as the circuit,
// draws it (EdgeGraphPlot) and measures its faithfulness: the share of the metric recovered when every other edge
// reads the corrupted run. A new top N re-evaluates the kept scores. Runs on a worker thread with progress and
// Cancel; Export JSON writes the circuit's edges with EAP-IG's names.
// Math: model/analysis/gradients/edge_attribution.h (runEdgeAttribution, selectCircuitEdges, evaluateCircuit).

#include "model/analysis/gradients/edge_attribution.h"
#include "views/common/background_tool.h"

#include <QWidget>
#include <memory>
#include <optional>

class QComboBox;
class QLabel;
class QSpinBox;

namespace attnscope {

class CircuitInputs;
class EdgeGraphPlot;

class EdgeAttributionView : public QWidget {
    Q_OBJECT
public:
    /// `inputs` (the prompts and the metric) must outlive the view.
    explicit EdgeAttributionView(CircuitInputs* inputs, QWidget* parent = nullptr);
    void setContext(std::shared_ptr<const Model> model);

    void setMethod(EdgeAttributionMethod method);
    EdgeAttributionMethod method() const;
    /// EAP-IG's interpolation steps (default 5).
    void setSteps(int steps);
    /// The circuit's size: the top N edges by |score| (default 200). With scores shown, re-evaluates them.
    void setTopEdges(int n);

    /// Scores every edge, keeps the top N and evaluates them, in the background. Input problems go to statusText().
    void run();
    void cancel() { tool_.cancel(); }
    BackgroundTask& task() { return tool_.task(); }
    /// The scores of the last run.
    const std::optional<EdgeAttribution>& attribution() const { return attribution_; }
    /// The circuit shown: indices into attribution()->graph.edges, largest |score| first.
    const std::vector<int>& circuit() const { return circuit_; }
    const std::optional<CircuitFaithfulness>& faithfulness() const { return faithfulness_; }
    /// "The top 200 of 1 234 edges recover 87.3 % of the metric: …".
    QString faithfulnessText() const;
    QString statusText() const { return tool_.statusText(); }
    EdgeGraphPlot* plot() const { return plot_; }
    /// Writes {"edge_attribution": {method, steps, metric, position, clean, corrupt, top, faithfulness, edges:
    /// [{edge, sender, receiver, score}]}} (the circuit's edges, EAP-IG's names). Returns "" or the error.
    QString exportJson(const QString& path) const;
    /// The method, steps and top N under the Circuits tab's session keys ("eap_method", "eap_steps", "eap_top").
    void saveSettings(QJsonObject& state) const { tool_.settings().save(state); }
    void restoreSettings(const PanelStateReader& reader) { tool_.settings().restore(reader); }

private:
    /// Keeps the top N of the scores shown and evaluates them in the background.
    void reselect();
    void show(std::vector<int> circuit, CircuitFaithfulness faithfulness);

    CircuitInputs* inputs_;
    std::shared_ptr<const Model> model_;
    PatchingRuns runs_; ///< the runs the scores were computed on (re-evaluation)
    PatchingMetric metric_;
    QString metricDescription_;
    std::optional<EdgeAttribution> attribution_;
    std::vector<int> circuit_;
    std::optional<CircuitFaithfulness> faithfulness_;
    QComboBox* methodCombo_;
    QSpinBox* steps_;
    QSpinBox* top_;
    QLabel* faithfulnessLine_;
    EdgeGraphPlot* plot_;
    BackgroundTool tool_;
};

} // namespace attnscope
