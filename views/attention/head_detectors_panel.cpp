#include "views/attention/head_detectors_panel.h"

#include "model/core/csv_writer.h"
#include "views/attention/head_grid.h"
#include "views/figures/table_figure.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace attnscope {

int HeadDetectorsView::columnOf(HeadDetector d) {
    const auto all = allDetectors();
    return FirstScoreColumn + int(std::find(all.begin(), all.end(), d) - all.begin());
}

HeadDetectorsView::HeadDetectorsView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Overlay on the head grid:")));
    overlayCombo_ = new QComboBox;
    overlayCombo_->addItem(tr("none"));
    for (HeadDetector d : allDetectors()) {
        overlayCombo_->addItem(headDetectorName(d));
        overlayCombo_->setItemData(overlayCombo_->count() - 1, headDetectorFormula(d), Qt::ToolTipRole);
    }
    overlayCombo_->setCurrentIndex(1 + 2); // induction: the detector people look for first
    bar->addWidget(overlayCombo_);
    auto* csv = new QPushButton(tr("Export CSV…"));
    bar->addWidget(csv);
    bar->addStretch(1);
    status_ = new QLabel;
    bar->addWidget(status_);
    layout->addLayout(bar);

    grid_ = new HeadGrid;
    table_ = new QTableWidget(0, FirstScoreColumn + int(allDetectors().size()));
    QStringList header{tr("head"), tr("layer"), tr("index")};
    for (HeadDetector d : allDetectors()) header << headDetectorName(d);
    table_->setHorizontalHeaderLabels(header);
    for (HeadDetector d : allDetectors())
        table_->horizontalHeaderItem(columnOf(d))->setToolTip(headDetectorFormula(d));
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->verticalHeader()->setVisible(false);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    for (HeadDetector d : allDetectors()) table_->horizontalHeader()->setSectionResizeMode(columnOf(d), QHeaderView::Stretch);
    table_->sortByColumn(columnOf(HeadDetector::Induction), Qt::DescendingOrder);
    table_->setSortingEnabled(true);
    installTableFigure(table_, QStringLiteral("head_detectors"), tr("Run a prompt to score every head."));
    auto* split = new QSplitter(Qt::Horizontal);
    split->addWidget(grid_);
    split->addWidget(table_);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    layout->addWidget(split, 1);

    connect(overlayCombo_, &QComboBox::currentIndexChanged, this, &HeadDetectorsView::applyOverlay);
    connect(grid_, &HeadGrid::headClicked, this, &HeadDetectorsView::headRequested);
    connect(table_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
        emit headRequested(table_->item(row, LayerColumn)->data(Qt::DisplayRole).toInt(),
                           table_->item(row, HeadColumn)->data(Qt::DisplayRole).toInt());
    });
    connect(csv, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export head detector scores"), "head_detectors.csv",
                                                          tr("CSV (*.csv)"));
        if (!path.isEmpty())
            if (QString e = exportCsv(path); !e.isEmpty()) status_->setText(e);
    });
    inductionTool_.useStatusLabel(status_);
    promptTool_.useStatusLabel(status_);
    inductionTool_.setFailedHandler([this](const QString& m) {
        scores_[size_t(columnOf(HeadDetector::Induction) - FirstScoreColumn)].reset();
        status_->setText(tr("Induction scores unavailable: %1").arg(m));
        fillTable();
        applyOverlay();
        emit inductionFinished();
    });
}

void HeadDetectorsView::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache) {
    const bool newModel = model != model_;
    model_ = std::move(model);
    cache_ = std::move(cache);
    // a residuals-only cache recomputes its layers: scored and drawn in the background (startPromptScores)
    const bool background = cache_ && model_ && cache_->residualsOnly();
    promptTool_.discard(); // layers of the last cache are not drawn on this one
    promptPending_ = false;
    for (HeadDetector d : allDetectors()) {
        auto& slot = scores_[size_t(columnOf(d) - FirstScoreColumn)];
        if (d == HeadDetector::Induction) {
            if (newModel) slot.reset();
        } else {
            slot = cache_ && model_ && !background ? std::optional<HeadScores>(scoreHeads(*cache_, d)) : std::nullopt;
        }
    }
    if (background) {
        grid_->beginPatterns(cache_->nLayers(), cache_->nHeads());
        promptPending_ = true;
        if (isVisible()) startPromptScores();
    } else if (cache_ && model_) {
        grid_->setPatterns(cache_->nLayers(), cache_->nHeads(),
                           [&](int l, int h) { return cache_->stored(l).pattern[size_t(h)]; });
    } else {
        grid_->clear();
    }
    if (newModel) {
        if (model_) startInduction(); // replaces the run of the last model
        else inductionTool_.discard();
    }
    fillTable();
    applyOverlay();
}

void HeadDetectorsView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (promptPending_) startPromptScores();
}

void HeadDetectorsView::startPromptScores() {
    promptPending_ = false;
    promptTool_.start(tr("Computing the layers for the head detectors…"), [this, cache = cache_](const BackgroundTask::Context& ctx) -> std::function<void()> {
        const std::vector<HeadDetector> detectors{HeadDetector::PreviousToken, HeadDetector::DuplicateToken,
                                                  HeadDetector::FirstToken};
        std::vector<HeadScores> s = scoreHeads(*cache, detectors, ctx.progress,
                                               [&](int l, const std::shared_ptr<const LayerCache>& lc) {
            ctx.post([this, l, lc] { grid_->setLayerPatterns(l, lc->pattern); });
        });
        return [this, s = std::move(s)] {
            for (const HeadScores& one : s) scores_[size_t(columnOf(one.detector) - FirstScoreColumn)] = one;
            status_->setText(tr("Prompt detectors scored."));
            fillTable();
            applyOverlay();
        };
    });
}

void HeadDetectorsView::startInduction() {
    const int bos = model_->tokenizer().bosId().value_or(-1);
    inductionTool_.start(tr("Running the model on a repeated random sequence for the induction scores…"),
                         [this, model = model_, bos](const BackgroundTask::Context& ctx) -> std::function<void()> {
        HeadScores s = inductionScores(*model, bos, ctx.progress);
        return [this, s = std::move(s)] {
            scores_[size_t(columnOf(HeadDetector::Induction) - FirstScoreColumn)] = s;
            status_->setText(tr("Induction: %1 query positions of a repeated random sequence.").arg(s.nQueries));
            fillTable();
            applyOverlay();
            emit inductionFinished();
        };
    });
}

bool HeadDetectorsView::inductionRunning() const { return inductionTool_.isRunning(); }

std::optional<HeadScores> HeadDetectorsView::scores(HeadDetector detector) const {
    return scores_[size_t(columnOf(detector) - FirstScoreColumn)];
}

void HeadDetectorsView::setOverlay(std::optional<HeadDetector> detector) {
    overlayCombo_->setCurrentIndex(detector ? columnOf(*detector) - FirstScoreColumn + 1 : 0);
}

std::optional<HeadDetector> HeadDetectorsView::overlay() const {
    const int i = overlayCombo_->currentIndex();
    if (i <= 0) return std::nullopt;
    return allDetectors()[size_t(i - 1)];
}

void HeadDetectorsView::applyOverlay() {
    const auto d = overlay();
    const auto s = d ? scores(*d) : std::nullopt;
    const bool fits = s && grid_->layers() == s->scores.rows() && grid_->heads() == s->scores.cols();
    const Matrix shown = fits ? Matrix(s->scores.unaryExpr([](float v) { return std::isnan(v) ? 0.0f : v; })) : Matrix();
    const QString name = d ? headDetectorName(*d) : QString();
    grid_->setHeadScores(shown, name);
    grid_->setToolTip(d ? tr("Bars: %1 score = %2").arg(name, headDetectorFormula(*d)) : QString());
    emit headScoresChanged(shown, name);
}

void HeadDetectorsView::fillTable() {
    table_->setSortingEnabled(false);
    const int nLayers = model_ && cache_ ? cache_->nLayers() : 0;
    const int nHeads = nLayers ? cache_->nHeads() : 0;
    table_->setRowCount(nLayers * nHeads);
    for (int l = 0, row = 0; l < nLayers; ++l)
        for (int h = 0; h < nHeads; ++h, ++row) {
            auto set = [&](int col, const QVariant& v, const QString& tip = {}) {
                auto* item = new QTableWidgetItem;
                item->setData(Qt::DisplayRole, v);
                if (!tip.isEmpty()) item->setToolTip(tip);
                table_->setItem(row, col, item);
            };
            set(NameColumn, QStringLiteral("L%1H%2").arg(l).arg(h));
            set(LayerColumn, l);
            set(HeadColumn, h);
            for (HeadDetector d : allDetectors()) {
                const auto s = scores(d);
                if (s && !std::isnan(s->scores(l, h)))
                    set(columnOf(d), double(s->scores(l, h)), headDetectorFormula(d));
                else
                    set(columnOf(d), QString(), s ? tr("no query position qualifies") : tr("computing…"));
            }
        }
    table_->setSortingEnabled(true);
}

QString HeadDetectorsView::exportCsv(const QString& path) const {
    QStringList header{"head", "layer", "index"};
    for (HeadDetector d : allDetectors()) header << headDetectorName(d);
    std::vector<QStringList> rows;
    const int nLayers = cache_ ? cache_->nLayers() : 0;
    const int nHeads = nLayers ? cache_->nHeads() : 0;
    for (int l = 0; l < nLayers; ++l)
        for (int h = 0; h < nHeads; ++h) {
            QStringList row{QStringLiteral("L%1H%2").arg(l).arg(h), QString::number(l), QString::number(h)};
            for (HeadDetector d : allDetectors()) {
                const auto s = scores(d);
                row << (s && !std::isnan(s->scores(l, h)) ? QString::number(double(s->scores(l, h)), 'g', 9) : QString());
            }
            rows.push_back(row);
        }
    QString error;
    writeCsv(path, header, rows, &error);
    return error;
}

} // namespace attnscope
