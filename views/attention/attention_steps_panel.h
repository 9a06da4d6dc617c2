#pragma once
// "Attention steps" tab: the selected head's attention computation one matrix at a time
// (model/analysis/attention/attention_steps.h): step list with Previous/Next (buttons, Alt+Left/Right,
// N/P), the formula, the shape with named axes, a sentence of what it means, the matrix as a
// heatmap (diverging around 0 for signed values, 0–1 for probabilities; token labels on position
// axes, indices on dimension axes) and as a numeric table when at most 32×32, a block diagram
// with the current step highlighted, and export of the step's matrix (PNG, SVG, PDF, CSV).
// For the additive step both results are shown side by side with their max abs difference.

#include "model/analysis/attention/attention_steps.h"
#include "views/common/analysis_panel.h"
#include "views/figures/matrix_heatmap.h"

class QLabel;
class QListWidget;
class QPushButton;
class QTableView;

namespace attnscope {

class BlockDiagram;
class MatrixTableModel;

class AttentionStepsPanel : public AnalysisPanel {
    Q_OBJECT
public:
    explicit AttentionStepsPanel(QWidget* parent = nullptr);

    QString title() const override { return tr("Attention steps"); }
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                    const QStringList& tokenLabels) override;
    void setSelectedHead(int layer, int head) override;
    /// Saved settings: the step shown (by name).
    QJsonObject saveState() const override;
    void restoreState(const QJsonObject& state, QStringList* problems) override;

    /// The steps of the selected head (empty without a forward pass).
    const std::vector<AttentionStep>& steps() const { return steps_; }
    int currentIndex() const { return current_; }
    /// Shows step `index` (clamped).
    void setCurrentIndex(int index);
    /// The figure of step `index` as drawn (labels, titles, scale).
    MatrixFigure figureForStep(int index) const;

    /// Writes the current step's matrix; the format follows the suffix (.png/.svg/.pdf/.csv).
    /// Returns "" or an error "<file>: <problem>".
    QString exportCurrentStep(const QString& path, QSize size = {900, 700}, double scale = 1.0);

    // For tests and screenshots.
    QString displayedName() const;
    QString displayedFormula() const;
    QString displayedShape() const;
    QString displayedMeaning() const;
    QString displayedNote() const;
    MatrixHeatmap* heatmap() const { return heatmap_; }
    /// The concat·W_O result shown next to the additive step (hidden otherwise).
    MatrixHeatmap* comparisonHeatmap() const { return compare_; }
    /// The numeric table (hidden for matrices larger than kMaxTableSide per side).
    QTableView* table() const { return table_; }
    BlockDiagram* blockDiagram() const { return diagram_; }
    static constexpr int kMaxTableSide = 32;

public slots:
    void next();
    void previous();

private:
    void rebuild();
    void showCurrent();
    void exportDialog();

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    QStringList tokens_;
    int layer_ = 0, head_ = 0;
    std::vector<AttentionStep> steps_;
    int current_ = 0;

    QListWidget* list_ = nullptr;
    QPushButton* prev_ = nullptr;
    QPushButton* next_ = nullptr;
    QLabel* name_ = nullptr;
    QLabel* formula_ = nullptr;
    QLabel* shape_ = nullptr;
    QLabel* meaning_ = nullptr;
    QLabel* note_ = nullptr;
    QLabel* empty_ = nullptr;
    BlockDiagram* diagram_ = nullptr;
    MatrixHeatmap* heatmap_ = nullptr;
    MatrixHeatmap* compare_ = nullptr;
    QTableView* table_ = nullptr;
    MatrixTableModel* tableModel_ = nullptr;
    QPushButton* export_ = nullptr;
};

} // namespace attnscope
