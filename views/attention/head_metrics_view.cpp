#include "views/attention/head_metrics_view.h"

#include "views/attention/head_scatter.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

namespace attnscope {

HeadMetricsView::HeadMetricsView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    source_ = new QLabel(tr("Head metrics (HeadVis): run a prompt."));
    source_->setWordWrap(true);
    layout->addWidget(source_);

    corpus_ = new QLineEdit;
    corpus_->setPlaceholderText(tr("over a corpus: .txt / .jsonl file or folder"));
    corpus_->setToolTip(tr("Compute the metrics over the first 2000 windows of 128 tokens of this corpus (as "
                           "attnscope --headvis reads it) instead of over the prompt. Empty: the prompt."));
    auto* browse = new QPushButton(tr("…"));
    browse->setToolTip(tr("Choose a corpus file"));
    browse->setMaximumWidth(32);
    run_ = new QPushButton(tr("Run"));
    run_->setToolTip(tr("Compute over the corpus (or the prompt when none is given)"));
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Corpus"), corpus_->text(), tr("Text (*.txt *.jsonl);;All files (*)"));
        if (!path.isEmpty()) corpus_->setText(path);
    });
    connect(run_, &QPushButton::clicked, this, &HeadMetricsView::runCorpus);
    connect(corpus_, &QLineEdit::returnPressed, this, &HeadMetricsView::runCorpus);
    layout->addLayout(taskRow(task_, {corpus_, browse, run_}));

    table_ = new QTableWidget(kHeadMetricCount, 2);
    table_->setHorizontalHeaderLabels({tr("metric"), tr("head")});
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionMode(QAbstractItemView::NoSelection);
    table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    table_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    for (HeadMetric m : allHeadMetrics()) {
        auto* name = new QTableWidgetItem(headMetricKey(m));
        name->setToolTip(QStringLiteral("%1\n%2").arg(headMetricDescription(m), headMetricFormula(m)));
        table_->setItem(int(m), 0, name);
        auto* value = new QTableWidgetItem;
        value->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        table_->setItem(int(m), 1, value);
    }
    table_->resizeRowsToContents();
    int h = table_->horizontalHeader()->sizeHint().height() + 2 * table_->frameWidth();
    for (int r = 0; r < kHeadMetricCount; ++r) h += table_->rowHeight(r);
    table_->setFixedHeight(h);
    layout->addWidget(table_);

    xBox_ = new QComboBox;
    yBox_ = new QComboBox;
    for (HeadMetric m : allHeadMetrics()) {
        xBox_->addItem(headMetricKey(m), int(m));
        yBox_->addItem(headMetricKey(m), int(m));
    }
    xBox_->setCurrentIndex(int(HeadMetric::PrevToken));
    yBox_->setCurrentIndex(int(HeadMetric::Induction));
    xBox_->setToolTip(tr("The scatter's x axis"));
    yBox_->setToolTip(tr("The scatter's y axis"));
    auto* axes = new QGridLayout;
    axes->addWidget(new QLabel(tr("x")), 0, 0);
    axes->addWidget(xBox_, 0, 1);
    axes->addWidget(new QLabel(tr("y")), 1, 0);
    axes->addWidget(yBox_, 1, 1);
    axes->setColumnStretch(1, 1);
    layout->addLayout(axes);
    connect(xBox_, &QComboBox::currentIndexChanged, this, &HeadMetricsView::updateScatter);
    connect(yBox_, &QComboBox::currentIndexChanged, this, &HeadMetricsView::updateScatter);

    scatter_ = new HeadScatter;
    layout->addWidget(scatter_, 1);
    connect(scatter_, &HeadScatter::headClicked, this, &HeadMetricsView::headClicked);
    connect(&task_, &BackgroundTask::failed, this, [this](const QString& m) { source_->setText(tr("Head metrics: %1").arg(m)); });
}

void HeadMetricsView::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache) {
    const bool sameModel = model == model_;
    model_ = std::move(model);
    cache_ = std::move(cache);
    if (fromCorpus_ && sameModel && metrics_) return; // the corpus's numbers do not depend on the prompt
    fromCorpus_ = false;
    computePrompt();
}

void HeadMetricsView::computePrompt() {
    if (!cache_) {
        task_.discard();
        metrics_.reset();
        scatter_->clear();
        updateTable();
        return;
    }
    const auto cache = cache_;
    source_->setText(tr("Head metrics: computing over the prompt…"));
    task_.start([this, cache](const BackgroundTask::Context& ctx) -> std::function<void()> {
        HeadMetrics m = headMetrics(*cache, ctx.progress);
        return [this, m = std::move(m), n = cache->nPositions()]() mutable {
            fromCorpus_ = false;
            show(std::move(m), tr("over the prompt (%1 tokens)").arg(n));
        };
    });
}

void HeadMetricsView::setCorpus(const QString& path) { corpus_->setText(path); }

QString HeadMetricsView::corpus() const { return corpus_->text().trimmed(); }

void HeadMetricsView::runCorpus() {
    if (!model_) return;
    const QString path = corpus();
    if (path.isEmpty()) {
        fromCorpus_ = false;
        computePrompt();
        return;
    }
    const auto model = model_;
    source_->setText(tr("Head metrics: computing over %1…").arg(QFileInfo(path).fileName()));
    task_.start([this, model, path](const BackgroundTask::Context& ctx) -> std::function<void()> {
        CorpusPassOptions o;
        o.corpus = path;
        HeadMetrics m = headMetricsOverCorpus(*model, o, ctx.progress);
        return [this, m = std::move(m), path]() mutable {
            fromCorpus_ = true;
            const qint64 n = m.sequences;
            show(std::move(m), tr("over %1: %2 windows").arg(QFileInfo(path).fileName()).arg(n));
        };
    });
}

void HeadMetricsView::show(HeadMetrics metrics, const QString& source) {
    metrics_ = std::move(metrics);
    source_->setText(tr("Head metrics (HeadVis) %1").arg(source));
    updateTable();
    updateScatter();
}

QString HeadMetricsView::sourceText() const { return source_->text(); }

void HeadMetricsView::setSelectedHead(int layer, int head) {
    layer_ = layer;
    head_ = head;
    updateTable();
    scatter_->setSelectedHead(layer, head);
}

void HeadMetricsView::setAxes(HeadMetric x, HeadMetric y) {
    const QSignalBlocker b(xBox_);
    xBox_->setCurrentIndex(int(x));
    yBox_->setCurrentIndex(int(y)); // updates the scatter
    updateScatter();
}

HeadMetric HeadMetricsView::xMetric() const { return HeadMetric(xBox_->currentData().toInt()); }
HeadMetric HeadMetricsView::yMetric() const { return HeadMetric(yBox_->currentData().toInt()); }

void HeadMetricsView::updateTable() {
    const bool valid = metrics_ && layer_ < metrics_->nLayers() && head_ < metrics_->nHeads();
    table_->horizontalHeaderItem(1)->setText(valid ? QStringLiteral("L%1H%2").arg(layer_).arg(head_) : tr("head"));
    for (HeadMetric m : allHeadMetrics())
        table_->item(int(m), 1)->setText(!valid ? QString()
                                         : std::isfinite((*metrics_)[m](layer_, head_)) ? QString::number((*metrics_)[m](layer_, head_), 'f', 4)
                                                                                       : tr("n/a"));
}

void HeadMetricsView::updateScatter() {
    if (!metrics_) return;
    scatter_->setMetrics(*metrics_, xMetric(), yMetric());
    scatter_->setSelectedHead(layer_, head_);
}

} // namespace attnscope
