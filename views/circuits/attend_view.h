#pragma once
// "Why does this head attend there?" — the sub-tab of the Circuits tab that splits head h's pre-softmax score
// from query position i to key position j into (query-side component, key-side component) terms
// (splitAttentionScore: each side through ln_1 with its cached scale, RoPE for rotary models), drawn as a matrix
// heatmap whose cells sum to the cached scaled score; the check line prints Σ terms, the score and |error|.
// With a transcoder set chosen (the Graph tab's, setTranscoders), the same cell is also traced in features beside it:
// QkTracer (model/analysis/graphs/qk_trace.h) in the prompt's replacement model, its largest (q-side, k-side) pairs and
// marginals in QkTraceTables with the check line; without one, a line says how to get it.

#include "model/analysis/circuits/attention_score_split.h"
#include "model/analysis/graphs/qk_trace.h"
#include "model/features/dictionary_set.h"
#include "views/common/background_tool.h"
#include "views/graphs/qk_trace_tables.h"

#include <QWidget>
#include <memory>
#include <optional>

class QLabel;
class QSpinBox;

namespace attnscope {

class MatrixHeatmap;
struct QkTracerOfPrompt;

class AttendView : public QWidget {
    Q_OBJECT
public:
    explicit AttendView(QWidget* parent = nullptr);
    ~AttendView() override;
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache, const QStringList& labels);
    /// Head and positions (clamped to the model and prompt; key ≤ query).
    void setQuery(int layer, int head, int query, int key);
    /// The transcoder set the feature-level trace reads (the Graph tab's; null: none, the component split only) and its
    /// path, for the UI.
    void setTranscoders(std::shared_ptr<const DictionarySet> set, const QString& path);
    /// Splits the score in the background, and with a transcoder set traces it in features too.
    void run();
    BackgroundTask& task() { return tool_.task(); }
    BackgroundTask& traceTask() { return qkTool_.task(); }
    /// The last feature-level trace (none without a set).
    const std::optional<QkTrace>& trace() const { return trace_; }
    const QkTraceTables& traceTables() const { return qk_; }
    /// The feature-level pane (shown only with a set) and the line saying what the trace needs (shown without one).
    QWidget* tracePane() const { return tracePane_; }
    QLabel* traceHint() const { return hint_; }
    /// The trace's check line (score = Σ pairs + constants; check error).
    QString traceCheckText() const { return qkTool_.statusText(); }
    const std::optional<AttentionScoreSplit>& split() const { return split_; }
    MatrixHeatmap* heatmap() const { return heatmap_; }
    /// "Σ terms = … ; cached score = … ; check error |Σ − score| = …; attention weight …".
    QString checkText() const { return tool_.statusText(); }

private:
    void redraw();
    /// Traces (layer, head, query, key) in the transcoders' features in the background.
    void traceInFeatures(int layer, int head, int query, int key);

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
    std::shared_ptr<const DictionarySet> set_;
    QString setPath_;
    std::shared_ptr<const QkTracerOfPrompt> tracer_; ///< the replacement model of the prompt and set, made with the first trace
    std::optional<QkTrace> trace_;
    QkTraceTables qk_;
    QWidget* tracePane_ = nullptr;
    QLabel* traceTitle_ = nullptr;
    QLabel* hint_ = nullptr;
    BackgroundTool qkTool_; ///< its status line is the trace's check line
};

} // namespace attnscope
