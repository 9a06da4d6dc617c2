#pragma once
// Head detectors view: previous-token, duplicate-token, induction and first-token scores of every
// head (model/analysis/attention/head_detectors.h) as a sortable table and as a colour overlay on a head grid.
// Previous/duplicate/first-token are scored on the current prompt; induction on the app's repeated
// random sequence, run once per model in the background (QtConcurrent) so the GUI never blocks.
// With a residuals-only cache (layers recomputed on demand) the prompt detectors and the grid are
// computed in the background too, layer by layer, once the view is shown.

#include "model/analysis/attention/head_detectors.h"
#include "views/common/background_tool.h"

#include <QWidget>
#include <array>
#include <memory>
#include <optional>

class QComboBox;
class QLabel;
class QTableWidget;

namespace attnscope {

class HeadGrid;

class HeadDetectorsView : public QWidget {
    Q_OBJECT
public:
    /// Table columns: head name, layer, head, then one per detector in allDetectors() order.
    enum Column { NameColumn, LayerColumn, HeadColumn, FirstScoreColumn };
    static constexpr std::array<HeadDetector, 4> allDetectors() {
        return {HeadDetector::PreviousToken, HeadDetector::DuplicateToken, HeadDetector::Induction,
                HeadDetector::FirstToken};
    }
    static int columnOf(HeadDetector d);

    explicit HeadDetectorsView(QWidget* parent = nullptr);
    /// New model and/or prompt. Rescores the prompt detectors (in the background, when shown, for a
    /// residuals-only cache); starts the induction run when the model changed.
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache);
    /// Scores of one detector ([n_layers, n_heads]); nullopt before they exist (induction still running).
    std::optional<HeadScores> scores(HeadDetector detector) const;
    /// The detector drawn on the head grid (nullopt = none).
    void setOverlay(std::optional<HeadDetector> detector);
    std::optional<HeadDetector> overlay() const;
    bool inductionRunning() const;
    /// True while the prompt detectors of a residuals-only cache are still being computed (or wait to be shown).
    bool promptScoresPending() const { return promptPending_ || promptTool_.isRunning(); }
    /// Blocks (processing events) until the background scoring is done (tests).
    void waitForPromptScores() { promptTool_.waitForIdle(); }
    QTableWidget* table() const { return table_; }
    HeadGrid* headGrid() const { return grid_; }
    /// Writes the table (head, layer, head, four scores) as CSV. Returns an error or "".
    QString exportCsv(const QString& path) const;

signals:
    /// The overlay changed: scores [n_layers, n_heads] in [0, 1] (empty = none) and the detector's name.
    void headScoresChanged(const Matrix& scores, const QString& name);
    void headRequested(int layer, int head);
    /// The induction scores of the current model are in (or failed; see the status label).
    void inductionFinished();

protected:
    void showEvent(QShowEvent* event) override;

private:
    void startPromptScores();
    void fillTable();
    void applyOverlay();
    void startInduction();

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    std::array<std::optional<HeadScores>, 4> scores_;
    QComboBox* overlayCombo_;
    HeadGrid* grid_;
    QTableWidget* table_;
    QLabel* status_;
    BackgroundTool inductionTool_; ///< the induction run, once per model (a new model replaces it)
    BackgroundTool promptTool_;    ///< prompt detectors + grid of a residuals-only cache; both report in status_
    bool promptPending_ = false;   ///< promptTool_ waits for the view to be shown
};

} // namespace attnscope
