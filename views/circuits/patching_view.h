#pragma once
// The activation-patching sub-tab of the Circuits tab: pick the activation (resid_pre, attn_out, mlp_out by
// layer × position; z, q, k, v, pattern per head, optionally by position) and the ablation (none = patching
// from the other run; zero, mean over positions, mean over reference prompts, resample from the corrupted run),
// run the sweep on a worker thread and watch the heatmap fill in layer by layer; Cancel stops it. The values are
// normalised as (m − m_corrupt) / (m_clean − m_corrupt), both endpoints shown above the heatmap.
// The method: activation patching (one patched run per cell), or its estimate from one backward pass, attribution
// patching or AtP*; "compare" runs both for the same settings and shows the two heatmaps side by side on one colour
// scale, with a scatter of estimate against actual and their correlation (EstimateScatter) below. The estimates
// patch only (no ablations); a gradient that is not finite is shown as the message that names its hook.
// Math: model/analysis/circuits/activation_patching.h (runPatchingSweep, patchingGrid),
// model/analysis/gradients/attribution_patching.h (runAttributionPatching).

#include "model/analysis/circuits/activation_patching.h"
#include "views/common/background_tool.h"
#include "views/figures/matrix_heatmap.h"

#include <QWidget>
#include <memory>
#include <optional>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;

namespace attnscope {

class CircuitInputs;
class EstimateScatter;

class PatchingView : public QWidget {
    Q_OBJECT
public:
    /// `inputs` (the prompts, metric and direction) must outlive the view.
    explicit PatchingView(CircuitInputs* inputs, QWidget* parent = nullptr);
    void setContext(std::shared_ptr<const Model> model);

    void setHook(PatchHook hook);
    PatchHook hook() const;
    void setByPosition(bool on);
    bool byPosition() const;
    void setAblation(AblationKind kind);
    AblationKind ablation() const;
    /// Reference prompts of the reference-mean ablation, separated by " | ".
    void setReferencePrompts(const QString& text);
    /// Show normalised values (the default) or the raw metric.
    void setNormalised(bool on);
    /// Activation patching (the default), attribution patching or AtP*. The estimates patch only: choosing
    /// one sets the ablation to none and disables it.
    void setMethod(PatchingMethod method);
    PatchingMethod method() const;
    /// With attribution patching or AtP*: also run activation patching and compare the two.
    void setCompare(bool on);
    bool compare() const;

    /// Starts the sweep in the background (cancelling a running one). Input problems go to statusText().
    void run();
    void cancel() { tool_.cancel(); }
    BackgroundTask& task() { return tool_.task(); }
    /// The sweep shown: complete after a run, partial while one runs (cells not done are NaN in the grid).
    const std::optional<PatchingSweep>& sweep() const { return sweep_; }
    /// Cells shown so far (counts the progressive updates' cells).
    int cellsShown() const { return sweep_ ? sweep_->cellsDone : 0; }
    MatrixHeatmap* heatmap() const { return heatmap_; }
    /// The attribution-patching (or AtP*) sweep of the last run with an estimate method, unset otherwise.
    const std::optional<PatchingSweep>& estimate() const { return estimate_; }
    /// Why the last estimate failed (a gradient that is not finite, …), "" when it did not.
    QString estimateError() const { return estimateError_; }
    MatrixHeatmap* estimateHeatmap() const { return estimateHeatmap_; }
    EstimateScatter* scatter() const { return scatter_; }
    /// The scatter point last clicked, described ("" before a click).
    QString selectedPointText() const;
    /// "clean: m = …, corrupted: m = …" with the metric named, as shown above the heatmap.
    QString endpointsText() const;
    /// The line under the controls: progress, cancellation, the error of the last run.
    QString statusText() const { return tool_.statusText(); }
    /// The activation, by-position, ablation, method and compare settings under the Circuits tab's session keys
    /// ("activation", "by_position", "ablation", "method", "compare").
    void saveSettings(QJsonObject& state) const { tool_.settings().save(state); }
    void restoreSettings(const PanelStateReader& reader);

signals:
    void statusMessage(const QString& text);
    /// The heatmap was redrawn with `cells` cells done (each progressive update, the final result).
    void cellsShownChanged(int cells);

private:
    void redraw();
    MatrixFigure sweepFigure(const PatchingSweep& sweep, bool normalised) const;
    void methodChanged();

    CircuitInputs* inputs_;
    std::shared_ptr<const Model> model_;
    std::optional<PatchingSweep> sweep_;
    std::optional<PatchingSweep> estimate_;
    QString estimateError_;
    QStringList positionLabels_;
    QString metricDescription_;
    QComboBox* hookCombo_;
    QCheckBox* byPosition_;
    QComboBox* ablationCombo_;
    QLineEdit* references_;
    QCheckBox* normalised_;
    QComboBox* methodCombo_;
    QCheckBox* compare_;
    QLabel* endpoints_;
    MatrixHeatmap* heatmap_;
    MatrixHeatmap* estimateHeatmap_;
    EstimateScatter* scatter_;
    QLabel* pointInfo_;
    QWidget* comparison_;
    BackgroundTool tool_;
};

/// Row and column labels and titles of a sweep's grid (patchingGrid): layers × positions, layers × heads, or
/// "L0H0"… × positions; `positions` labels the prompt's positions.
struct PatchingAxes {
    QStringList rows, cols;
    QString rowTitle, colTitle;
};
PatchingAxes patchingAxes(const ModelConfig& cfg, const PatchingOptions& options, const QStringList& positions);

} // namespace attnscope
