#include "views/embedding_space/logit_lens_panel.h"

#include "views/embedding_space/component_readout_view.h"
#include "views/figures/appearance.h"
#include "views/figures/palettes.h"
#include "views/common/panel_state.h"
#include "views/figures/table_figure.h"
#include "views/common/token_picker.h"
#include "views/common/top_tokens_view.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

namespace attnscope {

namespace {
// saved names of the colourings and of the two tables (session files)
const QStringList kColouringNames{QStringLiteral("top-probability"), QStringLiteral("target-rank")};
const QStringList kViewNames{QStringLiteral("top-token"), QStringLiteral("rankings")};
} // namespace

LogitLensPanel::LogitLensPanel(QWidget* parent) : AnalysisPanel(parent) { buildUi(); }

QColor LogitLensPanel::probabilityColour(double p) { return sequentialColor(p); }

QColor LogitLensPanel::rankColour(int rank, int vocabSize) {
    const double v = vocabSize > 1 ? 1.0 - std::log(double(rank) + 1.0) / std::log(double(vocabSize)) : 1.0;
    return probabilityColour(v);
}

void LogitLensPanel::buildUi() {
    colourBy_ = new QComboBox;
    colourBy_->addItems({tr("probability of the top token"), tr("rank of the target token")});
    targetField_ = new TokenPicker;
    targetField_->setMinimumWidth(200);
    kSpin_ = new QSpinBox;
    kSpin_->setRange(1, 100);
    kSpin_->setValue(k_);
    auto* csv = new QPushButton(tr("Export CSV…"));
    auto* fig = new QPushButton(tr("Export figure…"));

    auto* controls = tool_.controlRow({new QLabel(tr("Colour by")), colourBy_, new QLabel(tr("target token")), targetField_,
                                       new QLabel(tr("top-k")), kSpin_});
    controls->addWidget(csv);
    controls->addWidget(fig);

    legend_ = new QLabel;
    legend_->setWordWrap(true);

    table_ = new QTableWidget;
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    rankings_ = new QTableWidget;
    rankings_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    rankings_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    installTableFigure(table_, QStringLiteral("logit_lens"), tr("Run a prompt to see the logit lens."))
        ->setCorner(tr("boundary \\ token"));
    installTableFigure(rankings_, QStringLiteral("token_rankings"), tr("Run a prompt to see the logit lens."))
        ->setCorner(tr("boundary \\ token"));
    views_ = new QTabWidget;
    views_->addTab(table_, tr("Top token per layer"));
    views_->addTab(rankings_, tr("Token rankings"));

    cellCaption_ = new QLabel(tr("Click a cell to list its top tokens."));
    cellCaption_->setWordWrap(true);
    cellTokens_ = new TopTokensView;
    auto* cellBox = new QGroupBox(tr("Cell"));
    auto* cellLayout = new QVBoxLayout(cellBox);
    cellLayout->addWidget(cellCaption_);
    cellLayout->addWidget(cellTokens_);
    readout_ = new ComponentReadoutView;
    auto* readoutBox = new QGroupBox(tr("Component readout"));
    (new QVBoxLayout(readoutBox))->addWidget(readout_);
    auto* split = splitPanes(Qt::Vertical, {{views_, 3}, {splitPanes(Qt::Horizontal, {{cellBox, 2}, {readoutBox, 3}}), 2}});

    auto* v = new QVBoxLayout(this);
    v->addLayout(controls);
    v->addWidget(legend_);
    v->addWidget(split, 1);

    connect(colourBy_, &QComboBox::currentIndexChanged, this,
            [this](int i) { setColouring(i == 0 ? Colouring::TopProbability : Colouring::TargetRank); });
    connect(targetField_, &TokenPicker::tokenChosen, this, &LogitLensPanel::setTargetToken);
    connect(&Appearance::instance(), &Appearance::changed, this, [this] { setColouring(colouring_); }); // recolour
    connect(kSpin_, &QSpinBox::valueChanged, this, &LogitLensPanel::setTopK);
    connect(table_, &QTableWidget::cellClicked, this, &LogitLensPanel::selectCell);
    connect(rankings_, &QTableWidget::cellClicked, this, &LogitLensPanel::selectCell);
    connect(csv, &QPushButton::clicked, this, [this] { exportDialog(false); });
    connect(fig, &QPushButton::clicked, this, [this] { exportDialog(true); });
    tool_.setFailedHandler([this](const QString& m) { emit statusMessage(m); });
    connect(&tool_.task(), &BackgroundTask::progressChanged, this,
            [this](qint64 done, qint64 total, const QString&) {
                if (done == total) emit statusMessage(tr("Logit lens: %1 rows computed.").arg(total));
            });
    resetTable();
}

void LogitLensPanel::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                                const QStringList& tokenLabels) {
    if (model.get() != model_.get()) {
        targetField_->setTokenizer(model ? &model->tokenizer() : nullptr);
        target_ = -1;
        targetField_->clear();
    }
    model_ = std::move(model);
    cache_ = std::move(cache);
    labels_ = tokenLabels;
    readout_->setContext(model_, cache_, labels_);
    resetTable();
    startJob();
}

void LogitLensPanel::setSelectedHead(int layer, int head) {
    readout_->setComponent(ComponentReadoutView::Component::Head, layer, head);
}

void LogitLensPanel::setTopK(int k) {
    if (k == k_) return;
    k_ = k;
    {
        const QSignalBlocker b(kSpin_);
        kSpin_->setValue(k);
    }
    for (auto& row : top_) row.clear();
    startJob();
}

void LogitLensPanel::setColouring(Colouring colouring) {
    colouring_ = colouring;
    {
        const QSignalBlocker b(colourBy_);
        colourBy_->setCurrentIndex(colouring == Colouring::TopProbability ? 0 : 1);
    }
    for (int b = 0; b < int(top_.size()); ++b) refreshRow(b);
    if (colouring_ == Colouring::TopProbability)
        legend_->setText(tr("Each cell: the token the residual stream predicts at that layer boundary "
                            "(ln_final with the residual's own mean and variance, then W_U). Colour: its "
                            "probability, %1 0 (dark) → 1 (yellow). The last row is the model's output.")
                             .arg(sequentialMapName()));
    else
        legend_->setText(target_ < 0 ? tr("Type a target token to colour cells by its rank.")
                                     : tr("Colour: rank of the target token among all %1 tokens, yellow = rank 1, "
                                          "dark = last (log scale). Hover a cell for the number.")
                                           .arg(model_ ? model_->config().d_vocab : 0));
    tableFigureOf(table_)->setTitle(figureTitle(false));
    tableFigureOf(rankings_)->setTitle(figureTitle(true));
}

void LogitLensPanel::setTargetToken(int tokenId) {
    if (model_ && (tokenId < -1 || tokenId >= model_->config().d_vocab)) return;
    target_ = tokenId;
    if (tokenId >= 0 && targetField_->tokenId() != tokenId) targetField_->setTokenId(tokenId);
    for (auto& row : ranks_) row.clear();
    if (tokenId >= 0 && colouring_ != Colouring::TargetRank) setColouring(Colouring::TargetRank);
    else setColouring(colouring_);
    startJob();
}

void LogitLensPanel::resetTable() {
    const int nb = model_ ? lensBoundaryCount(model_->config()) : 0;
    const int np = (model_ && cache_) ? cache_->nPositions() : 0;
    top_.assign(size_t(nb), {});
    ranks_.assign(size_t(nb), {});
    for (QTableWidget* t : {table_, rankings_}) {
        // header labels one by one with ResizeToContents re-measure the whole table per label (minutes at
        // S = 1024): fixed sections while filling, the content sizes once afterwards
        const QHeaderView::ResizeMode hMode = QHeaderView::ResizeToContents, // as set up in the constructor
            vMode = t == table_ ? QHeaderView::ResizeToContents : QHeaderView::Interactive;
        t->horizontalHeader()->setSectionResizeMode(QHeaderView::Fixed);
        t->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
        t->clear();
        t->setRowCount(np > 0 ? nb : 0);
        t->setColumnCount(np);
        QStringList rows;
        for (int b = 0; b < nb && np > 0; ++b) rows << lensBoundaryName(model_->config(), b);
        t->setVerticalHeaderLabels(rows);
        QStringList cols;
        for (int p = 0; p < np; ++p) cols << QStringLiteral("%1 %2").arg(p).arg(labels_.value(p));
        t->setHorizontalHeaderLabels(cols);
        t->horizontalHeader()->setSectionResizeMode(hMode);
        t->verticalHeader()->setSectionResizeMode(vMode);
    }
    selectedBoundary_ = selectedPosition_ = -1;
    cellTokens_->setTokens({});
    cellCaption_->setText(np > 0 ? tr("Click a cell to list its top tokens.") : tr("Run a prompt to see the logit lens."));
    cellTokens_->setEmptyText(np > 0 ? tr("Click a cell of the table to list its top tokens.")
                                     : tr("Run a prompt, then click a cell of the table."));
    setColouring(colouring_);
}

void LogitLensPanel::startJob() {
    if (!model_ || !cache_ || cache_->nPositions() == 0) {
        tool_.discard();
        return;
    }
    std::vector<char> needTop(top_.size());
    for (size_t b = 0; b < top_.size(); ++b) needTop[b] = top_[b].empty();
    const int target = target_, k = k_;
    tool_.start([this, model = model_, cache = cache_, needTop, target, k](const BackgroundTask::Context& ctx) {
        const int nb = int(needTop.size());
        for (int b = 0; b < nb; ++b) {
            ctx.progress.step(b, nb, tr("logit lens"));
            if (!needTop[size_t(b)] && target < 0) continue;
            const Matrix logits = lensLogits(*model, *cache, b);
            std::vector<std::vector<TokenScore>> top;
            std::vector<TokenRank> ranks;
            for (int p = 0; p < logits.rows(); ++p) {
                if (needTop[size_t(b)]) top.push_back(topTokens(logits.row(p), k));
                if (target >= 0) ranks.push_back(rankOf(logits.row(p), target));
            }
            ctx.post([this, b, top = std::move(top), ranks = std::move(ranks), target]() mutable {
                applyRow(b, std::move(top), std::move(ranks), target);
            });
        }
        ctx.progress.step(nb, nb, tr("logit lens"));
        return std::function<void()>{};
    });
}

void LogitLensPanel::applyRow(int b, std::vector<std::vector<TokenScore>> top, std::vector<TokenRank> ranks,
                              int target) {
    if (b < 0 || b >= int(top_.size())) return;
    if (!top.empty()) top_[size_t(b)] = std::move(top);
    if (target == target_ && !ranks.empty()) ranks_[size_t(b)] = std::move(ranks);
    refreshRow(b);
    if (b == selectedBoundary_) showCell(selectedBoundary_, selectedPosition_);
}

void LogitLensPanel::refreshRow(int b) {
    if (!model_ || b >= table_->rowCount()) return;
    const Tokenizer& tok = model_->tokenizer();
    const int V = model_->config().d_vocab;
    const auto& top = top_[size_t(b)];
    const auto& ranks = ranks_[size_t(b)];
    const QString boundary = lensBoundaryName(model_->config(), b);
    for (int p = 0; p < table_->columnCount(); ++p) {
        auto* item = new QTableWidgetItem;
        item->setTextAlignment(Qt::AlignCenter);
        QString tip = tr("%1, position %2 (%3)").arg(boundary).arg(p).arg(labels_.value(p));
        QColor bg;
        if (size_t(p) < top.size() && !top[size_t(p)].empty()) {
            const TokenScore& t = top[size_t(p)].front();
            item->setText(tok.displayToken(t.id));
            item->setData(TokenIdRole, t.id);
            item->setData(ProbabilityRole, double(t.prob));
            tip += tr("\ntop: %1 (id %2), p = %3").arg(tok.displayToken(t.id)).arg(t.id).arg(t.prob, 0, 'f', 4);
            if (colouring_ == Colouring::TopProbability) bg = probabilityColour(t.prob);
        } else {
            item->setText(QStringLiteral("…"));
        }
        if (target_ >= 0 && size_t(p) < ranks.size()) {
            const TokenRank& r = ranks[size_t(p)];
            item->setData(TargetRankRole, r.rank);
            tip += tr("\n%1: rank %2, p = %3").arg(tok.displayToken(target_)).arg(r.rank + 1).arg(r.prob, 0, 'g', 4);
            if (colouring_ == Colouring::TargetRank) bg = rankColour(r.rank, V);
            auto* ri = new QTableWidgetItem(QStringLiteral("#%1  %2%").arg(r.rank + 1).arg(100.0 * r.prob, 0, 'f', 2));
            ri->setData(TargetRankRole, r.rank);
            ri->setData(ProbabilityRole, double(r.prob));
            ri->setData(kExactValueRole, r.rank + 1); // Copy values / CSV: the 1-based rank
            ri->setBackground(rankColour(r.rank, V));
            ri->setForeground(contrastingTextColor(rankColour(r.rank, V)));
            ri->setTextAlignment(Qt::AlignCenter);
            rankings_->setItem(b, p, ri);
        } else {
            rankings_->setItem(b, p, new QTableWidgetItem(target_ >= 0 ? QStringLiteral("…") : QString()));
        }
        if (bg.isValid()) {
            item->setBackground(bg);
            item->setForeground(contrastingTextColor(bg));
        }
        item->setToolTip(tip);
        table_->setItem(b, p, item);
    }
}

void LogitLensPanel::selectCell(int boundary, int position) {
    if (boundary < 0 || boundary >= int(top_.size()) || position < 0 || position >= table_->columnCount()) return;
    selectedBoundary_ = boundary;
    selectedPosition_ = position;
    readout_->setPosition(position);
    showCell(boundary, position);
}

void LogitLensPanel::showCell(int b, int p) {
    const auto& row = top_[size_t(b)];
    const QString where = tr("%1 at position %2 (%3)").arg(lensBoundaryName(model_->config(), b)).arg(p).arg(labels_.value(p));
    if (size_t(p) >= row.size()) {
        cellCaption_->setText(where + tr(": computing…"));
        cellTokens_->setTokens({});
        return;
    }
    QVector<TopToken> list;
    for (const TokenScore& t : row[size_t(p)])
        list.push_back({t.id, model_->tokenizer().displayToken(t.id), t.logit, t.prob});
    cellTokens_->setTokens(list);
    cellCaption_->setText(where);
}

void LogitLensPanel::waitForIdle() {
    tool_.waitForIdle();
    readout_->task().waitForIdle();
}

QString LogitLensPanel::exportCsv(const QString& path, bool rankings) const {
    QString error;
    return exportTableCsv(rankings ? *rankings_ : *table_, path, &error) ? QString() : error;
}

QString LogitLensPanel::figureTitle(bool rankings) const {
    QString title = model_ ? model_->info().name + QStringLiteral(" — ") : QString();
    title += rankings && target_ >= 0 ? tr("rank of %1 per layer (logit lens)").arg(model_->tokenizer().displayToken(target_))
                                      : colouring_ == Colouring::TargetRank && target_ >= 0
                                          ? tr("logit lens: top token per layer (colour: rank of %1)")
                                                .arg(model_->tokenizer().displayToken(target_))
                                          : tr("logit lens: top token per layer (colour: its probability)");
    return title;
}

QString LogitLensPanel::exportFigure(const QString& path, bool rankings) const {
    const auto fmt = imageFormatFromName(path);
    if (!fmt || QFileInfo(path).suffix().isEmpty()) return tr("%1: unknown image format (use .png, .svg or .pdf)").arg(path);
    TableViewFigure* figure = tableFigureOf(rankings ? rankings_ : table_);
    figure->setTitle(figureTitle(rankings));
    QString error;
    return attnscope::exportFigure(*figure, path, *fmt, {}, 2.0, &error) ? QString() : error;
}

void LogitLensPanel::exportDialog(bool figure) {
    const bool rankings = views_->currentIndex() == 1;
    const QString path = QFileDialog::getSaveFileName(
        this, figure ? tr("Export figure") : tr("Export CSV"), rankings ? "token_rankings" : "logit_lens",
        figure ? tr("Images (*.png *.svg *.pdf)") : tr("CSV (*.csv)"));
    if (path.isEmpty()) return;
    const QString error = figure ? exportFigure(path, rankings) : exportCsv(path, rankings);
    if (!error.isEmpty()) QMessageBox::warning(this, tr("Export failed"), error);
    else emit statusMessage(tr("Wrote %1.").arg(path));
}

QJsonObject LogitLensPanel::saveState() const {
    QJsonObject o{{QStringLiteral("topK"), k_},
                  {QStringLiteral("colouring"), kColouringNames.value(colouring_ == Colouring::TopProbability ? 0 : 1)},
                  {QStringLiteral("target"), target_ >= 0 ? targetField_->text() : QString()},
                  {QStringLiteral("view"), kViewNames.value(views_->currentIndex())}};
    if (selectedBoundary_ >= 0) o.insert(QStringLiteral("cell"), QJsonArray{selectedBoundary_, selectedPosition_});
    return o;
}

void LogitLensPanel::restoreState(const QJsonObject& state, QStringList* problems) {
    const PanelStateReader r(state, title(), problems);
    if (auto k = r.integer(QStringLiteral("topK"), kSpin_->minimum(), kSpin_->maximum())) setTopK(*k);
    if (auto t = r.string(QStringLiteral("target"))) {
        targetField_->setText(*t);
        if (t->isEmpty()) setTargetToken(-1);
        else if (auto id = targetField_->tokenId()) setTargetToken(*id);
        else r.problem(tr("target token \"%1\" is not a token of this model").arg(*t));
    }
    if (auto c = r.choice(QStringLiteral("colouring"), kColouringNames))
        setColouring(*c == 0 ? Colouring::TopProbability : Colouring::TargetRank);
    if (auto v = r.choice(QStringLiteral("view"), kViewNames)) views_->setCurrentIndex(*v);
    if (auto cell = r.array(QStringLiteral("cell"))) {
        const int b = cell->size() == 2 ? cell->at(0).toInt(-1) : -1, p = cell->size() == 2 ? cell->at(1).toInt(-1) : -1;
        if (b >= 0 && b < int(top_.size()) && p >= 0 && p < table_->columnCount()) selectCell(b, p);
        else r.problem(tr("cell %1, %2 is outside the table (%3 boundaries × %4 positions)")
                           .arg(b).arg(p).arg(top_.size()).arg(table_->columnCount()));
    }
}

} // namespace attnscope
