#pragma once
// The Attention tab's head metrics: HeadVis's six metrics (model/analysis/attention/head_metrics.h) of the selected
// head as a table, and every head in a scatter by any two of them (head_scatter.h; a click selects the head).
// They are computed off the GUI thread over the current prompt, or over a corpus (.txt / .jsonl file or folder, its
// first windows as --headvis reads them) once one is given and Run.

#include "model/analysis/attention/head_metrics.h"
#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"
#include "views/common/background_task.h"

#include <QWidget>
#include <memory>
#include <optional>

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace attnscope {

class HeadScatter;

class HeadMetricsView : public QWidget {
    Q_OBJECT
public:
    explicit HeadMetricsView(QWidget* parent = nullptr);

    /// A new model or prompt: the prompt's metrics are computed in the background (a corpus's are kept while the
    /// model stays the same).
    void setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache);
    void setSelectedHead(int layer, int head);
    /// The corpus to compute over (empty: the prompt); runCorpus() starts it.
    void setCorpus(const QString& path);
    QString corpus() const;
    /// Computes over the corpus given (or the prompt again when none is).
    void runCorpus();
    /// The scatter's axes.
    void setAxes(HeadMetric x, HeadMetric y);
    HeadMetric xMetric() const;
    HeadMetric yMetric() const;

    /// The metrics shown (none before the first result).
    const std::optional<HeadMetrics>& metrics() const { return metrics_; }
    /// "over the prompt (23 tokens)", "over corpus.txt: 2000 windows".
    QString sourceText() const;
    QTableWidget* table() const { return table_; }
    HeadScatter* scatter() const { return scatter_; }
    /// Blocks (processing events) until the computation is done and shown.
    void waitForIdle() { task_.waitForIdle(); }

signals:
    void headClicked(int layer, int head);

private:
    void computePrompt();
    void show(HeadMetrics metrics, const QString& source);
    void updateTable();
    void updateScatter();

    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    std::optional<HeadMetrics> metrics_;
    bool fromCorpus_ = false;
    int layer_ = 0, head_ = 0;
    QLabel* source_;
    QLineEdit* corpus_;
    QPushButton* run_;
    QComboBox* xBox_;
    QComboBox* yBox_;
    QTableWidget* table_;
    HeadScatter* scatter_;
    BackgroundTask task_;
};

} // namespace attnscope
