#pragma once
// "Compare models" tab (Dar et al. 2022, "Aligning models in embedding space" and "Interpreting
// fine-tuning"): open a second checkpoint that shares the tokenizer and see
//  - layer × layer similarity of FF keys or values, in embedding space (each model projected through
//    its own W_E) next to the same comparison in feature space (raw d_model vectors);
//  - for checkpoints of the same architecture, the difference of one parameter (FF key/value of a
//    neuron, or a head's W_OV / W_QK) projected into embedding space: top and bottom tokens, and
//    "identical" stated explicitly when nothing changed.
// Loading and every comparison run in the background.

#include "model/analysis/model_comparison.h"
#include "views/analysis_panel.h"
#include "views/background_task.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QTableWidget;

namespace attnscope {

class MatrixHeatmap;

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

    /// Loads the second checkpoint in the background, then compares.
    void openSecondModel(const QString& path);
    /// Uses an already loaded model as the second checkpoint and compares.
    void setSecondModel(std::shared_ptr<const Model> model);
    std::shared_ptr<const Model> secondModel() const { return other_; }

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

    void waitForIdle();
    /// Both similarity matrices as CSV ("<base>_embedding.csv", "<base>_feature.csv" next to `path`),
    /// or figures ("<base>_embedding.<ext>", ...). Return an error message or "".
    QString exportCsv(const QString& path) const;
    QString exportFigures(const QString& path) const;

private:
    void buildUi();
    void compare();
    void diff();
    void updateControls();

    std::shared_ptr<const Model> model_, other_;
    bool identical_ = false;
    BackgroundTask loadTask_, compareTask_, diffTask_;
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
