#pragma once
// The head-composition sub-tab of the Circuits tab (Elhage et al. 2021): the Q-, K- or V-composition score of
// every pair of heads in different layers as a heatmap (earlier head × later head), the strongest pairs in a
// table beside the baseline of random matrices of the same shapes (and their ratio), and the virtual OV circuit
// of the selected pair in token space (top token pairs). Scores are computed once per model and kind on a worker
// thread (compositionScores caches them). Math: model/analysis/circuits/composition_scores.h.

#include "model/analysis/circuits/composition_scores.h"
#include "views/common/background_tool.h"

#include <QWidget>
#include <memory>

class QComboBox;
class QSpinBox;
class QTableWidget;

namespace attnscope {

class MatrixHeatmap;

class CompositionView : public QWidget {
    Q_OBJECT
public:
    /// Columns of pairTable().
    enum Column { RankColumn, FromColumn, ToColumn, ScoreColumn, BaselineColumn, RatioColumn, ColumnCount };

    explicit CompositionView(QWidget* parent = nullptr);
    void setContext(std::shared_ptr<const Model> model);
    void setKind(CompositionKind kind);
    CompositionKind kind() const;
    /// Computes (or fetches) the scores of kind() in the background.
    void run();
    /// The virtual OV circuit of head (layerA, headA) then (layerB, headB), top `k` token pairs, in the background.
    void showVirtualOv(int layerA, int headA, int layerB, int headB);
    BackgroundTask& task() { return tool_.task(); }
    BackgroundTask& ovTask() { return ovTool_.task(); }
    std::shared_ptr<const CompositionScores> scores() const { return scores_; }
    MatrixHeatmap* heatmap() const { return heatmap_; }
    /// The strongest pairs, highest score first (at most 100 rows).
    QTableWidget* pairTable() const { return pairs_; }
    /// The virtual OV circuit's top token pairs (#, source token, output token, score).
    QTableWidget* ovTable() const { return ov_; }
    QString baselineText() const { return tool_.statusText(); }
    QString ovTitle() const { return ovTool_.statusText(); }

private:
    void redraw();

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const CompositionScores> scores_;
    QComboBox* kind_;
    MatrixHeatmap* heatmap_;
    QTableWidget* pairs_;
    QSpinBox* k_;
    QTableWidget* ov_;
    BackgroundTool tool_;   ///< the scores; its status line states the baseline
    BackgroundTool ovTool_; ///< the virtual OV circuit; its status line is the table's title
};

} // namespace attnscope
