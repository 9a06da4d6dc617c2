#pragma once
// "Why does this head attend there?" — the sub-tab of the Circuits tab that splits head h's pre-softmax score
// from query position i to key position j into (query-side component, key-side component) terms
// (splitAttentionScore: each side through ln_1 with its cached scale, RoPE for rotary models), drawn as a matrix
// heatmap whose cells sum to the cached scaled score; the check line prints Σ terms, the score and |error|.

#include "model/analysis/circuits/attention_score_split.h"
#include "views/common/background_tool.h"

#include <QWidget>
#include <memory>
#include <optional>

class QSpinBox;

namespace attnscope {

class MatrixHeatmap;

class AttendView : public QWidget {
    Q_OBJECT
public:
    explicit AttendView(QWidget* parent = nullptr);
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache, const QStringList& labels);
    /// Head and positions (clamped to the model and prompt; key ≤ query).
    void setQuery(int layer, int head, int query, int key);
    /// Splits the score in the background.
    void run();
    BackgroundTask& task() { return tool_.task(); }
    const std::optional<AttentionScoreSplit>& split() const { return split_; }
    MatrixHeatmap* heatmap() const { return heatmap_; }
    /// "Σ terms = … ; cached score = … ; check error |Σ − score| = …; attention weight …".
    QString checkText() const { return tool_.statusText(); }

private:
    void redraw();

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    QStringList labels_;
    std::optional<AttentionScoreSplit> split_;
    QSpinBox* layer_;
    QSpinBox* head_;
    QSpinBox* query_;
    QSpinBox* key_;
    MatrixHeatmap* heatmap_;
    BackgroundTool tool_; ///< its status line is the check line
};

} // namespace attnscope
