#pragma once
// "Logit attribution" tab: what every head and MLP wrote into the residual stream at a chosen
// position, as a layers × (heads + MLP) heatmap of its L2 norm or its direct logit attribution (DLA)
// to a token or a logit difference; the cumulative logit after each component; the check that the
// components sum to the model's logit; plus the head-detector and ablation sub-tabs.
// Math: model/analysis/{residual_decomposition,direct_logit_attribution,head_detectors,ablation}.h.

#include "model/analysis/residual/direct_logit_attribution.h"
#include "views/common/analysis_panel.h"
#include "views/figures/matrix_heatmap.h"

#include <optional>

class QComboBox;
class QLabel;
class QTableWidget;
class QTabWidget;
class QCPTextElement;

namespace attnscope {

class AblationView;
class ChartFigure;
class HeadDetectorsView;
class TokenPicker;

class ResidualPanel : public AnalysisPanel {
    Q_OBJECT
public:
    /// What the heatmap shows per component.
    enum class Measure { Norm, DlaToken, DlaDifference };
    /// Columns of componentsTable(): forward-order index, name, L2 norm, DLA, cumulative logit (values
    /// also in Qt::UserRole). Sorted by the index (forward order) until the user clicks a header.
    enum Column { OrderColumn, NameColumn, NormColumn, DlaColumn, CumulativeColumn, ColumnCount };

    explicit ResidualPanel(QWidget* parent = nullptr);
    QString title() const override { return tr("Logit attribution"); }
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                    const QStringList& tokenLabels) override;
    /// Outlines the head in the detector tab's head grid.
    void setSelectedHead(int layer, int head) override;
    /// Position, measure, tokens, sub-tab, detector overlay and ablated heads.
    QJsonObject saveState() const override;
    void restoreState(const QJsonObject& state, QStringList* problems) override;
    /// Waits for the detector scores (when shown) and a running ablation.
    void waitForIdle() override;

    /// Position whose residual is decomposed (clamped; -1 = the last position, the default).
    void setPosition(int position);
    int position() const;
    void setMeasure(Measure measure);
    Measure measure() const;
    TokenPicker* targetPicker() const { return target_; }
    TokenPicker* counterPicker() const { return counter_; }

    /// Token attributed: the picker's token, or the model's top prediction at the position when the
    /// picker is empty or unresolved. -1 without a cache.
    /// "logit[t]" or "logit[t] − logit[t′]" for the current target(s); "" without a run.
    QString targetDescription() const;
    int targetToken() const;
    /// The counter token in difference mode (-1 otherwise or when unresolved).
    int counterToken() const;
    /// The attribution behind the views (nullopt before a prompt ran).
    const std::optional<DirectLogitAttribution>& attribution() const { return dla_; }
    const std::optional<ResidualDecomposition>& decomposition() const { return decomposition_; }

    MatrixHeatmap* heatmap() const { return heatmap_; }
    QCustomPlot* cumulativePlot() const { return cumulative_; }
    /// The cumulative chart as a figure (zoom, hover, menu, empty state).
    ChartFigure* cumulativeFigure() const { return chart_; }
    QTableWidget* componentsTable() const { return table_; }
    /// "Σ components = …" check line and the reconstruction-error line as shown.
    QString checkText() const;
    QString reconstructionText() const;
    HeadDetectorsView* detectors() const { return detectors_; }
    AblationView* ablation() const { return ablation_; }
    QTabWidget* subTabs() const { return subTabs_; }

    /// Write the heatmap / the cumulative chart (format from the suffix: png, svg, pdf) or every
    /// component's numbers as CSV. Return an error or "".
    QString exportHeatmap(const QString& path, QSize size = {900, 700}, double scale = 1.0) const;
    QString exportCumulative(const QString& path, QSize size = {1200, 600}, double scale = 1.0) const;
    QString exportComponentsCsv(const QString& path) const;

    /// The DLA convention, as the tooltips state it.
    static QString dlaConvention();

signals:
    /// Forwarded from the head-detector view: overlay scores for the main window's head grid.
    void headScoresChanged(const Matrix& scores, const QString& name);

private:
    void buildUi();
    void refresh();
    void fillHeatmap();
    void fillCumulative();
    void fillTable();
    ValueTable chartValues() const;
    QString chartTooltip(const QPoint& pos) const;
    void exportDialog(bool chart);

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    // the top prediction at a position whose logits the cache does not keep (targetToken)
    mutable const ActivationCache* topOf_ = nullptr;
    mutable int topPosition_ = -1, topId_ = -1;
    QStringList labels_;
    std::optional<ResidualDecomposition> decomposition_;
    std::optional<DirectLogitAttribution> dla_;

    QComboBox* positionCombo_ = nullptr;
    QComboBox* measureCombo_ = nullptr;
    TokenPicker* target_ = nullptr;
    TokenPicker* counter_ = nullptr;
    QLabel* targetLabel_ = nullptr;
    QTabWidget* subTabs_ = nullptr;
    MatrixHeatmap* heatmap_ = nullptr;
    QCustomPlot* cumulative_ = nullptr;
    QCPTextElement* chartTitle_ = nullptr;
    ChartFigure* chart_ = nullptr;
    QTableWidget* table_ = nullptr;
    QLabel* check_ = nullptr;
    QLabel* reconstruction_ = nullptr;
    HeadDetectorsView* detectors_ = nullptr;
    AblationView* ablation_ = nullptr;
};

} // namespace attnscope
