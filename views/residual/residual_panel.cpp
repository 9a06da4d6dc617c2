#include "views/residual/residual_panel.h"

#include "model/core/csv_writer.h"
#include "model/core/errors.h"
#include "model/analysis/embedding_space/logit_lens.h"
#include "views/residual/ablation_panel.h"
#include "views/figures/chart_figure.h"
#include "views/figures/figure_actions.h"
#include "views/figures/figure_export.h"
#include "views/attention/head_detectors_panel.h"
#include "views/attention/head_grid.h"
#include "views/figures/table_figure.h"
#include "views/common/panel_state.h"
#include "views/common/token_picker.h"

#include <qcustomplot.h>

#include <cmath>
#include <QComboBox>
#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QThread>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QTabWidget>
#include <QVBoxLayout>

namespace attnscope {

namespace {
QString num(double v, int precision = 4) { return QString::number(v, 'f', precision); }
// saved names of Measure values, the sub-tabs and the ablation kinds (session files)
const QStringList kMeasureNames{QStringLiteral("norm"), QStringLiteral("dla-token"), QStringLiteral("dla-difference")};
const QStringList kSubTabNames{QStringLiteral("contributions"), QStringLiteral("head-detectors"), QStringLiteral("ablation")};
const QStringList kAblationNames{QStringLiteral("zero"), QStringLiteral("mean")};
QStringList overlayNames() {
    QStringList names{QStringLiteral("none")};
    for (HeadDetector d : HeadDetectorsView::allDetectors()) names << headDetectorName(d);
    return names;
}
} // namespace

QString ResidualPanel::dlaConvention() {
    return tr("Direct logit attribution (TransformerLens convention): each component c of the final residual at the "
              "position is divided by the final LayerNorm's scale cached from the full residual there (frozen, not "
              "recomputed per component), centred (its mean over d_model subtracted; not for RMSNorm), multiplied by "
              "ln_final.w and projected on W_U[:, t] (or W_U[:, t] − W_U[:, t′] for a difference). The components "
              "sum to the model's logit (difference) minus the bias term ln_final.b·u + b_U.");
}

ResidualPanel::ResidualPanel(QWidget* parent) : AnalysisPanel(parent) { buildUi(); }

void ResidualPanel::buildUi() {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Position")));
    positionCombo_ = new QComboBox;
    positionCombo_->setToolTip(tr("The position whose residual stream is decomposed and whose next-token logits are read."));
    positionCombo_->setMinimumContentsLength(12);
    bar->addWidget(positionCombo_);
    bar->addSpacing(12);
    bar->addWidget(new QLabel(tr("Show")));
    measureCombo_ = new QComboBox;
    measureCombo_->addItem(tr("L2 norm"));
    measureCombo_->addItem(tr("DLA to a token"));
    measureCombo_->addItem(tr("DLA to a logit difference"));
    measureCombo_->setItemData(0, tr("‖component‖₂: how much each head/MLP wrote at this position"), Qt::ToolTipRole);
    measureCombo_->setItemData(1, dlaConvention(), Qt::ToolTipRole);
    measureCombo_->setItemData(2, dlaConvention(), Qt::ToolTipRole);
    measureCombo_->setCurrentIndex(1);
    bar->addWidget(measureCombo_);
    bar->addSpacing(12);
    bar->addWidget(new QLabel(tr("Token")));
    target_ = new TokenPicker;
    target_->setPlaceholderText(tr("top prediction"));
    target_->setMinimumWidth(160);
    bar->addWidget(target_);
    auto* minus = new QLabel(tr("minus"));
    bar->addWidget(minus);
    counter_ = new TokenPicker;
    counter_->setPlaceholderText(tr("second token"));
    counter_->setMinimumWidth(160);
    bar->addWidget(counter_);
    bar->addStretch(1);
    layout->addLayout(bar);
    targetLabel_ = new QLabel;
    targetLabel_->setToolTip(dlaConvention());
    layout->addWidget(targetLabel_);

    subTabs_ = new QTabWidget;
    layout->addWidget(subTabs_, 1);

    // contributions
    auto* page = new QWidget;
    auto* pageLayout = new QVBoxLayout(page);
    heatmap_ = new MatrixHeatmap;
    heatmap_->setToolTip(dlaConvention());
    heatmap_->setEmptyText(tr("Run a prompt to see what every head and MLP contributes at a position."));
    heatmap_->figureActions()->setBaseName(QStringLiteral("logit_attribution"));
    cumulative_ = new QCustomPlot;
    cumulative_->setMinimumHeight(220);
    cumulative_->plotLayout()->insertRow(0);
    chartTitle_ = new QCPTextElement(cumulative_, QString(), QFont(font().family(), 10, QFont::Bold));
    cumulative_->plotLayout()->addElement(0, 0, chartTitle_);
    chart_ = new ChartFigure(cumulative_, QStringLiteral("cumulative_logit"),
                             tr("Run a prompt to see the logit build up component by component."));
    chart_->setValues([this] { return chartValues(); });
    chart_->setTooltip([this](const QPoint& pos) { return chartTooltip(pos); });
    cumulative_->setWhatsThis(tr("Bars: each component's direct contribution. Line: the target logit (difference) after "
                                 "adding the components in forward order, starting from the bias term; the last point "
                                 "is the model's logit (difference).\n\n") + dlaConvention());
    table_ = new QTableWidget(0, ColumnCount);
    table_->setHorizontalHeaderLabels({tr("#"), tr("component"), tr("L2 norm"), tr("DLA"), tr("cumulative")});
    table_->horizontalHeaderItem(DlaColumn)->setToolTip(dlaConvention());
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->verticalHeader()->setVisible(false);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    table_->horizontalHeader()->setSectionResizeMode(OrderColumn, QHeaderView::ResizeToContents);
    table_->sortByColumn(OrderColumn, Qt::AscendingOrder);
    table_->setSortingEnabled(true);
    installTableFigure(table_, QStringLiteral("components"), tr("Run a prompt to list the components."));
    auto* rightSplit = new QSplitter(Qt::Vertical);
    rightSplit->addWidget(cumulative_);
    rightSplit->addWidget(table_);
    rightSplit->setStretchFactor(0, 3);
    rightSplit->setStretchFactor(1, 2);
    auto* split = new QSplitter(Qt::Horizontal);
    split->addWidget(heatmap_);
    split->addWidget(rightSplit);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    pageLayout->addWidget(split, 1);
    check_ = new QLabel;
    check_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    check_->setToolTip(dlaConvention());
    reconstruction_ = new QLabel;
    reconstruction_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    reconstruction_->setToolTip(tr("The final residual (input of ln_final) is the sum of the token and position "
                                   "embeddings, every head's z_h·W_O^h, every layer's b_O and every MLP's output; "
                                   "this is the largest float32 rounding difference between that sum and the cached residual."));
    auto* buttons = new QHBoxLayout;
    auto* expHeat = new QPushButton(tr("Export heatmap…"));
    auto* expChart = new QPushButton(tr("Export chart…"));
    auto* expCsv = new QPushButton(tr("Export CSV…"));
    buttons->addWidget(check_, 1);
    buttons->addWidget(expHeat);
    buttons->addWidget(expChart);
    buttons->addWidget(expCsv);
    pageLayout->addLayout(buttons);
    pageLayout->addWidget(reconstruction_);
    subTabs_->addTab(page, tr("Contributions"));

    detectors_ = new HeadDetectorsView;
    subTabs_->addTab(detectors_, tr("Head detectors"));
    ablation_ = new AblationView;
    subTabs_->addTab(ablation_, tr("Ablation"));

    auto updateCounter = [this, minus] {
        const bool diff = measure() == Measure::DlaDifference;
        counter_->setVisible(diff);
        minus->setVisible(diff);
    };
    updateCounter();
    connect(measureCombo_, &QComboBox::currentIndexChanged, this, [this, updateCounter] {
        updateCounter();
        refresh();
    });
    connect(positionCombo_, &QComboBox::currentIndexChanged, this, &ResidualPanel::refresh);
    connect(target_, &TokenPicker::tokenChanged, this, &ResidualPanel::refresh);
    connect(counter_, &TokenPicker::tokenChanged, this, &ResidualPanel::refresh);
    connect(heatmap_, &MatrixHeatmap::cellClicked, this, [this](int row, int col) {
        if (model_ && col < model_->config().n_heads) emit headRequested(row, col);
    });
    connect(detectors_, &HeadDetectorsView::headRequested, this, &ResidualPanel::headRequested);
    connect(detectors_, &HeadDetectorsView::headScoresChanged, this, &ResidualPanel::headScoresChanged);
    connect(expHeat, &QPushButton::clicked, this, [this] { exportDialog(false); });
    connect(expChart, &QPushButton::clicked, this, [this] { exportDialog(true); });
    connect(expCsv, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export components"), "logit_attribution.csv",
                                                          tr("CSV (*.csv)"));
        if (path.isEmpty()) return;
        const QString e = exportComponentsCsv(path);
        emit statusMessage(e.isEmpty() ? tr("Exported %1").arg(path) : e);
    });
}

void ResidualPanel::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                               const QStringList& tokenLabels) {
    if (model != model_) {
        const Tokenizer* tok = model ? &model->tokenizer() : nullptr;
        model_ = model; // keep the tokenizer alive before the pickers use it
        target_->setTokenizer(tok);
        counter_->setTokenizer(tok);
    }
    cache_ = std::move(cache);
    labels_ = tokenLabels;
    {
        const QSignalBlocker block(positionCombo_);
        positionCombo_->clear();
        if (cache_)
            for (int p = 0; p < cache_->nPositions(); ++p)
                positionCombo_->addItem(QStringLiteral("%1: %2").arg(p).arg(labels_.value(p)));
        positionCombo_->setCurrentIndex(positionCombo_->count() - 1);
    }
    detectors_->setContext(model_, cache_);
    ablation_->setContext(model_, cache_);
    refresh();
}

void ResidualPanel::setSelectedHead(int layer, int head) {
    HeadGrid* grid = detectors_->headGrid();
    if (layer < grid->layers() && head < grid->heads()) grid->setSelectedHead(layer, head);
}

void ResidualPanel::setPosition(int position) {
    const int n = positionCombo_->count();
    positionCombo_->setCurrentIndex(position < 0 || position >= n ? n - 1 : position);
}

int ResidualPanel::position() const { return positionCombo_->currentIndex(); }

void ResidualPanel::setMeasure(Measure m) { measureCombo_->setCurrentIndex(int(m)); }

ResidualPanel::Measure ResidualPanel::measure() const { return Measure(measureCombo_->currentIndex()); }

int ResidualPanel::targetToken() const {
    if (!cache_ || position() < 0) return -1;
    if (auto id = target_->tokenId()) return *id;
    const int row = cache_->logitRow(position());
    Eigen::Index best = 0;
    if (row >= 0) {
        cache_->logits.row(row).maxCoeff(&best);
        return int(best);
    }
    // the app's cache keeps only the last position's logits: unembed this position's ln_final once (the
    // lens's final boundary, runForward's expressions) and remember it for the cache and position
    if (topOf_ != cache_.get() || topPosition_ != position()) {
        lensLogits(*model_, *cache_, lensBoundaryCount(model_->config()) - 1, position()).maxCoeff(&best);
        topOf_ = cache_.get();
        topPosition_ = position();
        topId_ = int(best);
    }
    return topId_;
}

int ResidualPanel::counterToken() const {
    if (measure() != Measure::DlaDifference) return -1;
    return counter_->tokenId().value_or(-1);
}

QString ResidualPanel::targetDescription() const {
    if (!model_ || targetToken() < 0) return {};
    const Tokenizer& tok = model_->tokenizer();
    QString s = tr("logit[%1]").arg(tok.displayToken(targetToken()));
    if (counterToken() >= 0) s += tr(" − logit[%1]").arg(tok.displayToken(counterToken()));
    return s;
}

void ResidualPanel::refresh() {
    decomposition_.reset();
    dla_.reset();
    if (!model_ || !cache_ || position() < 0) {
        heatmap_->setFigure({});
        cumulative_->clearPlottables();
        chart_->setHasData(false);
        cumulative_->replot();
        table_->setRowCount(0);
        check_->clear();
        reconstruction_->clear();
        targetLabel_->setText(model_ ? tr("Run a prompt to see the contributions.") : tr("No model open."));
        return;
    }
    const int p = position();
    try {
        decomposition_ = decomposeResidual(*model_, *cache_, ResidualBoundary::finalResidual(model_->config()), p);
        dla_ = directLogitAttribution(*model_, *cache_, {p, targetToken(), counterToken()});
    } catch (const InputError& e) {
        check_->setText(e.message());
        return;
    }
    QString target = tr("Target: %1 at position %2 (%3)").arg(targetDescription()).arg(p).arg(labels_.value(p));
    if (!target_->tokenId()) target += tr(" — the model's top prediction; type a token to choose another");
    if (measure() == Measure::DlaDifference && counterToken() < 0) target += tr(" — type the second token for a difference");
    targetLabel_->setText(target);
    fillHeatmap();
    fillCumulative();
    fillTable();
    check_->setText(checkText());
    reconstruction_->setText(reconstructionText());
    ablation_->setTarget(p, dla_->token, dla_->counterToken, targetDescription());
}

void ResidualPanel::fillHeatmap() {
    const ModelConfig& cfg = model_->config();
    MatrixFigure f;
    for (int l = 0; l < cfg.n_layers; ++l) f.rowLabels << QStringLiteral("L%1").arg(l);
    for (int h = 0; h < cfg.n_heads; ++h) f.colLabels << QStringLiteral("H%1").arg(h);
    f.colLabels << QStringLiteral("MLP");
    f.rowTitle = tr("layer");
    f.colTitle = tr("head (last column: MLP)");
    const QString where = tr("position %1 (%2)").arg(position()).arg(labels_.value(position()));
    if (measure() == Measure::Norm) {
        f.values = componentNormTable(cfg, *decomposition_);
        f.scale = MatrixFigure::Scale::Sequential;
        f.valueTitle = tr("L2 norm");
        f.title = tr("‖component‖₂ at %1").arg(where);
    } else {
        f.values = dlaTable(cfg, *dla_);
        f.scale = MatrixFigure::Scale::Signed;
        f.valueTitle = tr("direct logit attribution");
        f.title = tr("DLA to %1 at %2").arg(targetDescription(), where);
    }
    heatmap_->setFigure(f);
}

void ResidualPanel::fillCumulative() {
    const DirectLogitAttribution& d = *dla_;
    cumulative_->clearPlottables();
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    QVector<double> xs, ys, barX, barY;
    ticker->addTick(0, tr("bias term"));
    xs << 0;
    ys << d.biasTerm;
    for (size_t i = 0; i < d.components.size(); ++i) {
        const double x = double(i + 1);
        ticker->addTick(x, d.components[i].name);
        xs << x;
        ys << d.cumulative[i];
        barX << x;
        barY << d.components[i].value;
    }
    auto* bars = new QCPBars(cumulative_->xAxis, cumulative_->yAxis);
    bars->setName(tr("component DLA"));
    bars->setData(barX, barY, true);
    bars->setWidth(0.7);
    bars->setPen(Qt::NoPen);
    bars->setBrush(QColor(70, 130, 180, 170));
    auto* line = cumulative_->addGraph();
    line->setName(tr("cumulative %1").arg(targetDescription()));
    line->setData(xs, ys, true);
    line->setPen(QPen(QColor(200, 60, 30), 2));
    line->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 4));
    cumulative_->xAxis->setTicker(ticker);
    cumulative_->xAxis->setTickLabelRotation(-90);
    QFont small = cumulative_->xAxis->tickLabelFont();
    small.setPointSizeF(d.components.size() > 60 ? 6.5 : 8);
    cumulative_->xAxis->setTickLabelFont(small);
    cumulative_->xAxis->setSubTicks(false);
    cumulative_->xAxis->setLabel(tr("component (forward order)"));
    cumulative_->yAxis->setLabel(targetDescription());
    bool found = false;
    QCPRange yr = bars->getValueRange(found);
    yr.expand(line->getValueRange(found));
    yr.expand(0.0);
    const double pad = 0.05 * std::max(yr.size(), 1e-6);
    cumulative_->legend->setVisible(true);
    cumulative_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    chartTitle_->setText(
        tr("Cumulative %1 at position %2 (%3)").arg(targetDescription()).arg(d.position).arg(labels_.value(d.position)));
    chart_->setHasData(true);
    chart_->restyle(); // the new legend and ticker
    chart_->setHomeRanges(QCPRange(-0.7, double(d.components.size()) + 0.7), QCPRange(yr.lower - pad, yr.upper + pad));
}

void ResidualPanel::fillTable() {
    const DirectLogitAttribution& d = *dla_;
    table_->setSortingEnabled(false);
    table_->setRowCount(int(d.components.size()));
    for (int i = 0; i < int(d.components.size()); ++i) {
        const double norm = double(decomposition_->components[size_t(i)].vec.norm());
        auto set = [&](int col, const QVariant& display, const QVariant& exact) {
            auto* item = new QTableWidgetItem;
            item->setData(Qt::DisplayRole, display);
            item->setData(Qt::UserRole, exact);
            table_->setItem(i, col, item);
        };
        set(OrderColumn, i, i);
        set(NameColumn, d.components[size_t(i)].name, i);
        set(NormColumn, norm, norm);
        set(DlaColumn, d.components[size_t(i)].value, d.components[size_t(i)].value);
        set(CumulativeColumn, d.cumulative[size_t(i)], d.cumulative[size_t(i)]);
    }
    table_->setSortingEnabled(true);
}

ValueTable ResidualPanel::chartValues() const {
    ValueTable t;
    if (!dla_) return t;
    const DirectLogitAttribution& d = *dla_;
    t.corner = tr("component");
    t.colLabels = QStringList{tr("DLA"), tr("cumulative %1").arg(targetDescription())};
    t.rowLabels << tr("bias term");
    t.cells.push_back({QString(), exactNumber(d.biasTerm)});
    for (size_t i = 0; i < d.components.size(); ++i) {
        t.rowLabels << d.components[i].name;
        t.cells.push_back({exactNumber(d.components[i].value), exactNumber(d.cumulative[i])});
    }
    return t;
}

QString ResidualPanel::chartTooltip(const QPoint& pos) const {
    if (!dla_ || !cumulative_->axisRect()->rect().contains(pos)) return {};
    const DirectLogitAttribution& d = *dla_;
    const int x = int(std::lround(cumulative_->xAxis->pixelToCoord(pos.x())));
    if (x < 0 || x > int(d.components.size())) return {};
    const QString legend = tr("\nBars: each component's direct contribution; line: the running total from the bias "
                              "term, ending at the model's logit (difference).");
    if (x == 0) return tr("bias term: %1").arg(d.biasTerm, 0, 'g', 6) + legend;
    const DlaComponent& c = d.components[size_t(x - 1)];
    return tr("%1: DLA %2, cumulative %3").arg(c.name).arg(c.value, 0, 'g', 6).arg(d.cumulative[size_t(x - 1)], 0, 'g', 6) +
           legend;
}

QString ResidualPanel::checkText() const {
    if (!dla_) return {};
    const DirectLogitAttribution& d = *dla_;
    const double expected = d.logit - d.biasTerm;
    QString text = tr("Check: Σ components' DLA = %1  ·  model %2 − bias term = %3 − %4 = %5  ·  difference %6")
                       .arg(num(d.total), targetDescription(), num(d.logit), num(d.biasTerm), num(expected))
                       .arg(d.total - expected, 0, 'g', 3);
    const double cap = model_ ? model_->config().final_logit_softcap : 0.0;
    if (cap > 0 && d.counterToken < 0) // Gemma 2: DLA splits the logit before the final soft-cap
        text += tr("  ·  before the final soft-cap: the model's logit is %1·tanh(%2 / %1) = %3")
                    .arg(cap)
                    .arg(num(d.logit))
                    .arg(num(cap * std::tanh(d.logit / cap)));
    else if (cap > 0)
        text += tr("  ·  logits before the final soft-cap (%1·tanh(z / %1)), which is not additive").arg(cap);
    return text;
}

QString ResidualPanel::reconstructionText() const {
    if (!decomposition_) return {};
    return tr("Decomposition of the final residual at position %1 into %2 components: max |Σ components − residual| = %3")
        .arg(decomposition_->position)
        .arg(decomposition_->components.size())
        .arg(decomposition_->maxAbsError, 0, 'g', 3);
}

QString ResidualPanel::exportHeatmap(const QString& path, QSize size, double scale) const {
    if (!dla_) return tr("Nothing to export: run a prompt first.");
    QString error;
    exportMatrixFigure(heatmap_->figure(), path, imageFormatFromName(path).value_or(ImageFormat::Png), size, scale, &error);
    return error;
}

QString ResidualPanel::exportCumulative(const QString& path, QSize size, double scale) const {
    if (!dla_) return tr("Nothing to export: run a prompt first.");
    QString error;
    exportFigure(*chart_, path, imageFormatFromName(path).value_or(ImageFormat::Png), size, scale, &error);
    return error;
}

QString ResidualPanel::exportComponentsCsv(const QString& path) const {
    if (!dla_ || !decomposition_) return tr("Nothing to export: run a prompt first.");
    std::vector<QStringList> rows;
    const DirectLogitAttribution& d = *dla_;
    for (size_t i = 0; i < d.components.size(); ++i) {
        const DlaComponent& c = d.components[i];
        rows.push_back({c.name, c.layer >= 0 ? QString::number(c.layer) : QString(),
                        c.head >= 0 ? QString::number(c.head) : QString(),
                        QString::number(double(decomposition_->components[i].vec.norm()), 'g', 9),
                        QString::number(c.value, 'g', 9), QString::number(d.cumulative[i], 'g', 9)});
    }
    rows.push_back({QStringLiteral("bias_term"), {}, {}, {}, QString::number(d.biasTerm, 'g', 9), {}});
    rows.push_back({QStringLiteral("total"), {}, {}, {}, QString::number(d.total, 'g', 9), {}});
    rows.push_back({QStringLiteral("logit"), {}, {}, {}, QString::number(d.logit, 'g', 9), {}});
    QString error;
    writeCsv(path, {"component", "layer", "head", "l2_norm", "dla", "cumulative"}, rows, &error);
    return error;
}

void ResidualPanel::exportDialog(bool chart) {
    if (!dla_) return;
    const QString path = QFileDialog::getSaveFileName(
        this, chart ? tr("Export cumulative chart") : tr("Export heatmap"),
        chart ? QStringLiteral("cumulative_logit.png") : QStringLiteral("logit_attribution.png"),
        tr("PNG image (*.png);;SVG image (*.svg);;PDF document (*.pdf)"));
    if (path.isEmpty()) return;
    const QString e = chart ? exportCumulative(path) : exportHeatmap(path);
    emit statusMessage(e.isEmpty() ? tr("Exported %1").arg(path) : e);
}

QJsonObject ResidualPanel::saveState() const {
    QJsonObject o;
    const bool last = position() < 0 || position() == positionCombo_->count() - 1;
    o.insert(QStringLiteral("position"), last ? -1 : position()); // -1 follows the prompt's last position
    o.insert(QStringLiteral("measure"), kMeasureNames.value(int(measure())));
    o.insert(QStringLiteral("target"), target_->text());
    o.insert(QStringLiteral("counter"), counter_->text());
    o.insert(QStringLiteral("subTab"), kSubTabNames.value(subTabs_->currentIndex()));
    const auto overlay = detectors_->overlay();
    o.insert(QStringLiteral("overlay"), overlay ? headDetectorName(*overlay) : QStringLiteral("none"));
    QJsonArray heads;
    for (auto [l, h] : ablation_->ablatedHeads()) heads.append(QJsonArray{l, h});
    o.insert(QStringLiteral("ablatedHeads"), heads);
    o.insert(QStringLiteral("ablation"), kAblationNames.value(int(ablation_->kind())));
    return o;
}

void ResidualPanel::restoreState(const QJsonObject& state, QStringList* problems) {
    const PanelStateReader r(state, title(), problems);
    if (auto m = r.choice(QStringLiteral("measure"), kMeasureNames)) setMeasure(Measure(*m));
    for (auto [key, picker] : {std::pair{QStringLiteral("target"), target_}, std::pair{QStringLiteral("counter"), counter_}}) {
        const auto text = r.string(key);
        if (!text) continue;
        picker->setText(*text);
        if (!text->isEmpty() && !picker->tokenId())
            r.problem(tr("%1 token \"%2\" is not a token of this model (%3)").arg(key, *text, picker->statusText()));
    }
    if (auto p = r.integer(QStringLiteral("position"), -1, 1 << 30)) {
        if (*p >= positionCombo_->count())
            r.problem(tr("position %1 is past the prompt's last position (%2)").arg(*p).arg(positionCombo_->count() - 1));
        else
            setPosition(*p);
    }
    if (auto t = r.choice(QStringLiteral("subTab"), kSubTabNames)) subTabs_->setCurrentIndex(*t);
    if (auto o = r.choice(QStringLiteral("overlay"), overlayNames()))
        detectors_->setOverlay(*o == 0 ? std::nullopt : std::optional(HeadDetectorsView::allDetectors()[size_t(*o - 1)]));
    if (auto k = r.choice(QStringLiteral("ablation"), kAblationNames)) ablation_->setKind(HeadAblation::Kind(*k));
    if (auto heads = r.array(QStringLiteral("ablatedHeads"))) {
        const int nl = model_ ? model_->config().n_layers : 0, nh = model_ ? model_->config().n_heads : 0;
        std::vector<std::pair<int, int>> valid;
        for (const QJsonValue& v : *heads) {
            const QJsonArray a = v.toArray();
            const int l = a.size() == 2 ? a[0].toInt(-1) : -1, h = a.size() == 2 ? a[1].toInt(-1) : -1;
            if (l >= 0 && l < nl && h >= 0 && h < nh) valid.emplace_back(l, h);
            else r.problem(tr("ablated head %1 is not a head of this model (%2 layers × %3 heads)")
                               .arg(QString::fromUtf8(QJsonDocument(a).toJson(QJsonDocument::Compact))).arg(nl).arg(nh));
        }
        ablation_->setAblatedHeads(valid);
    }
}

void ResidualPanel::waitForIdle() {
    while (detectors_->inductionRunning() || (detectors_->isVisible() && detectors_->promptScoresPending()) ||
           ablation_->isRunning()) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
        QThread::msleep(5);
    }
    QCoreApplication::processEvents();
}

} // namespace attnscope
