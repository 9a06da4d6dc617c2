#pragma once
// "Circuits" tab: the causal and path-level tools of circuit tracing (issue 14). The shared inputs (clean and
// corrupted prompts with both tokenizations, metric, direction) sit above seven sub-tabs:
//   Patching      activation patching and ablation sweeps as heatmaps (PatchingView)
//   Path patching sender × receiver tables (PathPatchingView)
//   Saliency      each prompt token's attribution to the metric: integrated gradients, gradient × input (SaliencyView)
//   Edge attribution  the circuit of the top-N edges by EAP or EAP-IG, drawn, with its faithfulness (EdgeAttributionView)
//   Flow          information-flow routes of the last run (FlowView)
//   Attend        why a head attends where it does: the score split (AttendView)
//   Composition   Q/K/V composition scores, baselines and virtual OV circuits (CompositionView)
// Every long job runs on a worker thread with progress and Cancel. Help: resources/help/circuits.md.

#include "model/features/dictionary_set.h"
#include "views/common/analysis_panel.h"

class QTabWidget;

namespace attnscope {

class AttendView;
class CircuitInputs;
class CompositionView;
class EdgeAttributionView;
class FlowView;
class PathPatchingView;
class PatchingView;
class SaliencyView;

class CircuitsPanel : public AnalysisPanel {
    Q_OBJECT
public:
    explicit CircuitsPanel(QWidget* parent = nullptr);
    QString title() const override { return tr("Circuits"); }
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                    const QStringList& tokenLabels) override;
    /// The transcoder set the Attend sub-tab traces a score in (the Graph tab's choice; null: none).
    void setTranscoders(std::shared_ptr<const DictionarySet> set, const QString& path);
    /// The Attend sub-tab follows the selected head.
    void setSelectedHead(int layer, int head) override;
    /// Sub-tab, prompts, metric kind and tokens, direction, patching activation/ablation. Restoring
    /// {"autorun": true} also runs the shown sub-tab's tool (screenshots of results).
    QJsonObject saveState() const override;
    void restoreState(const QJsonObject& state, QStringList* problems) override;
    void waitForIdle() override;

    CircuitInputs* inputs() const { return inputs_; }
    PatchingView* patching() const { return patching_; }
    PathPatchingView* pathPatching() const { return pathPatching_; }
    SaliencyView* saliency() const { return saliency_; }
    EdgeAttributionView* edgeAttribution() const { return edges_; }
    FlowView* flow() const { return flow_; }
    AttendView* attend() const { return attend_; }
    CompositionView* composition() const { return composition_; }
    QTabWidget* subTabs() const { return tabs_; }

private:
    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    CircuitInputs* inputs_;
    QTabWidget* tabs_;
    PatchingView* patching_;
    PathPatchingView* pathPatching_;
    SaliencyView* saliency_;
    EdgeAttributionView* edges_;
    FlowView* flow_;
    AttendView* attend_;
    CompositionView* composition_;
};

} // namespace attnscope
