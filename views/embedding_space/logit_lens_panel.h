#pragma once
// "Logit lens" tab (nostalgebraist 2020; Dar et al. 2022): a table with one row per layer boundary
// (embed, L0attn, L0mlp, …) and one column per prompt token; each cell shows the token the residual
// stream at that point would predict (ln_final with the residual's own statistics, then W_U), coloured
// by its probability or by the rank of a chosen target token. The last row is the model's own output.
// Clicking a cell lists its top-k tokens; a second table lists the target token's rank and probability
// per boundary and position; a component readout (head / MLP output through W_U) sits underneath.
// Rows are computed on a worker thread and appear as they finish.

#include "model/analysis/embedding_space/logit_lens.h"
#include "views/common/analysis_panel.h"
#include "views/common/background_tool.h"

#include <QColor>
#include <optional>
#include <vector>

class QComboBox;
class QLabel;
class QSpinBox;
class QTabWidget;
class QTableWidget;

namespace attnscope {

class ComponentReadoutView;
class TokenPicker;
class TopTokensView;

class LogitLensPanel : public AnalysisPanel {
    Q_OBJECT
public:
    enum class Colouring { TopProbability, TargetRank };
    /// Item data roles of the lens table's cells.
    enum Role { TokenIdRole = Qt::UserRole, ProbabilityRole, TargetRankRole };

    explicit LogitLensPanel(QWidget* parent = nullptr);
    QString title() const override { return tr("Logit lens"); }
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                    const QStringList& tokenLabels) override;
    void setSelectedHead(int layer, int head) override;
    /// Saved settings: top-k, colouring, target token, sub-view and selected cell.
    QJsonObject saveState() const override;
    void restoreState(const QJsonObject& state, QStringList* problems) override;

    /// Tokens listed per cell (and kept per cell): recomputes the table.
    void setTopK(int k);
    void setColouring(Colouring colouring);
    /// The token whose rank colours the table and fills the rankings table; -1 = none.
    void setTargetToken(int tokenId);
    int targetToken() const { return target_; }
    /// Shows the top-k list of one cell (and moves the component readout to that position).
    void selectCell(int boundary, int position);

    /// [boundary][position] top-k tokens; a boundary's list is empty until its row was computed.
    const std::vector<std::vector<std::vector<TokenScore>>>& topTokensTable() const { return top_; }
    /// [boundary][position] rank of the target token; empty rows until computed.
    const std::vector<std::vector<TokenRank>>& targetRanks() const { return ranks_; }

    QTableWidget* lensTable() const { return table_; }
    QTableWidget* rankingsTable() const { return rankings_; }
    TopTokensView* cellTokens() const { return cellTokens_; }
    ComponentReadoutView* readout() const { return readout_; }
    TokenPicker* targetField() const { return targetField_; }
    /// Blocks until the table (and the readout) are computed.
    void waitForIdle();

    /// Writes the lens table (or, with rankings = true, the rankings table) as CSV / as a figure
    /// (.png/.svg/.pdf by suffix). Returns an error message or "".
    QString exportCsv(const QString& path, bool rankings = false) const;
    QString exportFigure(const QString& path, bool rankings = false) const;

    /// Colour of a probability in [0, 1] on the chosen sequential map (viridis or cividis).
    static QColor probabilityColour(double p);
    /// Colour of a rank (0 = top) among d_vocab tokens: the sequential map at 1 − ln(rank+1)/ln(d_vocab),
    /// so the top token is yellow and the last one dark.
    static QColor rankColour(int rank, int vocabSize);

private:
    void buildUi();
    void resetTable();
    void startJob();
    void applyRow(int boundary, std::vector<std::vector<TokenScore>> top, std::vector<TokenRank> ranks, int target);
    void refreshRow(int boundary);
    void showCell(int boundary, int position);
    void exportDialog(bool figure);
    QString figureTitle(bool rankings) const;

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    QStringList labels_;
    int k_ = 10;
    int target_ = -1;
    Colouring colouring_ = Colouring::TopProbability;
    std::vector<std::vector<std::vector<TokenScore>>> top_;
    std::vector<std::vector<TokenRank>> ranks_;
    int selectedBoundary_ = -1, selectedPosition_ = -1;

    BackgroundTool tool_; ///< the rows; failures go to the window's status bar
    QComboBox* colourBy_ = nullptr;
    TokenPicker* targetField_ = nullptr;
    QSpinBox* kSpin_ = nullptr;
    QLabel* legend_ = nullptr;
    QTabWidget* views_ = nullptr;
    QTableWidget* table_ = nullptr;
    QTableWidget* rankings_ = nullptr;
    QLabel* cellCaption_ = nullptr;
    TopTokensView* cellTokens_ = nullptr;
    ComponentReadoutView* readout_ = nullptr;
};

} // namespace attnscope
