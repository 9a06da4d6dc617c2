#pragma once
// "Embedding space" tab: a model's weights read in the space of vocabulary items, no prompt needed
// (Dar, Geva, Gupta, Berant 2022, "Analyzing Transformers in Embedding Space", arXiv:2209.02535).
//  - OV / QK of a head: the top-k (source → output) or (query → key) token pairs of E·W·Eᵀ over all
//    d_vocab² pairs (blocked, on a worker thread with progress and Cancel, cached per head), and for a
//    typed source/query token its top-k output/key tokens;
//  - FF key / FF value of a neuron: the top-k and bottom-k tokens of E·k_i / E·v_i;
//  - reverse search: the heads and neurons that rank a typed token highest.
// The tab states that Eᵀ stands in for E's inverse and that LayerNorm and biases are ignored.

#include "model/analysis/embedding_space/embedding_projection.h"
#include "views/common/analysis_panel.h"
#include "views/common/background_tool.h"

#include <QHash>
#include <memory>

class QComboBox;
class QLabel;
class QSpinBox;
class QTableWidget;

namespace attnscope {

class TokenPicker;

class ProjectionsPanel : public AnalysisPanel {
    Q_OBJECT
public:
    enum class Kind { OV, QK, FFKey, FFValue };

    explicit ProjectionsPanel(QWidget* parent = nullptr);
    QString title() const override { return tr("Embedding space"); }
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                    const QStringList& tokenLabels) override;
    void setSelectedHead(int layer, int head) override;
    /// Saved settings: kind, layer, head, neuron, top-k and the two token fields.
    QJsonObject saveState() const override;
    void restoreState(const QJsonObject& state, QStringList* problems) override;

    /// Selects what to project (index = head for OV/QK, neuron for FF key/value) and computes it in the
    /// background (or shows the cached result at once).
    void setProjection(Kind kind, int layer, int index);
    void setTopK(int k);
    Kind kind() const;
    /// True when the pairs of (kind, layer, head) with at least the current k are cached.
    bool isCached(Kind kind, int layer, int head) const;

    /// OV/QK: #, row token, column token, score. FF: #, token, score (top-k).
    QTableWidget* topTable() const { return top_; }
    /// FF only: #, token, score (bottom-k, lowest first).
    QTableWidget* bottomTable() const { return bottom_; }
    /// The pairs shown (OV/QK), highest first.
    const std::vector<ScoredPair>& shownPairs() const { return shownPairs_; }

    /// Top-k column tokens for one row token of the selected head (OV: outputs of a source token;
    /// QK: keys of a query token).
    void queryRowToken(int tokenId);
    QTableWidget* rowTable() const { return rowTable_; }
    TokenPicker* rowField() const { return rowField_; }

    /// Heads and neurons that write `tokenId` most (background, with progress).
    void reverseSearchFor(int tokenId);
    QTableWidget* reverseHeadsTable() const { return revHeads_; }
    QTableWidget* reverseNeuronsTable() const { return revNeurons_; }
    TokenPicker* reverseField() const { return revField_; }

    void waitForIdle();
    /// Writes the top table (and for FF the bottom table as "<name>_bottom.csv") as CSV; error or "".
    QString exportCsv(const QString& path) const;

    /// The note shown in the tab about Eᵀ and LayerNorm.
    static QString methodNote();

protected:
    void showEvent(QShowEvent* event) override;

private:
    void buildUi();
    void updateControls();
    /// Shows the selection: from the cache, or computed in the background — deferred to showEvent while
    /// the tab is hidden unless `force`.
    void recompute(bool force = false);
    QString cacheKey(Kind kind, int layer, int index) const;
    void showPairs(const PairProjection& p);
    void showNeuron(const NeuronProjection& p);

    std::shared_ptr<const Model> model_;
    QHash<QString, std::shared_ptr<const PairProjection>> pairCache_;
    std::vector<ScoredPair> shownPairs_;
    bool dirty_ = false;

    BackgroundTool tool_;        ///< top pairs / neuron projection; its status line is the caption
    BackgroundTool rowTool_;     ///< one row token; its status line is the row table's caption
    BackgroundTool reverseTool_; ///< reverse search
    QComboBox* kind_ = nullptr;
    QSpinBox* layer_ = nullptr;
    QSpinBox* head_ = nullptr;
    QSpinBox* neuron_ = nullptr;
    QSpinBox* k_ = nullptr;
    QLabel* note_ = nullptr; ///< methodNote() and the model's embeddingConvention()
    QTableWidget* top_ = nullptr;
    QTableWidget* bottom_ = nullptr;
    TokenPicker* rowField_ = nullptr;
    QTableWidget* rowTable_ = nullptr;
    TokenPicker* revField_ = nullptr;
    QTableWidget* revHeads_ = nullptr;
    QTableWidget* revNeurons_ = nullptr;
};

} // namespace attnscope
