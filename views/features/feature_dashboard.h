#pragma once
// The Features tab's dashboard of one feature, after Neuronpedia's feature pages: its label, its activation over
// the prompt as a tinted token strip, its activation histogram over a corpus with the fraction of tokens that fire
// (from the contexts database, context_store.h), its top corpus contexts with every token tinted by its recomputed
// activation (context_activations.h; clicking one asks for it as the prompt), and the tokens its decoder direction
// promotes and suppresses (feature_readout.h) as horizontal bars. Each plot is a ChartFigure (PNG/SVG/PDF/CSV).

#include "model/analysis/common/topk_accumulator.h"
#include "model/core/tensor.h"

#include <QStringList>
#include <QWidget>
#include <vector>

class QCustomPlot;
class QLabel;
class QTableWidget;

namespace attnscope {

class ChartFigure;

/// One top context as the dashboard shows it: its tokens' texts and the feature's activation at each.
struct DashboardContext {
    QStringList tokens;         ///< [pos] the window's token texts (BOS included)
    Eigen::VectorXf activations; ///< [pos] recomputed (contextActivations)
    int position = 0;           ///< the stored max-activating position
    float stored = 0;           ///< the stored activation there
    QString prompt;             ///< the window's text without BOS (what a click loads)
};

class FeatureDashboard : public QWidget {
    Q_OBJECT
public:
    explicit FeatureDashboard(QWidget* parent = nullptr);
    /// Bars shown per side (promoted, suppressed): what fits readably at 1280 × 800.
    static constexpr int kBarsPerSide = 6;

    /// The tinted strip of the prompt's tokens (the panel writes it, with the feature's label, as its header).
    QLabel* promptStrip() const { return strip_; }
    /// The histogram (kHistogramBins counts, context_store.h's bins) and firing / positions; null counts: no database,
    /// and `hint` says how to make one.
    void setHistogram(const std::vector<qint64>& counts, qint64 firing, qint64 positions, const QString& source);
    void setNoDatabase(const QString& hint);
    /// The top contexts (empty: none fired).
    void setContexts(const std::vector<DashboardContext>& contexts);
    void setContextsStatus(const QString& text);
    /// Promoted (largest first) and suppressed (most negative first) tokens with their scores; the first
    /// kBarsPerSide of each are drawn.
    void setLogits(const QStringList& promotedTokens, const std::vector<ScoredToken>& promoted, const QStringList& suppressedTokens,
                   const std::vector<ScoredToken>& suppressed);

    ChartFigure* histogramFigure() const { return histogram_; }
    ChartFigure* logitsFigure() const { return logits_; }
    QTableWidget* contextsTable() const { return contextsTable_; }
    const std::vector<DashboardContext>& contexts() const { return contexts_; }
    QLabel* firingLabel() const { return firing_; }
    QLabel* hintLabel() const { return hint_; }
    /// The tinted HTML of tokens with activations against `max` (orange, alpha = a / max clamped to [0, 1]).
    static QString tintedTokens(const QStringList& tokens, const Eigen::VectorXf& activations, float max, int bold = -1);

signals:
    /// A context was clicked: run `prompt`.
    void promptRequested(const QString& prompt);

private:
    QLabel* strip_;
    QLabel* firing_;
    QLabel* hint_;
    QCustomPlot* histogramPlot_;
    QCustomPlot* logitsPlot_;
    ChartFigure* histogram_;
    ChartFigure* logits_;
    QTableWidget* contextsTable_;
    std::vector<DashboardContext> contexts_;
    std::vector<qint64> counts_;
    QStringList logitTokens_;
    std::vector<double> logitScores_;
};

} // namespace attnscope
