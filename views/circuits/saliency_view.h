#pragma once
// The saliency sub-tab of the Circuits tab: how much each token of the clean prompt contributes to the tab's
// metric (input attribution): integrated gradients (the Riemann midpoint rule over `steps` points from a baseline:
// the zero embedding or one token's at every position) or gradient × input. The tokens are drawn as chips on the
// red–blue diverging map (TokenChips); the line under them checks completeness: Σ attributions against
// metric(input) − metric(baseline) and the error. Runs on a worker thread with progress and Cancel.
// Math: model/analysis/gradients/input_attribution.h (attributeInput).

#include "model/analysis/gradients/input_attribution.h"
#include "views/common/background_tool.h"

#include <QWidget>
#include <memory>
#include <optional>

class QComboBox;
class QLabel;
class QSpinBox;

namespace attnscope {

class CircuitInputs;
class TokenChips;
class TokenPicker;

class SaliencyView : public QWidget {
    Q_OBJECT
public:
    /// `inputs` (the clean prompt and the metric) must outlive the view.
    explicit SaliencyView(CircuitInputs* inputs, QWidget* parent = nullptr);
    void setContext(std::shared_ptr<const Model> model);

    void setMethod(SaliencyMethod method);
    SaliencyMethod method() const;
    /// Integrated gradients' interpolation points (default 32).
    void setSteps(int steps);
    /// The baseline: the zero embedding (−1, the default) or this token's embedding at every position.
    void setBaselineToken(int token);
    /// The baseline token's field (shown with "baseline: token").
    TokenPicker* baselinePicker() const { return baselineToken_; }

    /// Starts the attribution in the background (replacing a running one). Input problems go to statusText().
    void run();
    void cancel() { tool_.cancel(); }
    BackgroundTask& task() { return tool_.task(); }
    const std::optional<InputAttribution>& attribution() const { return attribution_; }
    TokenChips* chips() const { return chips_; }
    /// "Σ attributions = …, metric(input) − metric(baseline) = … − … = …, error …".
    QString completenessText() const;
    QString statusText() const { return tool_.statusText(); }
    /// The method, steps and baseline under the Circuits tab's session keys ("saliency_method", "ig_steps",
    /// "baseline", "baseline_token").
    void saveSettings(QJsonObject& state) const { tool_.settings().save(state); }
    void restoreSettings(const PanelStateReader& reader);

private:
    void updateInputs();

    CircuitInputs* inputs_;
    std::shared_ptr<const Model> model_;
    std::optional<InputAttribution> attribution_;
    QComboBox* methodCombo_;
    QSpinBox* steps_;
    QComboBox* baselineCombo_;
    TokenPicker* baselineToken_;
    TokenChips* chips_;
    QLabel* completeness_;
    BackgroundTool tool_;
};

} // namespace attnscope
