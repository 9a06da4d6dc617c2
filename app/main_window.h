#pragma once
// The main window: prompt box and Run, model info, layer/head selectors, the attention heatmap,
// the head grid and the top next-token predictions. Owns no model math: ModelSession runs it
// off the GUI thread and the views are handed the results. With a residuals-only cache (big model or
// long prompt) the selected layer is recomputed in the background ("computing layer N…"; a newer
// selection cancels an older request) and the head grid fills in layer by layer behind it.
// Models open from File → Open… (files and folders), the model picker (recent and installed models),
// File → Open Recent, a drop onto the window or by name; sessions save and restore everything shown
// (app/session_controller.h); a change of the open model's files on disk offers a reload.

#include "app/model_session.h"
#include "app/status_line.h"
#include "views/common/background_task.h"

#include <QMainWindow>
#include <QPointer>
#include <optional>

class QLineEdit;
class QCheckBox;
class QPushButton;
class QSpinBox;
class QLabel;
class QProgressBar;
class QTabWidget;
class QAction;
class QMenu;

namespace attnscope {

class AnalysisPanel;
class AttentionHeatmap;
class HeadGrid;
class HeadMetricsView;
class HelpBrowser;
class ModelFileWatcher;
class ModelPickerDialog;
class SessionController;
class TopTokensView;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    /// Desktop: the user's window. Offscreen: a window for --screenshot that neither reads nor writes
    /// QSettings (prompt, head, last session, recent models, layout) and opens no dialogs (errors go to
    /// the status bar and ModelSession's signals; a prompt longer than n_ctx runs its last n_ctx tokens).
    enum class Mode { Desktop, Offscreen };
    explicit MainWindow(QWidget* parent = nullptr, Mode mode = Mode::Desktop);
    ~MainWindow() override;

    /// Opens a model in the background and runs `prompt` on it (the saved prompt if empty).
    /// `nameOrPath` is a path or a model name (model/discovery/model_name.h: "gpt2", "ollama:…", "demo");
    /// a name that resolves to nothing is an error dialog. `tokenizerPath`: the tokenizer.bin of a llama2.c
    /// checkpoint (--tokenizer), when it is not beside the checkpoint under that name.
    void openModel(const QString& nameOrPath, const QString& prompt = {}, const QString& tokenizerPath = {});
    /// Opens a session file (.attnscope) or else a model (openModel): drops, Open Recent, File → Open….
    void openPath(const QString& nameOrPath);
    /// Opens an attribution graph file (Neuronpedia's layout, graph_document.h) in the Graph tab and shows that tab
    /// (attnscope --open-graph FILE); during a session restore, once it has finished. It needs no model; a file that
    /// cannot be read says why in the tab.
    void openGraphFile(const QString& path);
    /// Reads feature labels (Neuronpedia's explanation exports or CSVs: feature_labels.h; the first label of a feature
    /// wins) and gives them to the Features and Graph tabs, replacing any they had. Returns "" or the error (also shown in a dialog when the window is on screen).
    QString openFeatureLabels(const QStringList& paths);
    /// What the open model was opened by (a name or path as given to openModel).
    QString openedAs() const { return openedAs_; }
    ModelSession& session() { return session_; }
    SessionController& sessions() { return *sessions_; }

    int layer() const;
    int head() const;
    /// Selects a head (clamped to the model's range) and redraws the heatmap.
    void selectHead(int layer, int head);
    void setPrompt(const QString& text);
    /// The prompt box's text.
    QString prompt() const;
    /// Sets the BOS switch without running the prompt.
    void setPrependBos(bool on);
    /// The BOS switch.
    bool prependBos() const;
    void runPrompt();
    /// Adds an analysis tab; it is kept up to date with the model, the cache and the selected head.
    void addPanel(AnalysisPanel* panel);
    const QList<AnalysisPanel*>& panels() const { return panels_; }
    QTabWidget* tabs() const { return tabs_; }
    AttentionHeatmap* heatmap() const { return heatmap_; }
    HeadGrid* headGrid() const { return headGrid_; }
    /// The Attention tab's head metrics and scatter (views/attention/head_metrics_view.h).
    HeadMetricsView* headMetrics() const { return headMetrics_; }
    TopTokensView* topTokens() const { return topTokens_; }
    /// Writes the current heatmap (format from the suffix: .png/.svg/.pdf). Returns an error or "".
    QString exportCurrentHeatmap(const QString& path, QSize size, double scale);
    /// Writes L{layer}_H{head}.{ext} for every head into dir. Returns an error or "".
    QString exportAllHeads(const QString& dir, const QString& ext, QSize size, double scale);
    /// True while a layer of a residuals-only cache is being recomputed (selected layer or head grid).
    bool isComputingLayers() const { return layerTask_.isRunning() || gridTask_.isRunning(); }
    /// Blocks (processing events) until the selected layer is shown and the head grid is complete (tests).
    void waitForLayers();
    /// Blocks until the session, the layers and every panel's background work are done (screenshots).
    void waitForIdle();

    /// The view id of tab `index` / of the current tab (app/view_ids.h).
    QString viewIdAt(int index) const;
    QString currentViewId() const;
    /// Selects the tab with view id `id`; false when there is none.
    bool showView(const QString& id);
    /// The panel with view id `id`, or null.
    AnalysisPanel* panel(const QString& id) const;
    /// Shows the guide of a view (Help → About This View, the tabs' "?" buttons).
    void showHelp(const QString& viewId);
    HelpBrowser* helpBrowser() const { return help_; }
    /// File → Open Recent/Installed…: the model picker (created on first use).
    ModelPickerDialog* showModelPicker();
    /// The Open Recent submenu (rebuilt whenever it is shown).
    QMenu* recentMenu() const { return recentMenu_; }
    ModelFileWatcher* fileWatcher() const { return watcher_; }
    /// Asks whether to reload the model after `file` changed on disk; reloads when the user agrees.
    void askReload(const QString& file);

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    class FeaturesPanel* features_ = nullptr; ///< the Features tab (opens what it asks for through the window)
    class GraphPanel* graph_ = nullptr;       ///< the Graph tab (likewise, for transcoder sets)
    void buildUi();
    void buildMenus();
    void onModelLoaded();
    void onForwardFinished();
    void onBusyChanged(bool busy);
    void showError(const QString& title, const QString& message);
    void updateModelInfo();
    void updateHeatmap();
    void showHead(const std::shared_ptr<const LayerCache>& layerCache);
    void requestLayer(int layer);
    void startGridFill();
    void updateHeadGrid();
    void updateTopTokens();
    void updatePanels();
    void exportHeatmapDialog();
    void exportAllHeadsDialog();
    void openDialog();
    void saveSessionDialog();
    void openSessionDialog();
    void rebuildRecentMenu();
    void buildViewMenu();
    void addHelpButton(int tab);
    void onSessionRestored(const QStringList& problems);
    void moveHead(int dLayer, int dHead);
    void saveSettings() const;

    ModelSession session_;
    bool desktop_ = true; ///< Mode::Desktop
    QString openedAs_;
    QString pendingPrompt_;
    QLineEdit* prompt_ = nullptr;
    QCheckBox* prependBos_ = nullptr;
    std::optional<bool> bosChosen_; ///< set by setPrependBos (sessions): wins over the model default once
    QPushButton* runButton_ = nullptr;
    QPushButton* cancelButton_ = nullptr;
    QSpinBox* layerSpin_ = nullptr;
    QSpinBox* headSpin_ = nullptr;
    QLabel* modelInfo_ = nullptr;
    StatusLine* statusLabel_ = nullptr; ///< finished jobs' messages are temporary (status_line.h)
    QProgressBar* progress_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    AttentionHeatmap* heatmap_ = nullptr;
    HeadGrid* headGrid_ = nullptr;
    HeadMetricsView* headMetrics_ = nullptr;
    TopTokensView* topTokens_ = nullptr;
    QList<QAction*> needsCache_;
    QList<AnalysisPanel*> panels_;
    BackgroundTask layerTask_; ///< recomputes the selected layer (residuals-only caches)
    BackgroundTask gridTask_;  ///< fills the head grid layer by layer, paused while layerTask_ runs
    std::shared_ptr<const LayerCache> shownLayer_; ///< the heatmap's layer, held so panels find it ready
    SessionController* sessions_ = nullptr;
    ModelFileWatcher* watcher_ = nullptr;
    HelpBrowser* help_ = nullptr;
    ModelPickerDialog* picker_ = nullptr;
    QMenu* recentMenu_ = nullptr;
    QMenu* viewMenu_ = nullptr;
    bool askingReload_ = false;
    QPointer<AnalysisPanel> secondRequester_; ///< the panel that asked for the second model (gets its progress)
};

} // namespace attnscope
