#pragma once
// The "Fine-tuning directions" view of the Compare tab (Dar et al. 2022, "Analyzing Transformers in
// Embedding Space", section "Interpreting fine-tuning"; math in model/analysis/comparison/finetune_directions.h): for the
// window's model (A, before) and the second model (B, after) of one architecture,
//  - every head and FF neuron ranked by ‖Δθ‖ / ‖θ_A‖, with the parts (Q, K, V, O; key, gate, value);
//  - the whole-model overview: relative change per head [layer × head], per neuron [layer × neuron] and per
//    weight tensor;
//  - one click on a component shows its Δ in embedding space: the top and bottom tokens of Δv·W_U (FF value) or
//    E·Δk (FF key), the top token pairs of E·ΔW_OV·W_U (or E·ΔW_QK·Eᵀ) raised and lowered, with E = A's W_E and
//    W_U A's unembedding (= W_Eᵀ when tied), as the Embedding space tab reads each side (stated in the view);
//  - Export CSV (the whole ranking and every tensor) and Export PNG (the overview heatmaps and the ranking).
// The ranking and each projection run in the background with progress and Cancel.

#include "model/analysis/comparison/finetune_directions.h"
#include "views/common/background_tool.h"

#include <QJsonObject>
#include <QWidget>
#include <memory>

class QComboBox;
class QLabel;
class QTabWidget;
class QTableWidget;

namespace attnscope {

class MatrixHeatmap;
class PanelStateReader;

class FinetuneView : public QWidget {
    Q_OBJECT
public:
    enum class Filter { All, Heads, Neurons };
    /// Rows of the ranking table (the CSV export has every component).
    static constexpr int kShownRows = 500;

    explicit FinetuneView(QWidget* parent = nullptr);
    /// A = before (the window's model), B = after (the second model); ranks when both are set and shown.
    void setModels(std::shared_ptr<const Model> before, std::shared_ptr<const Model> after);
    void setFilter(Filter filter);
    /// Shows component (kind, layer, index) in embedding space: for a head `parameter` OV or QK, for a neuron
    /// FFValue or FFKey (other values pick the kind's first).
    void showComponent(ComponentChange::Kind kind, int layer, int index, ChangedParameter parameter);
    /// Computes the ranking now (it also runs when the view is shown with a new pair).
    void rank();
    void waitForIdle();

    const std::shared_ptr<const FinetuneRanking>& ranking() const { return ranking_; }
    QLabel* summary() const { return summary_; }
    QTableWidget* rankingTable() const { return table_; }
    MatrixHeatmap* headOverview() const { return heads_; }
    MatrixHeatmap* neuronOverview() const { return neurons_; }
    QTableWidget* tensorTable() const { return tensors_; }
    QLabel* projectionSummary() const { return projSummary_; }
    QTableWidget* projectionTop() const { return projTop_; }
    QTableWidget* projectionBottom() const { return projBottom_; }

    /// The whole ranking (every head and neuron) to `path` and every tensor to "<base>_tensors.csv".
    QString exportCsv(const QString& path) const;
    /// The overview heatmaps ("<base>_heads.png", "<base>_neurons.png") and the shown ranking ("<base>_ranking.png").
    QString exportPng(const QString& path) const;

    QJsonObject saveState() const;
    void restoreState(const QJsonObject& state, const PanelStateReader& reader);

signals:
    void statusMessage(const QString& text);
    /// Show the head in the window (double click on a head).
    void headRequested(int layer, int head);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void buildUi();
    void clear(const QString& why);
    void fillRanking();
    void fillOverview();
    void project();
    void updateParameterChoices();

    std::shared_ptr<const Model> before_, after_;
    std::shared_ptr<const FinetuneRanking> ranking_;
    bool dirty_ = true;
    ComponentChange::Kind kind_ = ComponentChange::Kind::Head;
    int layer_ = -1, index_ = -1;
    BackgroundTool rankTool_;    ///< the ranking; its status line is summary_
    BackgroundTool projectTool_; ///< one component's Δ; its status line is projSummary_
    QLabel* summary_ = nullptr;
    QComboBox* filter_ = nullptr;
    QComboBox* parameter_ = nullptr;
    QTableWidget* table_ = nullptr;
    QTabWidget* overview_ = nullptr;
    MatrixHeatmap* heads_ = nullptr;
    MatrixHeatmap* neurons_ = nullptr;
    QTableWidget* tensors_ = nullptr;
    QLabel* projSummary_ = nullptr;
    QTableWidget* projTop_ = nullptr;
    QTableWidget* projBottom_ = nullptr;
};

} // namespace attnscope
