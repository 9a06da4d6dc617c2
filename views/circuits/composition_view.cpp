#include "views/circuits/composition_view.h"

#include "views/figures/matrix_heatmap.h"
#include "views/common/score_tables.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

namespace attnscope {

CompositionView::CompositionView(QWidget* parent)
    : QWidget(parent), tool_(tr("Compute scores"), tr("Scores from the weights alone; no prompt needed.")),
      ovTool_({}, tr("Virtual OV circuit: select a pair.")) {
    kind_ = new QComboBox;
    kind_->addItem(tr("K-composition"), int(CompositionKind::K));
    kind_->addItem(tr("Q-composition"), int(CompositionKind::Q));
    kind_->addItem(tr("V-composition"), int(CompositionKind::V));
    kind_->setItemData(0, tr("‖W_OV^a · (W_QK^b)ᵀ‖_F / (‖W_OV^a‖_F ‖W_QK^b‖_F): head a's output read by head b's keys"), Qt::ToolTipRole);
    kind_->setItemData(1, tr("‖W_OV^a · W_QK^b‖_F / (‖W_OV^a‖_F ‖W_QK^b‖_F): head a's output read by head b's queries"), Qt::ToolTipRole);
    kind_->setItemData(2, tr("‖W_OV^a · W_OV^b‖_F / (‖W_OV^a‖_F ‖W_OV^b‖_F): head a's output moved on by head b"), Qt::ToolTipRole);
    heatmap_ = new MatrixHeatmap;
    heatmap_->setEmptyText(tr("Compute scores: every pair of heads in different layers. Click a cell for its virtual OV circuit."));
    auto* side = new QWidget;
    auto* sideLayout = new QVBoxLayout(side);
    sideLayout->setContentsMargins(0, 0, 0, 0);
    pairs_ = makeScoreTable({tr("#"), tr("from"), tr("to"), tr("score"), tr("baseline"), tr("score / baseline")},
                            QStringLiteral("composition_pairs"), tr("Compute scores to list the strongest pairs."));
    sideLayout->addWidget(pairs_, 2);
    k_ = new QSpinBox;
    k_->setRange(1, 1000);
    k_->setValue(20);
    k_->setPrefix(tr("top "));
    sideLayout->addLayout(ovTool_.controlRow({ovTool_.statusLabel(), k_}));
    ov_ = makeScoreTable({tr("#"), tr("source token"), tr("output token"), tr("score")}, QStringLiteral("virtual_ov"),
                         tr("Select a pair to see which tokens head a then head b move to which."));
    sideLayout->addWidget(ov_, 3);
    tool_.addTo(new QVBoxLayout(this), {kind_}, splitPanes(Qt::Horizontal, {{heatmap_, 3}, {side, 2}}));

    connect(&tool_, &BackgroundTool::runRequested, this, &CompositionView::run);
    connect(kind_, &QComboBox::currentIndexChanged, this, [this] {
        if (scores_) run();
    });
    connect(heatmap_, &MatrixHeatmap::cellClicked, this, [this](int row, int col) {
        if (!scores_) return;
        const int H = scores_->nHeads;
        if (std::isnan(scores_->scores(row, col))) return;
        showVirtualOv(row / H, row % H, col / H, col % H);
    });
    connect(pairs_, &QTableWidget::cellClicked, this, [this](int row, int) {
        const QTableWidgetItem* a = pairs_->item(row, FromColumn);
        const QTableWidgetItem* b = pairs_->item(row, ToColumn);
        if (a && b)
            showVirtualOv(a->data(Qt::UserRole).toInt(), a->data(Qt::UserRole + 1).toInt(), b->data(Qt::UserRole).toInt(),
                          b->data(Qt::UserRole + 1).toInt());
    });
}

void CompositionView::setContext(std::shared_ptr<const Model> model) {
    if (model == model_) return;
    tool_.newContext();
    ovTool_.newContext();
    model_ = std::move(model);
    scores_.reset();
    ov_->setRowCount(0);
    tool_.runButton()->setEnabled(bool(model_));
    redraw();
}

void CompositionView::setKind(CompositionKind kind) { kind_->setCurrentIndex(kind_->findData(int(kind))); }
CompositionKind CompositionView::kind() const { return CompositionKind(kind_->currentData().toInt()); }

void CompositionView::run() {
    if (!model_) return;
    tool_.start(tr("Computing composition scores…"), [this, model = model_, k = kind()](const BackgroundTask::Context& ctx) -> std::function<void()> {
        std::shared_ptr<const CompositionScores> s = compositionScores(*model, k, ctx.progress);
        return [this, s] {
            scores_ = s;
            redraw();
        };
    });
}

void CompositionView::redraw() {
    if (!model_ || !scores_) {
        heatmap_->setFigure({});
        pairs_->setRowCount(0);
        return;
    }
    const CompositionScores& s = *scores_;
    const QString name = compositionKindName(s.kind).toUpper() + tr("-composition");
    QStringList heads;
    for (int l = 0; l < s.nLayers; ++l)
        for (int h = 0; h < s.nHeads; ++h) heads << QStringLiteral("L%1H%2").arg(l).arg(h);
    MatrixFigure f;
    f.values = Matrix(s.scores);
    f.rowLabels = heads;
    f.colLabels = heads;
    f.rowTitle = tr("earlier head a (writes)");
    f.colTitle = tr("later head b (reads)");
    f.title = tr("%1 scores (random baseline %2)").arg(name).arg(s.baseline.mean, 0, 'f', 4);
    f.valueTitle = tr("composition score");
    f.scale = MatrixFigure::Scale::Sequential;
    heatmap_->setFigure(f);
    tool_.setStatus(tr("%1: ‖L·R‖_F / (‖L‖_F ‖R‖_F) for every earlier head a and later head b. Random baseline (matrices of "
                          "the same shapes, N(0,1) entries): %2 ± %3 over %4 samples; a score well above it means the heads "
                          "read and write related subspaces.")
                           .arg(name)
                           .arg(s.baseline.mean, 0, 'f', 4)
                           .arg(s.baseline.sd, 0, 'f', 4)
                           .arg(s.baseline.samples));
    struct Pair { int a, b; float score; };
    std::vector<Pair> all;
    for (int a = 0; a < s.scores.rows(); ++a)
        for (int b = 0; b < s.scores.cols(); ++b)
            if (std::isfinite(s.scores(a, b))) all.push_back({a, b, s.scores(a, b)});
    const size_t n = std::min<size_t>(100, all.size());
    std::partial_sort(all.begin(), all.begin() + ptrdiff_t(n), all.end(), [](const Pair& x, const Pair& y) { return x.score > y.score; });
    pairs_->setRowCount(int(n));
    const int H = s.nHeads;
    for (int r = 0; r < int(n); ++r) {
        const Pair& p = all[size_t(r)];
        pairs_->setItem(r, RankColumn, rankCell(r + 1));
        pairs_->setItem(r, FromColumn, componentCell(heads[p.a], p.a / H, p.a % H));
        pairs_->setItem(r, ToColumn, componentCell(heads[p.b], p.b / H, p.b % H));
        pairs_->setItem(r, ScoreColumn, scoreCell(p.score));
        pairs_->setItem(r, BaselineColumn, scoreCell(s.baseline.mean));
        pairs_->setItem(r, RatioColumn, scoreCell(p.score / s.baseline.mean));
    }
}

void CompositionView::showVirtualOv(int layerA, int headA, int layerB, int headB) {
    if (!model_) return;
    const int k = k_->value();
    ovTool_.start(tr("Virtual OV circuit L%1H%2 → L%3H%4: computing…").arg(layerA).arg(headA).arg(layerB).arg(headB),
                  [this, model = model_, layerA, headA, layerB, headB, k](const BackgroundTask::Context& ctx) -> std::function<void()> {
        std::vector<ScoredPair> top = virtualOvCircuit(*model, layerA, headA, layerB, headB, k, ctx.progress);
        return [this, top = std::move(top), layerA, headA, layerB, headB] {
            fillPairTable(ov_, top, model_->tokenizer());
            ovTool_.setStatus(tr("Virtual OV circuit L%1H%2 → L%3H%4: W_E·W_OV^a·W_OV^b·W_Eᵀ, top %5 (source token → output token)")
                                  .arg(layerA).arg(headA).arg(layerB).arg(headB).arg(top.size()));
        };
    });
}

} // namespace attnscope
