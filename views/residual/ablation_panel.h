#pragma once
// Ablation preview view: pick heads, zero- or mean-ablate them, rerun the prompt in the background
// (previewAblation on a QtConcurrent thread) and show how the target logit (difference) and the
// top-10 next tokens change.

#include "model/analysis/residual/ablation.h"

#include <QFutureWatcher>
#include <QWidget>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

class QComboBox;
class QLabel;
class QListWidget;
class QPushButton;

namespace attnscope {

class TopTokensView;

class AblationView : public QWidget {
    Q_OBJECT
public:
    explicit AblationView(QWidget* parent = nullptr);
    ~AblationView() override;
    /// New model and/or prompt: refills the head list (keeping checked heads that still exist) and
    /// clears the previous result.
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache);
    /// Where and what to measure: logits at `position`, logit[token] (− logit[counterToken] when ≥ 0).
    /// `description` names it for the result line, e.g. "logit[␣Mary] − logit[␣John]".
    void setTarget(int position, int token, int counterToken, const QString& description);

    /// Checks exactly these (layer, head) pairs in the list.
    void setAblatedHeads(const std::vector<std::pair<int, int>>& heads);
    std::vector<std::pair<int, int>> ablatedHeads() const;
    void setKind(HeadAblation::Kind kind);
    HeadAblation::Kind kind() const;
    /// Starts the ablated run in the background; finished() follows (also on failure).
    void run();
    bool isRunning() const { return watcher_.isRunning(); }
    /// The last finished preview (nullopt before one, after a failure, or after the context changed).
    const std::optional<AblationPreview>& preview() const { return preview_; }
    /// Result line ("logit[␣Mary]: 3.21 → 1.05 (Δ −2.16)") or the error.
    QString resultText() const;
    TopTokensView* topBefore() const { return before_; }
    TopTokensView* topAfter() const { return after_; }
    /// Writes before/after top tokens and the target change as CSV. Returns an error or "".
    QString exportCsv(const QString& path) const;

signals:
    void finished();

private:
    struct Outcome { std::optional<AblationPreview> preview; QString error; };

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    int position_ = -1, token_ = 0, counterToken_ = -1;
    QString description_;
    std::optional<AblationPreview> preview_;
    QListWidget* heads_;
    QComboBox* kindCombo_;
    QPushButton* runButton_;
    QLabel* result_;
    TopTokensView* before_;
    TopTokensView* after_;
    QFutureWatcher<Outcome> watcher_;
    int generation_ = 0;
};

} // namespace attnscope
