#include "views/comparison/stitch_view.h"

#include "model/analysis/embedding_space/embedding_projection.h"
#include "model/core/csv_writer.h"
#include "model/transformer/prompt.h"
#include "views/figures/chart_figure.h"
#include "views/figures/figure_actions.h"
#include "views/common/panel_state.h"
#include "views/common/score_tables.h"
#include "views/figures/table_figure.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

namespace attnscope {

namespace {

const QStringList kChoiceNames{QStringLiteral("first"), QStringLiteral("second"), QStringLiteral("both")};
const QStringList kInverseNames{QStringLiteral("pinv"), QStringLiteral("transpose"), QStringLiteral("both")};
const QStringList kNormNames{QStringLiteral("no"), QStringLiteral("yes"), QStringLiteral("both")};
const QStringList kSideNames{QStringLiteral("W_E"), QStringLiteral("W_U")};
const QList<double> kRconds{1e-3, 1e-4, 1e-5, 1e-6, 1e-7};

/// One colour per variant, the same in both charts (colour-blind-friendly Okabe–Ito hues).
QColor variantColor(int i) {
    static const QColor c[] = {QColor(0, 114, 178), QColor(213, 94, 0), QColor(0, 158, 115), QColor(204, 121, 167),
                               QColor(230, 159, 0), QColor(86, 180, 233), QColor(240, 228, 66), QColor(0, 0, 0)};
    return c[i % 8];
}

QString num(double v, int digits = 4) { return std::isfinite(v) ? QString::number(v, 'f', digits) : QStringLiteral("–"); }

/// Maps a sub-task's (done, total) onto [offset, offset + span) of `total` units of the whole job.
Progress within(const Progress& p, qint64 offset, qint64 span, qint64 total) {
    Progress sub = p;
    sub.report = [p, offset, span, total](qint64 done, qint64 of, const QString& what) {
        if (p.report) p.report(offset + (of > 0 ? done * span / of : 0), total, what);
    };
    return sub;
}

} // namespace

StitchView::StitchView(QWidget* parent) : QWidget(parent), tool_(tr("Sweep k")) { buildUi(); }

void StitchView::buildUi() {
    models_ = new QLabel;
    models_->setWordWrap(true);
    swap_ = new QCheckBox(tr("Swap A ↔ B"));
    swap_->setToolTip(tr("Model A is the window's model and B the second model; swapped, A is the second model."));
    auto* top = new QHBoxLayout;
    top->addWidget(models_, 1);
    top->addWidget(swap_);

    text_ = new QPlainTextEdit;
    text_->setPlaceholderText(tr("Text to stitch on — empty: the window's prompt, as it ran (its tokens, BOS included)"));
    text_->setMaximumHeight(44);
    text_->setTabChangesFocus(true);

    inverse_ = new QComboBox;
    inverse_->addItems({tr("pseudo-inverse (E_Bᵀ)⁺"), tr("transpose E_B"), tr("both")});
    inverse_->setCurrentIndex(2);
    inverse_->setToolTip(tr("What stands in for the inverse of E_Bᵀ: the pseudo-inverse, or the paper's cheap "
                            "approximation by the transpose (M = E_Aᵀ·E_B, which also rescales h)."));
    norm_ = new QComboBox;
    norm_->addItems({tr("no"), tr("yes"), tr("both")});
    norm_->setCurrentIndex(2);
    norm_->setToolTip(tr("Apply model A's final norm (ln_final) to h before projecting it into embedding space."));
    side_ = new QComboBox;
    side_->addItems({tr("W_E (token embedding)"), tr("W_U (unembedding)")});
    side_->setToolTip(tr("Which matrix defines each model's embedding space. W_E is the paper's E; W_U reads the "
                         "residual as the output does (the logit lens) and differs from W_E only in untied models."));
    rcond_ = new QComboBox;
    for (double r : kRconds) rcond_->addItem(QString::number(r, 'g', 1));
    rcond_->setCurrentIndex(2);
    rcond_->setToolTip(tr("Singular values σ ≤ rcond·σ_max of E_B count as zero in the pseudo-inverse."));
    tool_.runButton()->setToolTip(tr("Stitch at every k = 0 … n_layers_A for the chosen variants."));
    auto* controls = tool_.controlRow({new QLabel(tr("Inverse")), inverse_, new QLabel(tr("A's final norm first")), norm_,
                                       new QLabel(tr("E =")), side_, new QLabel(tr("rcond")), rcond_});
    tool_.settings().add(QStringLiteral("inverse"), inverse_, kInverseNames);
    tool_.settings().add(QStringLiteral("finalNorm"), norm_, kNormNames);
    tool_.settings().add(QStringLiteral("side"), side_, kSideNames);
    tool_.settings().add(QStringLiteral("swap"), swap_);
    tool_.settings().add(QStringLiteral("text"), text_);

    mapInfo_ = new QLabel;
    mapInfo_->setWordWrap(true);
    mapInfo_->setTextFormat(Qt::RichText);
    mapInfo_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto makePlot = [this](QCPTextElement*& title, const QString& base, const QString& empty) {
        auto* plot = new QCustomPlot;
        plot->setMinimumHeight(260);
        plot->plotLayout()->insertRow(0);
        title = new QCPTextElement(plot, QString(), QFont(font().family(), 10, QFont::Bold));
        plot->plotLayout()->addElement(0, 0, title);
        // the legend below the axes (rows: title, axes, legend), two entries per row, so it covers no curve
        plot->legend->setVisible(true);
        QFont small = plot->legend->font();
        small.setPointSizeF(7.5);
        plot->legend->setFont(small);
        plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
        plot->legend->setWrap(2);
        plot->axisRect()->insetLayout()->take(plot->legend);
        plot->plotLayout()->addElement(2, 0, plot->legend);
        plot->plotLayout()->setRowStretchFactor(2, 0.001);
        plot->legend->setMargins(QMargins(4, 2, 4, 2));
        auto* figure = new ChartFigure(plot, base, empty);
        figure->setValues([this] { return curveValues(); });
        figure->setTooltip([this, plot](const QPoint& p) { return curveTooltip(plot, p); });
        return std::pair{plot, figure};
    };
    const QString empty = tr("Open a second model that shares the tokenizer, then Sweep k.");
    std::tie(lossPlot_, lossFigure_) = makePlot(lossTitle_, QStringLiteral("stitch_loss"), empty);
    std::tie(agreePlot_, agreeFigure_) = makePlot(agreeTitle_, QStringLiteral("stitch_agreement"), empty);
    auto* charts = splitPanes(Qt::Horizontal, {{lossPlot_, 0}, {agreePlot_, 0}});

    variantShown_ = new QComboBox;
    layers_ = makeScoreTable({tr("k"), tr("loss"), tr("loss − loss_B"), tr("agree A"), tr("agree B"), tr("‖h·M‖/‖h‖")},
                             QStringLiteral("stitch_layers"), empty);
    layers_->setSelectionMode(QAbstractItemView::SingleSelection);
    sizeColumnsToContents(layers_);
    auto* layerBox = new QGroupBox(tr("Per stitch layer"));
    auto* lv = new QVBoxLayout(layerBox);
    auto* lh = new QHBoxLayout;
    lh->addWidget(new QLabel(tr("Variant")));
    lh->addWidget(variantShown_, 1);
    lv->addLayout(lh);
    lv->addWidget(layers_);

    position_ = new QSpinBox;
    position_->setRange(0, 0);
    positionInfo_ = new QLabel;
    positionInfo_->setWordWrap(true);
    positionInfo_->setTextFormat(Qt::PlainText);
    positions_ = makeScoreTable({tr("#"), tr("A"), tr("p_A"), tr("B"), tr("p_B"), tr("stitched"), tr("p_stitched")},
                                QStringLiteral("stitch_position"), empty);
    sizeColumnsToContents(positions_);
    auto* posBox = new QGroupBox(tr("Next-token distributions at one position"));
    auto* pv = new QVBoxLayout(posBox);
    auto* ph = new QHBoxLayout;
    ph->addWidget(new QLabel(tr("Position")));
    ph->addWidget(position_);
    ph->addWidget(positionInfo_, 1);
    pv->addLayout(ph);
    pv->addWidget(positions_);

    auto* split = splitPanes(Qt::Vertical, {{charts, 3}, {splitPanes(Qt::Horizontal, {{layerBox, 0}, {posBox, 0}}), 2}});
    split->setSizes({400, 280});

    auto* v = new QVBoxLayout(this);
    v->addLayout(top);
    v->addWidget(text_);
    v->addLayout(controls);
    auto* info = new QHBoxLayout;
    info->addWidget(mapInfo_, 1);
    info->addWidget(tool_.statusLabel(), 1);
    v->addLayout(info);
    v->addWidget(split, 1);

    connect(&tool_, &BackgroundTool::runRequested, this, &StitchView::run);
    connect(swap_, &QCheckBox::toggled, this, [this] { setSwapped(swap_->isChecked()); });
    for (QComboBox* c : {inverse_, norm_, side_, rcond_})
        connect(c, &QComboBox::currentIndexChanged, this, [this] {
            dirty_ = true;
            if (isVisible()) run();
        });
    connect(variantShown_, &QComboBox::currentIndexChanged, this, [this](int i) { showVariant(i); });
    connect(layers_, &QTableWidget::itemSelectionChanged, this, [this] {
        const auto rows = layers_->selectionModel()->selectedRows();
        if (!rows.isEmpty()) showLayer(layers_->item(rows.first().row(), 0)->data(Qt::UserRole).toInt());
    });
    connect(position_, &QSpinBox::valueChanged, this, [this](int p) { showPosition(p); });
    connect(&tool_.task(), &BackgroundTask::progressChanged, this, [this](qint64, qint64, const QString& what) {
        emit statusMessage(tr("Stitch: %1").arg(what));
    });
    tool_.setFailedHandler([this](const QString& m) { clearResults(tr("Cannot stitch: %1").arg(m)); });
    tool_.setCancelledHandler([this] {
        tool_.setStatus(tr("Cancelled; %1 of the variants were done. Sweep k to start again.").arg(sweeps_.size()));
        dirty_ = true;
    });
    clearResults(empty);
}

std::shared_ptr<const Model> StitchView::modelA() const { return swap_->isChecked() ? second_ : first_; }
std::shared_ptr<const Model> StitchView::modelB() const { return swap_->isChecked() ? first_ : second_; }

void StitchView::setModels(std::shared_ptr<const Model> first, std::shared_ptr<const Model> second,
                           std::shared_ptr<const ActivationCache> cache) {
    const bool pairChanged = first != first_ || second != second_;
    const bool textChanged = cache != cache_ && text_->toPlainText().isEmpty();
    first_ = std::move(first);
    second_ = std::move(second);
    cache_ = std::move(cache);
    const auto a = modelA(), b = modelB();
    models_->setText(a && b ? tr("Model A: %1 (%2 layers, d_model %3) — model B: %4 (%5 layers, d_model %6). k = number of A's "
                                 "blocks that run (0: A's embeddings only), then B's blocks k … %7.")
                                  .arg(a->info().name).arg(a->config().n_layers).arg(a->config().d_model)
                                  .arg(b->info().name).arg(b->config().n_layers).arg(b->config().d_model)
                                  .arg(b->config().n_layers - 1)
                            : tr("Stitching needs two models that share the tokenizer: model A (the window's model) and "
                                 "model B (the second model, opened above)."));
    if (!pairChanged && !textChanged) return;
    dirty_ = true;
    tool_.newContext();
    clearResults(a && b ? tr("Sweep k to stitch %1 onto %2.").arg(a->info().name, b->info().name)
                        : tr("Open a second model that shares the tokenizer, then Sweep k."));
    if (a && b && isVisible()) run();
}

void StitchView::setSwapped(bool swapped) {
    if (swap_->isChecked() != swapped) {
        const QSignalBlocker block(swap_);
        swap_->setChecked(swapped);
    }
    rebuildPair();
}

void StitchView::rebuildPair() {
    auto first = first_;
    first_.reset(); // forces the pair to count as changed
    setModels(std::move(first), second_, cache_);
}

bool StitchView::isSwapped() const { return swap_->isChecked(); }

void StitchView::setText(const QString& text) {
    text_->setPlainText(text);
    dirty_ = true;
}

void StitchView::setInverseChoice(Choice c) { inverse_->setCurrentIndex(int(c)); }
void StitchView::setNormChoice(Choice c) { norm_->setCurrentIndex(int(c)); }
void StitchView::setSide(EmbeddingSide side) { side_->setCurrentIndex(side == EmbeddingSide::Input ? 0 : 1); }
void StitchView::setRcond(double rcond) {
    for (int i = 0; i < kRconds.size(); ++i)
        if (std::abs(kRconds[i] - rcond) <= 1e-3 * rcond) rcond_->setCurrentIndex(i);
}

std::vector<StitchVariant> StitchView::chosenVariants() const {
    const StitchMapOptions base{StitchInverse::PseudoInverse, side_->currentIndex() == 0 ? EmbeddingSide::Input : EmbeddingSide::Output,
                                kRconds.value(rcond_->currentIndex(), kDefaultStitchRcond)};
    std::vector<StitchVariant> out;
    for (const StitchVariant& v : paperStitchVariants(base.side, base.rcond)) {
        const int inv = v.map.inverse == StitchInverse::PseudoInverse ? 0 : 1, norm = v.finalNormA ? 1 : 0;
        if ((inverse_->currentIndex() == 2 || inverse_->currentIndex() == inv) && (norm_->currentIndex() == 2 || norm_->currentIndex() == norm))
            out.push_back(v);
    }
    return out;
}

void StitchView::clearResults(const QString& why) {
    base_.reset();
    sweeps_.clear();
    {
        const QSignalBlocker b(variantShown_);
        variantShown_->clear();
    }
    for (QCustomPlot* p : {lossPlot_, agreePlot_}) p->clearPlottables();
    for (ChartFigure* f : {lossFigure_, agreeFigure_}) {
        f->setEmptyText(why);
        f->setHasData(false);
    }
    layers_->setRowCount(0);
    positions_->setRowCount(0);
    tableFigureOf(layers_)->setEmptyText(why);
    tableFigureOf(positions_)->setEmptyText(why);
    positionInfo_->clear();
    mapInfo_->clear();
    tool_.setStatus(why);
}

void StitchView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (dirty_ && modelA() && modelB() && !tool_.isRunning()) run();
}

void StitchView::run() {
    const auto a = modelA(), b = modelB();
    if (!a || !b) return;
    const std::vector<StitchVariant> variants = chosenVariants();
    const QString text = text_->toPlainText();
    std::vector<int> ids;
    if (text.isEmpty()) {
        if (!cache_) return clearResults(tr("Run a prompt in the window, or type a text above, to stitch on."));
        ids = cache_->tokens;
    }
    dirty_ = false;
    clearResults(tr("Stitching %1 onto %2…").arg(a->info().name, b->info().name));
    tool_.start([this, a, b, variants, text, ids, maps = maps_](const BackgroundTask::Context& ctx) -> std::function<void()> {
        std::vector<int> tokens = ids;
        if (!text.isEmpty()) tokens = tokenizePrompt(a->tokenizer(), text, a->tokenizer().addsBos());
        const int nk = a->config().n_layers + 1;
        // units: A's and B's passes 2, the Gram matrices 3 (cached after the first time), then one per point
        const qint64 total = 5 + qint64(variants.size()) * nk;
        auto base = std::make_shared<const StitchBase>(stitchBase(*a, *b, tokens, 10, within(ctx.progress, 0, 2, total)));
        ctx.post([this, base] { base_ = base; });
        for (size_t i = 0; i < variants.size(); ++i) {
            auto map = maps->get(a, b, variants[i].map, within(ctx.progress, 2, 3, total));
            StitchSweep sweep = stitchSweep(*a, *b, *base, map, variants[i], allStitchLayers(*a),
                                            within(ctx.progress, 5 + qint64(i) * nk, nk, total));
            ctx.post([this, sweep = std::move(sweep)]() mutable {
                sweeps_.push_back(std::move(sweep));
                const QSignalBlocker block(variantShown_);
                variantShown_->addItem(sweeps_.back().variant.label());
                if (sweeps_.size() == 1 && !keepSelection_) {
                    shownVariant_ = 0;
                    shownK_ = -1; // the last k: all of A's blocks
                    shownPosition_ = -1;
                }
                if (int(sweeps_.size()) - 1 == shownVariant_) variantShown_->setCurrentIndex(shownVariant_);
                updateMapInfo();
                plotCurves();
                fillLayerTable();
                fillPositionTable();
            });
        }
        return [this] {
            keepSelection_ = false;
            emit statusMessage(tr("Stitched at %1 layers × %2 variants.").arg(base_ ? base_->residA.size() : 0).arg(sweeps_.size()));
        };
    });
}

void StitchView::updateMapInfo() {
    if (sweeps_.empty()) return mapInfo_->clear();
    const StitchMap& m = *sweeps_.front().map;
    const auto a = modelA(), b = modelB();
    const EmbeddingSpectrum &sa = m.spectrumA, &sb = m.spectrumB;
    const bool we = m.options.side == EmbeddingSide::Input;
    const QString e = we ? tr("E = W_E, each model's token embedding (the paper's E)")
                         : tr("E = W_U, each model's unembedding (the residual read as the output reads it)");
    QString tied;
    const bool tiedA = unembeddingTied(*a), tiedB = unembeddingTied(*b);
    if (tiedA && tiedB) tied = tr("; both models are tied (W_U = W_Eᵀ), so W_E and W_U give the same map");
    else tied = tr("; %1 untied, so W_E and W_U differ").arg(tiedA ? tr("B is") : tiedB ? tr("A is") : tr("both are"));
    QString s = tr("M = E_Aᵀ·(E_Bᵀ)⁺ [%1 × %2], %3%4. (E_Bᵀ)⁺ = E_B·(E_BᵀE_B)⁺ from the float64 Gram matrix's "
                   "eigendecomposition (computed once for this pair and kept), σ ≤ rcond·σ_max = %5·σ_max dropped. "
                   "Numerical rank: E_A %6 of %7 (σ_min/σ_max = %8), E_B %9 of %10 (σ_min/σ_max = %11).")
                    .arg(m.M.rows()).arg(m.M.cols()).arg(e, tied).arg(m.options.rcond, 0, 'g', 2)
                    .arg(sa.rank).arg(sa.dModel()).arg(sa.sigmaMin() / sa.sigmaMax(), 0, 'g', 3)
                    .arg(sb.rank).arg(sb.dModel()).arg(sb.sigmaMin() / sb.sigmaMax(), 0, 'g', 3)
                    .toHtmlEscaped();
    if (m.sameModel && sb.fullRank())
        s += tr(" <b>A and B are the same model</b>: M = I to max |M − I| = %1 (float64), so the pseudo-inverse "
                "variant reproduces the model at every k.").arg(m.identityError, 0, 'g', 2);
    if (!sb.fullRank())
        s += tr(" <span style='color:#c0392b'><b>E_B is rank-deficient: numerical rank %1 of %2.</b> The pseudo-inverse "
                "keeps %1 directions of B's %2, so a model stitched onto itself is not reproduced exactly.</span>")
                 .arg(sb.rank).arg(sb.dModel());
    if (!sa.fullRank())
        s += tr(" <span style='color:#c0392b'>E_A has numerical rank %1 of %2: h·E_Aᵀ loses %3 directions of A's "
                "states.</span>").arg(sa.rank).arg(sa.dModel()).arg(sa.dModel() - sa.rank);
    mapInfo_->setText(s);
}

void StitchView::plotCurves() {
    const auto a = modelA(), b = modelB();
    if (sweeps_.empty() || !base_ || !a || !b) return;
    const int nk = int(sweeps_.front().points.size());
    for (QCustomPlot* p : {lossPlot_, agreePlot_}) {
        p->clearPlottables();
        QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
        ticker->setTickStep(1.0);
        ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        p->xAxis->setTicker(ticker);
        p->xAxis->setLabel(tr("k: A's blocks run before stitching (0 = embeddings only)"));
    }
    agreePlot_->yAxis->setLabel(tr("top-1 agreement"));
    const QVector<double> ends{-0.3, nk - 0.7};
    auto refLine = [&](double y, const QString& name, Qt::PenStyle style) {
        auto* g = lossPlot_->addGraph();
        g->setName(name);
        g->setData(ends, {y, y});
        g->setPen(QPen(QColor(110, 110, 110), 1.5, style));
    };
    refLine(base_->a.loss(), tr("model A alone (%1): %2").arg(a->info().name, num(base_->a.loss(), 3)), Qt::DashLine);
    refLine(base_->b.loss(), tr("model B alone (%1): %2").arg(b->info().name, num(base_->b.loss(), 3)), Qt::DotLine);
    double maxLoss = std::max(base_->a.loss(), base_->b.loss()), minLoss = std::min(base_->a.loss(), base_->b.loss());
    for (size_t i = 0; i < sweeps_.size(); ++i) {
        const StitchSweep& s = sweeps_[i];
        QVector<double> ks, loss, agreeA, agreeB;
        for (const StitchPoint& p : s.points) {
            ks << p.k;
            loss << p.loss;
            agreeA << p.agreeA;
            agreeB << p.agreeB;
            if (std::isfinite(p.loss)) maxLoss = std::max(maxLoss, p.loss), minLoss = std::min(minLoss, p.loss);
        }
        const QColor c = variantColor(int(i));
        auto* g = lossPlot_->addGraph();
        g->setName(s.variant.label());
        g->setData(ks, loss, true);
        g->setPen(QPen(c, 2));
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 5));
        auto* gb = agreePlot_->addGraph();
        gb->setName(tr("%1, with B").arg(s.variant.label()));
        gb->setData(ks, agreeB, true);
        gb->setPen(QPen(c, 2));
        gb->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 5));
        gb->setName(s.variant.label()); // one entry per variant; the title says solid = with B, dashed = with A
        auto* ga = agreePlot_->addGraph();
        ga->setName(tr("%1, with A").arg(s.variant.label()));
        ga->removeFromLegend();
        ga->setData(ks, agreeA, true);
        ga->setPen(QPen(c, 1.5, Qt::DashLine));
        ga->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
    }
    lossTitle_->setText(tr("Stitched loss on the text (%1 tokens) against the stitch layer").arg(base_->tokens.size()));
    agreeTitle_->setText(tr("Top-1 agreement with B (solid) and with A (dashed)"));
    for (ChartFigure* f : {lossFigure_, agreeFigure_}) {
        f->setHasData(true);
        f->restyle();
    }
    // losses that span more than a factor 4 (a failed variant at 30 nats next to working ones at 4) on a log axis
    const bool logScale = minLoss > 0 && maxLoss / minLoss > 4;
    lossPlot_->yAxis->setScaleType(logScale ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (logScale) { // 1, 2, 3, 5, 7 × 10ⁿ labelled, so the working variants near A's and B's loss can be read
        QSharedPointer<QCPAxisTickerText> ticks(new QCPAxisTickerText);
        for (double decade = 0.01; decade < 1e4; decade *= 10)
            for (double m : {1.0, 2.0, 3.0, 5.0, 7.0}) ticks->addTick(m * decade, QString::number(m * decade, 'g', 3));
        lossPlot_->yAxis->setTicker(ticks);
    } else {
        lossPlot_->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    }
    lossPlot_->yAxis->setLabel(logScale ? tr("loss (nats, log scale)") : tr("loss (nats)"));
    lossFigure_->setHomeRanges(QCPRange(-0.3, nk - 0.7), logScale ? QCPRange(minLoss / 1.25, maxLoss * 1.25)
                                                                  : QCPRange(0, maxLoss * 1.08 + 1e-9));
    agreeFigure_->setHomeRanges(QCPRange(-0.3, nk - 0.7), QCPRange(-0.02, 1.05));
    QString best;
    for (const StitchSweep& s : sweeps_) {
        const auto it = std::min_element(s.points.begin(), s.points.end(),
                                         [](const StitchPoint& x, const StitchPoint& y) { return x.loss < y.loss; });
        best += tr("\n• %1: lowest loss %2 at k = %3 (agreement with B %4, with A %5)")
                    .arg(s.variant.label(), num(it->loss, 3)).arg(it->k).arg(num(it->agreeB, 3), num(it->agreeA, 3));
    }
    tool_.setStatus(tr("Loss over the %1 positions with a next token: model A %2, model B %3 nats.%4")
                          .arg(base_->tokens.size() - 1).arg(num(base_->a.loss(), 3), num(base_->b.loss(), 3), best));
}

void StitchView::showVariant(int index) {
    if (index < 0 || index >= int(sweeps_.size())) return;
    shownVariant_ = index;
    if (variantShown_->currentIndex() != index) {
        const QSignalBlocker block(variantShown_);
        variantShown_->setCurrentIndex(index);
    }
    fillLayerTable();
    fillPositionTable();
}

void StitchView::showLayer(int k) {
    if (sweeps_.empty()) return;
    shownK_ = std::clamp(k, 0, int(sweeps_.front().points.size()) - 1);
    fillPositionTable();
}

int StitchView::shownLayerIndex() const {
    const int n = sweeps_.empty() ? 1 : int(sweeps_.front().points.size());
    return shownK_ < 0 || shownK_ >= n ? n - 1 : shownK_;
}

void StitchView::showPosition(int position) {
    shownPosition_ = position;
    fillPositionTable();
}

void StitchView::fillLayerTable() {
    if (sweeps_.empty()) return;
    const StitchSweep& s = sweeps_[size_t(std::clamp(shownVariant_, 0, int(sweeps_.size()) - 1))];
    const QSignalBlocker block(layers_);
    layers_->setRowCount(int(s.points.size()));
    for (int r = 0; r < int(s.points.size()); ++r) {
        const StitchPoint& p = s.points[size_t(r)];
        auto* k = rankCell(p.k);
        k->setData(Qt::UserRole, p.k);
        layers_->setItem(r, 0, k);
        layers_->setItem(r, 1, scoreCell(p.loss));
        layers_->setItem(r, 2, scoreCell(p.loss - p.lossB));
        layers_->setItem(r, 3, scoreCell(p.agreeA));
        layers_->setItem(r, 4, scoreCell(p.agreeB));
        layers_->setItem(r, 5, scoreCell(p.normRatio));
    }
    layers_->selectRow(shownLayerIndex());
    tableFigureOf(layers_)->setTitle(tr("Stitching %1 onto %2: %3").arg(modelA()->info().name, modelB()->info().name, s.variant.label()));
}

void StitchView::fillPositionTable() {
    if (sweeps_.empty() || !base_) return;
    const StitchSweep& s = sweeps_[size_t(std::clamp(shownVariant_, 0, int(sweeps_.size()) - 1))];
    const StitchPoint& p = s.points[size_t(shownLayerIndex())];
    const int S = int(base_->tokens.size());
    const int pos = shownPosition_ < 0 || shownPosition_ >= S ? S - 1 : shownPosition_;
    {
        const QSignalBlocker block(position_);
        position_->setRange(0, S - 1);
        position_->setValue(pos);
    }
    const Tokenizer& tok = modelA()->tokenizer();
    const auto& ta = base_->a.top[size_t(pos)], &tb = base_->b.top[size_t(pos)], &ts = p.predictions.top[size_t(pos)];
    const int rows = int(std::max({ta.size(), tb.size(), ts.size()}));
    positions_->setRowCount(rows);
    for (int r = 0; r < rows; ++r) {
        positions_->setItem(r, 0, rankCell(r + 1));
        int col = 1;
        for (const auto* list : {&ta, &tb, &ts}) {
            if (r < int(list->size())) {
                positions_->setItem(r, col, tokenCell(tok, (*list)[size_t(r)].id));
                positions_->setItem(r, col + 1, scoreCell((*list)[size_t(r)].prob));
            }
            col += 2;
        }
    }
    const QString here = tok.displayToken(base_->tokens[size_t(pos)]);
    if (pos + 1 < S) {
        const QString next = tok.displayToken(base_->tokens[size_t(pos + 1)]);
        positionInfo_->setText(tr("“%1” → next “%2”. −ln p(next): A %3, B %4, stitched %5 (k = %6, %7)")
                                   .arg(here, next, num(-base_->a.targetLogProb[size_t(pos)], 3),
                                        num(-base_->b.targetLogProb[size_t(pos)], 3), num(-p.predictions.targetLogProb[size_t(pos)], 3))
                                   .arg(p.k).arg(s.variant.id()));
    } else {
        positionInfo_->setText(tr("“%1”, the last position (no next token in the text): the predicted continuation "
                                  "(k = %2, %3)").arg(here).arg(p.k).arg(s.variant.id()));
    }
    tableFigureOf(positions_)->setTitle(tr("Position %1 (%2), stitched at k = %3 (%4)").arg(pos).arg(here).arg(p.k).arg(s.variant.id()));
}

ValueTable StitchView::curveValues() const {
    ValueTable t;
    if (sweeps_.empty() || !base_) return t;
    t.corner = tr("k");
    t.colLabels << tr("loss_a") << tr("loss_b");
    for (const StitchSweep& s : sweeps_)
        t.colLabels << tr("loss %1").arg(s.variant.id()) << tr("agree_a %1").arg(s.variant.id())
                    << tr("agree_b %1").arg(s.variant.id()) << tr("norm_ratio %1").arg(s.variant.id());
    for (size_t i = 0; i < sweeps_.front().points.size(); ++i) {
        const StitchPoint& first = sweeps_.front().points[i];
        t.rowLabels << QString::number(first.k);
        QStringList row{exactNumber(first.lossA), exactNumber(first.lossB)};
        for (const StitchSweep& s : sweeps_) {
            const StitchPoint& p = s.points[i];
            row << exactNumber(p.loss) << exactNumber(p.agreeA) << exactNumber(p.agreeB) << exactNumber(p.normRatio);
        }
        t.cells.push_back(row);
    }
    return t;
}

QString StitchView::curveTooltip(QCustomPlot* plot, const QPoint& pos) const {
    if (sweeps_.empty() || !plot->axisRect()->rect().contains(pos)) return {};
    const int k = int(std::lround(plot->xAxis->pixelToCoord(pos.x())));
    if (k < 0 || k >= int(sweeps_.front().points.size())) return {};
    QStringList lines{tr("k = %1 (A's blocks 0 … %2, then B's blocks %1 …)").arg(k).arg(k - 1)};
    if (k == 0) lines[0] = tr("k = 0 (A's embeddings, then all of B's blocks)");
    for (const StitchSweep& s : sweeps_) {
        const StitchPoint& p = s.points[size_t(k)];
        lines << tr("%1: loss %2, agreement with A %3, with B %4").arg(s.variant.label(), num(p.loss), num(p.agreeA, 3), num(p.agreeB, 3));
    }
    lines << tr("model A alone: %1, model B alone: %2").arg(num(sweeps_.front().points[size_t(k)].lossA),
                                                            num(sweeps_.front().points[size_t(k)].lossB));
    return lines.join(QLatin1Char('\n'));
}

QString StitchView::exportCsv(const QString& path) const {
    if (sweeps_.empty()) return tr("%1: nothing to export yet (sweep k first)").arg(path);
    std::vector<QStringList> rows;
    for (const StitchSweep& s : sweeps_)
        for (const StitchPoint& p : s.points)
            rows.push_back({QString::number(p.k), s.variant.id(), exactNumber(p.loss), exactNumber(p.lossA), exactNumber(p.lossB),
                            exactNumber(p.agreeA), exactNumber(p.agreeB), exactNumber(p.normRatio)});
    QString error;
    if (!writeCsv(path, {"k", "variant", "loss", "loss_a", "loss_b", "agree_a", "agree_b", "norm_ratio"}, rows, &error))
        return error;
    return {};
}

QJsonObject StitchView::saveState() const {
    QJsonObject o{{QStringLiteral("rcond"), kRconds.value(rcond_->currentIndex())},
                  {QStringLiteral("variant"), shownVariant_},
                  {QStringLiteral("k"), shownK_},
                  {QStringLiteral("position"), shownPosition_}};
    tool_.settings().save(o); // swap, text, inverse, finalNorm, side
    return o;
}

void StitchView::restoreState(const QJsonObject& state, const PanelStateReader& r) {
    const QJsonObject o = state;
    tool_.settings().restore(r); // inverse, finalNorm, side, swap, text: no sweep per value
    {
        const QSignalBlocker block(rcond_);
        if (o.contains(QStringLiteral("rcond"))) {
            const double v = o.value(QStringLiteral("rcond")).toDouble(-1);
            int found = -1;
            for (int i = 0; i < kRconds.size(); ++i)
                if (std::abs(kRconds[i] - v) <= 1e-3 * kRconds[i]) found = i;
            if (found < 0) r.problem(tr("stitch rcond %1 is not one of 1e-3 … 1e-7").arg(o.value(QStringLiteral("rcond")).toVariant().toString()));
            else rcond_->setCurrentIndex(found);
        }
    }
    if (const auto v = r.integer(QStringLiteral("variant"), 0, 3)) shownVariant_ = *v;
    if (const auto k = r.integer(QStringLiteral("k"), -1, 1 << 20)) shownK_ = *k;
    if (const auto p = r.integer(QStringLiteral("position"), -1, 1 << 24)) shownPosition_ = *p;
    keepSelection_ = true; // the restored variant, k and position survive the rerun
    rebuildPair(); // reruns when visible
}

} // namespace attnscope
