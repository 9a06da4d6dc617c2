#pragma once
// The main window: prompt box and Run, model info, layer/head selectors, the attention heatmap,
// the head grid and the top next-token predictions. Owns no model math: ModelSession runs it
// off the GUI thread and the views are handed the results. With a residuals-only cache (big model or
// long prompt) the selected layer is recomputed in the background ("computing layer N…"; a newer
// selection cancels an older request) and the head grid fills in layer by layer behind it.

#include "app/model_session.h"
#include "views/background_task.h"

#include <QMainWindow>

class QLineEdit;
class QCheckBox;
class QPushButton;
class QSpinBox;
class QLabel;
class QProgressBar;
class QTabWidget;
class QAction;

namespace attnscope {

class AnalysisPanel;
class AttentionHeatmap;
class HeadGrid;
class TopTokensView;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    /// Opens a model in the background and runs `prompt` on it (the saved prompt if empty).
    void openModel(const QString& path, const QString& prompt = {});
    ModelSession& session() { return session_; }

    int layer() const;
    int head() const;
    /// Selects a head (clamped to the model's range) and redraws the heatmap.
    void selectHead(int layer, int head);
    void setPrompt(const QString& text);
    void runPrompt();
    /// Adds an analysis tab; it is kept up to date with the model, the cache and the selected head.
    void addPanel(AnalysisPanel* panel);
    const QList<AnalysisPanel*>& panels() const { return panels_; }
    QTabWidget* tabs() const { return tabs_; }
    AttentionHeatmap* heatmap() const { return heatmap_; }
    HeadGrid* headGrid() const { return headGrid_; }
    TopTokensView* topTokens() const { return topTokens_; }
    /// Writes the current heatmap (format from the suffix: .png/.svg/.pdf). Returns an error or "".
    QString exportCurrentHeatmap(const QString& path, QSize size, double scale);
    /// Writes L{layer}_H{head}.{ext} for every head into dir. Returns an error or "".
    QString exportAllHeads(const QString& dir, const QString& ext, QSize size, double scale);
    /// True while a layer of a residuals-only cache is being recomputed (selected layer or head grid).
    bool isComputingLayers() const { return layerTask_.isRunning() || gridTask_.isRunning(); }
    /// Blocks (processing events) until the selected layer is shown and the head grid is complete (tests).
    void waitForLayers();

protected:
    void closeEvent(QCloseEvent* event) override;

private:
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
    void openFolderDialog();
    void openFileDialog();
    void moveHead(int dLayer, int dHead);
    void saveSettings() const;

    ModelSession session_;
    QString pendingPrompt_;
    QLineEdit* prompt_ = nullptr;
    QCheckBox* prependBos_ = nullptr;
    QPushButton* runButton_ = nullptr;
    QPushButton* cancelButton_ = nullptr;
    QSpinBox* layerSpin_ = nullptr;
    QSpinBox* headSpin_ = nullptr;
    QLabel* modelInfo_ = nullptr;
    QLabel* statusLabel_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    AttentionHeatmap* heatmap_ = nullptr;
    HeadGrid* headGrid_ = nullptr;
    TopTokensView* topTokens_ = nullptr;
    QList<QAction*> needsCache_;
    QList<AnalysisPanel*> panels_;
    BackgroundTask layerTask_; ///< recomputes the selected layer (residuals-only caches)
    BackgroundTask gridTask_;  ///< fills the head grid layer by layer, paused while layerTask_ runs
    std::shared_ptr<const LayerCache> shownLayer_; ///< the heatmap's layer, held so panels find it ready
};

} // namespace attnscope
