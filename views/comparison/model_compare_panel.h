#pragma once
// "Compare models" tab (Dar et al. 2022, "Aligning models in embedding space", "Zero-shot stitching" and
// "Interpreting fine-tuning"): a second checkpoint that shares the tokenizer, opened by the window's model
// session (this panel asks for it with secondModelRequested and never opens files), and three sub-tabs:
//  - Layers and differences: layer × layer similarity of FF keys or values, in embedding space (each model
//    projected through its own W_E) next to feature space (raw d_model vectors); for checkpoints of the same
//    architecture the difference of one parameter (FF key/value of a neuron, or a head's W_OV / W_QK) in
//    embedding space, "identical" stated explicitly when nothing changed;
//  - Stitch (views/comparison/stitch_view.h): zero-shot stitching of model A's first k blocks onto model B's rest;
//  - Fine-tuning directions (views/comparison/finetune_view.h): every head and neuron ranked by ‖Δθ‖/‖θ‖, the overview,
//    and one component's Δ in embedding space.
// Every comparison runs in the background.

#include "model/analysis/comparison/model_comparison.h"
#include "views/common/analysis_panel.h"
#include "views/common/background_task.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QTabWidget;

namespace attnscope {

class FinetuneView;
class MatrixHeatmap;
class StitchView;

class ModelComparePanel : public AnalysisPanel {
    Q_OBJECT
public:
    enum class Parameter { FFKey, FFValue, OV, QK };

    explicit ModelComparePanel(QWidget* parent = nullptr);
    QString title() const override { return tr("Compare models"); }
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                    const QStringList& tokenLabels) override;
    void setSelectedHead(int layer, int head) override;
    /// Saved settings: second checkpoint, similarity kind, parameter, layer, index, top-k.
    QJsonObject saveState() const override;
    void restoreState(const QJsonObject& state, QStringList* problems) override;

    /// Asks the window to open `nameOrPath` (a path or a model name, which the window resolves) as the second
    /// model (secondModelRequested); setSecondModel follows when it is loaded, setSecondModelStatus on failure. A
    /// panel outside a window (nobody connected) says so instead.
    void openSecondModel(const QString& nameOrPath);
    /// The second model the window opened (or any loaded model): compares, stitches, ranks.
    void setSecondModel(std::shared_ptr<const Model> model) override;
    void setSecondModelStatus(const SecondModelStatus& status) override;
    std::shared_ptr<const Model> secondModel() const { return other_; }
    /// The sub-tabs: 0 layers and differences, 1 stitch, 2 fine-tuning directions.
    QTabWidget* subTabs() const { return subTabs_; }
    StitchView* stitchView() const { return stitch_; }
    FinetuneView* finetuneView() const { return finetune_; }
    /// The line under the path: what is open as model B, or what went wrong.
    QLabel* secondModelInfo() const { return otherInfo_; }

    /// FF keys or FF values for the layer × layer matrices (recomputes).
    void setSimilarityKind(NeuronVectorKind kind);
    /// The difference to show (index = neuron for FF, head for OV/QK); recomputes.
    void setDifference(Parameter parameter, int layer, int index);

    /// [layer_A, layer_B] similarity in embedding space / feature space, as shown.
    MatrixHeatmap* embeddingHeatmap() const { return embedding_; }
    MatrixHeatmap* featureHeatmap() const { return feature_; }
    /// The difference verdict ("Identical: …" or "max |Δ| = …").
    QLabel* differenceSummary() const { return diffSummary_; }
    QTableWidget* differenceTop() const { return diffTop_; }
    QTableWidget* differenceBottom() const { return diffBottom_; }
    bool differenceIsIdentical() const { return identical_; }

    /// Waits for the second model the panel asked for (when a window handles the request) and for every
    /// sub-tab's background work.
    void waitForIdle() override;
    /// Both similarity matrices as CSV ("<base>_embedding.csv", "<base>_feature.csv" next to `path`),
    /// or figures ("<base>_embedding.<ext>", ...). Return an error message or "".
    QString exportCsv(const QString& path) const;
    QString exportFigures(const QString& path) const;

signals:
    /// The second model asked for arrived, or failed to (waitForIdle).
    void secondModelSettled();

private:
    void buildUi();
    void updateSubViews();
    void compare();
    void diff();
    void updateControls();

    std::shared_ptr<const Model> model_, other_;
    std::shared_ptr<const ActivationCache> cache_;
    QString pendingSecond_; ///< the name or path asked for and not yet settled
    QString secondError_;   ///< why the last request failed ("" when it did not)
    bool identical_ = false;
    BackgroundTask compareTask_, diffTask_;
    QTabWidget* subTabs_ = nullptr;
    StitchView* stitch_ = nullptr;
    FinetuneView* finetune_ = nullptr;
    QProgressBar* loadProgress_ = nullptr;
    QPushButton* loadCancel_ = nullptr;
    QLineEdit* otherPath_ = nullptr;
    QLabel* otherInfo_ = nullptr;
    QComboBox* simKind_ = nullptr;
    MatrixHeatmap* embedding_ = nullptr;
    MatrixHeatmap* feature_ = nullptr;
    QComboBox* param_ = nullptr;
    QSpinBox* layer_ = nullptr;
    QSpinBox* index_ = nullptr;
    QSpinBox* k_ = nullptr;
    QLabel* indexLabel_ = nullptr;
    QLabel* diffSummary_ = nullptr;
    QTableWidget* diffTop_ = nullptr;
    QTableWidget* diffBottom_ = nullptr;
};

} // namespace attnscope
