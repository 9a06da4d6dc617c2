#pragma once
// The Stitch view of the Compare tab (Dar et al. 2022, "Analyzing Transformers in Embedding Space",
// section "Zero-shot stitching"; math in model/analysis/comparison/stitching.h): model A's first k blocks, its hidden
// state mapped through embedding space with M = E_Aᵀ·(E_Bᵀ)⁺ (or the transpose), then model B's blocks k …,
// its final norm and unembedding. For a text it sweeps k over 0 … n_layers_A for the chosen variants and shows
//  - the loss curve (next-token cross-entropy of the stitched model against k, A's and B's own loss as
//    lines) and the top-1 agreement curve (with A and with B), one colour per variant, as in the paper's figure;
//  - per k of the shown variant: loss, agreements and the gain ‖h·M‖/‖h‖;
//  - per position: the stitched model's next-token distribution next to A's and B's;
//  - how M was made: rcond, both embeddings' numerical ranks, max |M − I| when a model meets itself, and a
//    warning when E_B is rank-deficient (self-stitching is then not exact).
// Model A is the window's model and B the second model (Swap exchanges them). The sweep runs in the
// background with progress and Cancel; the pseudo-inverse is computed once per pair and cached.

#include "model/analysis/comparison/stitch_map_cache.h"
#include "model/analysis/comparison/stitching.h"
#include "model/transformer/activation_cache.h"
#include "views/common/background_tool.h"
#include "views/figures/value_table.h"

#include <QJsonObject>
#include <QWidget>
#include <memory>

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QCPTextElement;
class QLabel;
class QPlainTextEdit;
class QSpinBox;
class QTableWidget;

namespace attnscope {

class ChartFigure;
class PanelStateReader;

class StitchView : public QWidget {
    Q_OBJECT
public:
    /// Which variants to compute: one of the two, or both.
    enum class Choice { First, Second, Both };

    explicit StitchView(QWidget* parent = nullptr);

    /// The window's model and the second model (either may be null), and the window's last run (its tokens
    /// are the default text). Clears results when the pair changes; sweeps again when shown.
    void setModels(std::shared_ptr<const Model> first, std::shared_ptr<const Model> second,
                   std::shared_ptr<const ActivationCache> cache);
    /// Model A = the second model and B = the window's model.
    void setSwapped(bool swapped);
    bool isSwapped() const;
    /// The text to stitch on; empty = the window's prompt (its tokens as they ran).
    void setText(const QString& text);
    /// Pseudo-inverse (First), transpose (Second) or both.
    void setInverseChoice(Choice c);
    /// Without A's final norm before projecting (First), with it (Second), or both.
    void setNormChoice(Choice c);
    void setSide(EmbeddingSide side);
    void setRcond(double rcond);
    /// Starts the sweep (cancels one running).
    void run();
    bool isRunning() const { return tool_.isRunning(); }
    void waitForIdle() { tool_.waitForIdle(); }
    /// Shows variant `index` of sweeps() in the tables, stitch layer k and text position p (clamped).
    void showVariant(int index);
    void showLayer(int k);
    void showPosition(int position);

    /// The models as stitched (A, B) and the results of the last sweep, one per variant.
    std::shared_ptr<const Model> modelA() const;
    std::shared_ptr<const Model> modelB() const;
    const std::vector<StitchSweep>& sweeps() const { return sweeps_; }
    const std::shared_ptr<const StitchBase>& base() const { return base_; }
    QLabel* mapInfo() const { return mapInfo_; }
    QLabel* summary() const { return tool_.statusLabel(); }
    ChartFigure* lossChart() const { return lossFigure_; }
    ChartFigure* agreementChart() const { return agreeFigure_; }
    QTableWidget* layerTable() const { return layers_; }
    QTableWidget* positionTable() const { return positions_; }

    QJsonObject saveState() const;
    void restoreState(const QJsonObject& state, const PanelStateReader& reader);
    /// Every variant's curve points as CSV (k, variant, loss, loss_a, loss_b, agree_a, agree_b, norm_ratio).
    /// Returns an error or "".
    QString exportCsv(const QString& path) const;

signals:
    void statusMessage(const QString& text);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void buildUi();
    std::vector<StitchVariant> chosenVariants() const;
    void clearResults(const QString& why);
    /// setModels again with the same models, as if the pair had changed (swap, restore).
    void rebuildPair();
    void updateMapInfo();
    void plotCurves();
    void fillLayerTable();
    void fillPositionTable();
    ValueTable curveValues() const;
    QString curveTooltip(QCustomPlot* plot, const QPoint& pos) const;

    std::shared_ptr<const Model> first_, second_;
    std::shared_ptr<const ActivationCache> cache_;
    std::shared_ptr<StitchMapCache> maps_ = std::make_shared<StitchMapCache>();
    std::shared_ptr<const StitchBase> base_;
    std::vector<StitchSweep> sweeps_;
    bool dirty_ = true;
    bool keepSelection_ = false; ///< a restored selection: the next sweep keeps it
    int shownVariant_ = 0, shownK_ = -1, shownPosition_ = -1; ///< -1: the last k / the last position
    int shownLayerIndex() const;
    BackgroundTool tool_; ///< its status line is the summary
    QCheckBox* swap_ = nullptr;
    QLabel* models_ = nullptr;
    QPlainTextEdit* text_ = nullptr;
    QComboBox* inverse_ = nullptr;
    QComboBox* norm_ = nullptr;
    QComboBox* side_ = nullptr;
    QComboBox* rcond_ = nullptr;
    QLabel* mapInfo_ = nullptr;
    QCustomPlot* lossPlot_ = nullptr;
    QCustomPlot* agreePlot_ = nullptr;
    QCPTextElement* lossTitle_ = nullptr;
    QCPTextElement* agreeTitle_ = nullptr;
    ChartFigure* lossFigure_ = nullptr;
    ChartFigure* agreeFigure_ = nullptr;
    QComboBox* variantShown_ = nullptr;
    QTableWidget* layers_ = nullptr;
    QSpinBox* position_ = nullptr;
    QLabel* positionInfo_ = nullptr;
    QTableWidget* positions_ = nullptr;
};

} // namespace attnscope
