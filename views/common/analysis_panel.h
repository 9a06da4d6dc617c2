#pragma once
// Base class of the main window's analysis tabs (attention steps, residual/DLA, logit lens,
// projections, ...). A panel is handed the open model and the last forward pass and redraws;
// it owns no model state and never runs long model math on the GUI thread (anything slower than a frame
// runs as a BackgroundTool job, views/common/background_tool.h, with progress and Cancel).
// Sessions (File → Save Session) store each panel's settings through saveState()/restoreState():
// what the user chose (tokens, k, modes, sub-tab), never results; read values with PanelStateReader
// (views/common/panel_state.h), which reports what it cannot use.

#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"

#include <QJsonObject>
#include <QStringList>
#include <QWidget>
#include <memory>

namespace attnscope {

class AnalysisPanel : public QWidget {
    Q_OBJECT
public:
    explicit AnalysisPanel(QWidget* parent = nullptr) : QWidget(parent) {}
    /// Tab title.
    virtual QString title() const = 0;
    /// The model or the forward pass changed. `cache` is null until a prompt has run; `model` is
    /// null when nothing is open. Called on the GUI thread.
    virtual void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                            const QStringList& tokenLabels) = 0;
    /// The selected layer/head changed (from the selectors, the keyboard or the head grid).
    virtual void setSelectedHead(int layer, int head) { Q_UNUSED(layer); Q_UNUSED(head); }

    /// The panel's settings as JSON, for a session file (restoreState() reads it back). Panels
    /// without settings keep the default (an empty object).
    virtual QJsonObject saveState() const { return {}; }
    /// Applies settings written by saveState() — possibly by another version or for another model —
    /// after setContext() got the session's model and forward pass: every valid value is applied; for
    /// each one that cannot be, a line naming the panel and the value is appended to *problems (may
    /// be null). Absent keys keep the current setting.
    virtual void restoreState(const QJsonObject& state, QStringList* problems) { Q_UNUSED(state); Q_UNUSED(problems); }
    /// Blocks (processing events) until the panel's background work is done (screenshots, tests).
    virtual void waitForIdle() {}

    /// The second model the window's session opened (model comparison, stitching; null before one). Panels
    /// never open models themselves: they ask with secondModelRequested. Default: ignored.
    virtual void setSecondModel(std::shared_ptr<const Model> model) { Q_UNUSED(model); }
    /// How opening the second model goes, for the panel that asked: progress, or the end of a failed or
    /// cancelled load (then `error` is set, or empty for a cancel).
    struct SecondModelStatus {
        QString path;
        bool loading = false;
        qint64 done = 0, total = 0;
        QString what;  ///< the loader's current step while loading
        QString error; ///< after a failed load ("<file>: <problem>")
    };
    virtual void setSecondModelStatus(const SecondModelStatus& status) { Q_UNUSED(status); }

signals:
    /// Ask the window to open `nameOrPath` (a path or a model name: the window resolves it) as the second model.
    void secondModelRequested(const QString& nameOrPath);
    /// Ask the window to stop opening the second model.
    void secondModelCancelRequested();
    /// Ask the window to select (layer, head) and show its attention heatmap.
    void headRequested(int layer, int head);
    /// A line for the status bar.
    void statusMessage(const QString& text);
};

} // namespace attnscope
