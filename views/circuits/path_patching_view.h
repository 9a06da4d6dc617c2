#pragma once
// The path-patching sub-tab of the Circuits tab (Wang et al. 2022, IOI §3.1): senders (empty = every head)
// and receivers (the q, k or v input of chosen heads, or the logits), run on a worker thread; the result is
// the sender × receiver table of the normalised metric (raw values in the hover text's table export), both
// endpoints shown. Math: model/analysis/circuits/path_patching.h (runPathPatching).

#include "model/analysis/circuits/path_patching.h"
#include "views/common/background_tool.h"

#include <QWidget>
#include <memory>
#include <optional>

class QLineEdit;

namespace attnscope {

class CircuitInputs;
class MatrixHeatmap;

class PathPatchingView : public QWidget {
    Q_OBJECT
public:
    explicit PathPatchingView(CircuitInputs* inputs, QWidget* parent = nullptr);
    void setContext(std::shared_ptr<const Model> model);
    /// "L.H,…" (empty = every head) and "L.H.q,…|logits" as the CLI's --senders / --receivers.
    void setSenders(const QString& text);
    void setReceivers(const QString& text);
    void run();
    BackgroundTask& task() { return tool_.task(); }
    const std::optional<PathPatchingResult>& result() const { return result_; }
    MatrixHeatmap* table() const { return table_; }
    QString statusText() const { return tool_.statusText(); }

private:
    void redraw();

    CircuitInputs* inputs_;
    std::shared_ptr<const Model> model_;
    std::optional<PathPatchingResult> result_;
    QString metricDescription_;
    QLineEdit* senders_;
    QLineEdit* receivers_;
    MatrixHeatmap* table_;
    BackgroundTool tool_;
};

} // namespace attnscope
