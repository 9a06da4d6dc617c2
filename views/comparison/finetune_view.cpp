#include "views/comparison/finetune_view.h"

#include "model/analysis/embedding_space/embedding_projection.h"
#include "model/analysis/comparison/model_comparison.h"
#include "model/core/csv_writer.h"
#include "views/figures/figure_actions.h"
#include "views/figures/matrix_heatmap.h"
#include "views/common/panel_state.h"
#include "views/common/score_tables.h"
#include "views/figures/table_figure.h"

#include <QComboBox>
#include <QFileInfo>
#include <QDir>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QFileDialog>
#include <QPushButton>
#include <QRegularExpression>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

namespace attnscope {

namespace {

const QStringList kFilterNames{QStringLiteral("all"), QStringLiteral("heads"), QStringLiteral("neurons")};
const QStringList kParameterNames{QStringLiteral("ov"), QStringLiteral("qk"), QStringLiteral("ffvalue"), QStringLiteral("ffkey")};
constexpr int kTopTokens = 20;

QString sibling(const QString& path, const QString& suffix, const QString& ext) {
    const QFileInfo fi(path);
    return fi.dir().filePath(fi.completeBaseName() + QLatin1Char('_') + suffix + QLatin1Char('.') + ext);
}

QString rel(double v) { return std::isfinite(v) ? QString::number(v, 'g', 4) : QStringLiteral("∞"); }

QStringList indexLabels(int n) {
    QStringList l;
    for (int i = 0; i < n; ++i) l << QString::number(i);
    return l;
}

/// "Q 0.021 · K 0.013 · V 0.034 · O 0.020": each part's ‖Δ‖/‖θ‖.
QString partsText(const ComponentChange& c) {
    QStringList parts;
    const auto names = ComponentChange::partNames(c.kind);
    for (size_t i = 0; i < names.size(); ++i)
        if (*names[i] && c.partNorm[i] + c.partDelta[i] > 0)
            parts << QStringLiteral("%1 %2").arg(QLatin1String(names[i]),
                                                 rel(c.partNorm[i] > 0 ? c.partDelta[i] / c.partNorm[i] : INFINITY));
    return parts.join(QStringLiteral(" · "));
}

ChangedParameter parameterAt(int i) { return std::array{ChangedParameter::OV, ChangedParameter::QK, ChangedParameter::FFValue, ChangedParameter::FFKey}[size_t(std::clamp(i, 0, 3))]; }

} // namespace

FinetuneView::FinetuneView(QWidget* parent)
    : QWidget(parent), projectTool_({}, tr("Click a component in the ranking or the overview.")) {
    buildUi();
}

void FinetuneView::buildUi() {
    summary_ = rankTool_.statusLabel();
    filter_ = new QComboBox;
    filter_->addItems({tr("heads and neurons"), tr("heads"), tr("neurons")});
    auto* csv = new QPushButton(tr("Export CSV…"));
    auto* png = new QPushButton(tr("Export PNG…"));
    auto* controls = rankTool_.controlRow({new QLabel(tr("Rank")), filter_});
    rankTool_.settings().add(QStringLiteral("filter"), filter_, kFilterNames);
    controls->addWidget(csv);
    controls->addWidget(png);

    const QString empty = tr("Open a second checkpoint of the same architecture (a fine-tuned copy) to rank what changed.");
    table_ = makeScoreTable({tr("#"), tr("component"), tr("‖Δθ‖"), tr("‖θ_A‖"), tr("‖Δθ‖/‖θ_A‖"), tr("parts: ‖Δ‖/‖θ‖")},
                            QStringLiteral("finetune_ranking"), empty);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    sizeColumnsToContents(table_);
    table_->setToolTip(tr("Click a component to read its change in embedding space; double-click a head to show it."));

    parameter_ = new QComboBox;
    projSummary_ = projectTool_.statusLabel();
    projTop_ = makeScoreTable({tr("#"), tr("token"), tr("increase")}, QStringLiteral("finetune_increase"), empty);
    projBottom_ = makeScoreTable({tr("#"), tr("token"), tr("decrease")}, QStringLiteral("finetune_decrease"), empty);
    auto* projBox = new QGroupBox(tr("Δ of the selected component in embedding space"));
    auto* pv = new QVBoxLayout(projBox);
    pv->addLayout(projectTool_.controlRow({parameter_}));
    pv->addWidget(projSummary_);
    auto* pt = new QHBoxLayout;
    pt->addWidget(projTop_);
    pt->addWidget(projBottom_);
    pv->addLayout(pt, 1);

    auto* left = splitPanes(Qt::Vertical, {{table_, 3}, {projBox, 2}});

    heads_ = new MatrixHeatmap;
    heads_->figureActions()->setBaseName(QStringLiteral("finetune_heads"));
    heads_->setEmptyText(empty);
    neurons_ = new MatrixHeatmap;
    neurons_->figureActions()->setBaseName(QStringLiteral("finetune_neurons"));
    neurons_->setEmptyText(empty);
    tensors_ = makeScoreTable({tr("tensor"), tr("‖Δ‖"), tr("‖θ_A‖"), tr("‖Δ‖/‖θ_A‖")}, QStringLiteral("finetune_tensors"), empty);
    sizeColumnsToContents(tensors_);
    overview_ = new QTabWidget;
    overview_->addTab(heads_, tr("Heads"));
    overview_->addTab(neurons_, tr("Neurons"));
    overview_->addTab(tensors_, tr("Tensors"));

    overview_->setMinimumWidth(380);
    auto* split = splitPanes(Qt::Horizontal, {{left, 3}, {overview_, 2}});
    split->setSizes({800, 520});
    auto* v = new QVBoxLayout(this);
    v->addWidget(summary_);
    v->addLayout(controls);
    v->addWidget(split, 1);

    connect(filter_, &QComboBox::currentIndexChanged, this, [this] { fillRanking(); });
    connect(parameter_, &QComboBox::currentIndexChanged, this, [this] { project(); });
    connect(table_, &QTableWidget::itemSelectionChanged, this, [this] {
        const auto rows = table_->selectionModel()->selectedRows();
        if (rows.isEmpty()) return;
        const QTableWidgetItem* c = table_->item(rows.first().row(), 1);
        const auto kind = ComponentChange::Kind(c->data(Qt::UserRole + 2).toInt());
        showComponent(kind, c->data(Qt::UserRole).toInt(), c->data(Qt::UserRole + 1).toInt(),
                      kind == ComponentChange::Kind::Head ? ChangedParameter::OV : ChangedParameter::FFValue);
    });
    connect(table_, &QTableWidget::cellDoubleClicked, this, [this](int row) {
        const QTableWidgetItem* c = table_->item(row, 1);
        if (ComponentChange::Kind(c->data(Qt::UserRole + 2).toInt()) == ComponentChange::Kind::Head)
            emit headRequested(c->data(Qt::UserRole).toInt(), c->data(Qt::UserRole + 1).toInt());
    });
    connect(heads_, &MatrixHeatmap::cellClicked, this,
            [this](int l, int h) { showComponent(ComponentChange::Kind::Head, l, h, ChangedParameter::OV); });
    connect(neurons_, &MatrixHeatmap::cellClicked, this,
            [this](int l, int n) { showComponent(ComponentChange::Kind::Neuron, l, n, ChangedParameter::FFValue); });
    connect(csv, &QPushButton::clicked, this, [this] {
        const QString p = QFileDialog::getSaveFileName(this, tr("Export the ranking as CSV"), "finetune_ranking.csv", tr("CSV (*.csv)"));
        if (p.isEmpty()) return;
        if (const QString e = exportCsv(p); !e.isEmpty()) QMessageBox::warning(this, tr("Export failed"), e);
        else emit statusMessage(tr("Exported %1").arg(p));
    });
    connect(png, &QPushButton::clicked, this, [this] {
        const QString p = QFileDialog::getSaveFileName(this, tr("Export the overview as PNG"), "finetune.png", tr("PNG (*.png)"));
        if (p.isEmpty()) return;
        if (const QString e = exportPng(p); !e.isEmpty()) QMessageBox::warning(this, tr("Export failed"), e);
        else emit statusMessage(tr("Exported %1 (heads, neurons, ranking)").arg(p));
    });
    rankTool_.setFailedHandler([this](const QString& m) { clear(tr("Cannot rank the changes: %1").arg(m)); });
    projectTool_.setFailedHandler([this](const QString& m) {
        projSummary_->setText(tr("Cannot project the change: %1").arg(m));
        for (QTableWidget* t : {projTop_, projBottom_}) {
            t->setRowCount(0);
            tableFigureOf(t)->setEmptyText(projSummary_->text());
        }
    });
    updateParameterChoices();
    clear(empty);
}

void FinetuneView::setModels(std::shared_ptr<const Model> before, std::shared_ptr<const Model> after) {
    if (before == before_ && after == after_) return;
    before_ = std::move(before);
    after_ = std::move(after);
    rankTool_.newContext();
    projectTool_.newContext();
    dirty_ = true;
    clear(before_ && after_ ? tr("Ranking what changed from %1 to %2…").arg(before_->info().name, after_->info().name)
                            : tr("Open a second checkpoint of the same architecture (a fine-tuned copy) to rank what changed."));
    if (before_ && after_ && isVisible()) rank();
}

void FinetuneView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (dirty_ && before_ && after_ && !rankTool_.isRunning()) rank();
}

void FinetuneView::clear(const QString& why) {
    ranking_.reset();
    summary_->setText(why);
    table_->setRowCount(0);
    tensors_->setRowCount(0);
    for (QTableWidget* t : {table_, tensors_, projTop_, projBottom_}) tableFigureOf(t)->setEmptyText(why);
    for (MatrixHeatmap* h : {heads_, neurons_}) {
        h->setFigure({});
        h->setEmptyText(why);
    }
    projTop_->setRowCount(0);
    projBottom_->setRowCount(0);
    projSummary_->setText(tr("Click a component in the ranking or the overview."));
}

void FinetuneView::rank() {
    if (!before_ || !after_) return;
    dirty_ = false;
    rankTool_.start([this, a = before_, b = after_](const BackgroundTask::Context& ctx) -> std::function<void()> {
        auto r = std::make_shared<const FinetuneRanking>(rankFinetuneChanges(*a, *b, ctx.progress));
        return [this, r] {
            ranking_ = r;
            if (layer_ < 0 && !r->heads.empty()) { // the most changed component, until one is clicked
                const ComponentChange top = r->components().front(); // a copy: components() returns a new list
                kind_ = top.kind, layer_ = top.layer, index_ = top.index;
                updateParameterChoices();
            }
            fillRanking();
            fillOverview();
            project();
        };
    });
}

void FinetuneView::waitForIdle() {
    rankTool_.waitForIdle();
    projectTool_.waitForIdle(); // the ranking's end starts a projection
    projectTool_.waitForIdle();
}

void FinetuneView::setFilter(Filter filter) { filter_->setCurrentIndex(int(filter)); }

void FinetuneView::fillRanking() {
    if (!ranking_) return;
    const FinetuneRanking& r = *ranking_;
    const Filter f = Filter(filter_->currentIndex());
    const std::vector<ComponentChange> list = f == Filter::Heads ? r.heads : f == Filter::Neurons ? r.neurons : r.components();
    const int n = std::min(int(list.size()), kShownRows);
    const QSignalBlocker block(table_);
    table_->setRowCount(n);
    for (int i = 0; i < n; ++i) {
        const ComponentChange& c = list[size_t(i)];
        table_->setItem(i, 0, rankCell(i + 1));
        QTableWidgetItem* name = componentCell(c.name(), c.layer, c.index);
        name->setData(Qt::UserRole + 2, int(c.kind));
        name->setToolTip(c.kind == ComponentChange::Kind::Head ? tr("head %1 of layer %2").arg(c.index).arg(c.layer)
                                                               : tr("FF neuron %1 of layer %2").arg(c.index).arg(c.layer));
        table_->setItem(i, 1, name);
        table_->setItem(i, 2, scoreCell(c.delta));
        table_->setItem(i, 3, scoreCell(c.norm));
        table_->setItem(i, 4, scoreCell(c.relative));
        auto* parts = new QTableWidgetItem(partsText(c));
        parts->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
        table_->setItem(i, 5, parts);
        if (c.kind == kind_ && c.layer == layer_ && c.index == index_) table_->selectRow(i); // the component shown below
    }
    tableFigureOf(table_)->setTitle(tr("Most changed components, %1 → %2 (‖Δθ‖/‖θ_A‖)").arg(before_->info().name, after_->info().name));
    const bool identical = std::all_of(r.tensors.begin(), r.tensors.end(), [](const TensorChange& t) { return t.delta == 0; });
    double d2 = 0, n2 = 0;
    for (const TensorChange& t : r.tensors) d2 += t.delta * t.delta, n2 += t.norm * t.norm;
    if (identical) {
        summary_->setText(tr("Identical: %1 and %2 have the same weights (every ‖Δθ‖ = 0), so nothing changed.")
                              .arg(before_->info().name, after_->info().name));
        return;
    }
    const ComponentChange& head = r.heads.front();
    const ComponentChange& neuron = r.neurons.front();
    summary_->setText(tr("%1 → %2: %3 heads and %4 neurons ranked by ‖Δθ‖/‖θ_A‖ (Frobenius norms over each component's "
                         "weights; showing the first %5 of %6). Most changed head %7 (%8), neuron %9 (%10). Whole model: "
                         "‖Δθ‖/‖θ_A‖ = %11 over every tensor.")
                          .arg(before_->info().name, after_->info().name)
                          .arg(r.heads.size()).arg(r.neurons.size()).arg(n).arg(list.size())
                          .arg(head.name(), rel(head.relative), neuron.name(), rel(neuron.relative), rel(std::sqrt(d2 / n2))));
}

void FinetuneView::fillOverview() {
    const FinetuneRanking& r = *ranking_;
    const int nL = int(r.headRelative.rows());
    MatrixFigure f;
    f.values = r.headRelative.array().min(std::numeric_limits<float>::max()).matrix(); // +inf (a zero head that changed) drawn as the top
    f.rowLabels = indexLabels(nL);
    f.colLabels = indexLabels(int(r.headRelative.cols()));
    f.rowTitle = tr("layer");
    f.colTitle = tr("head");
    f.valueTitle = tr("‖Δθ‖/‖θ_A‖");
    f.scale = MatrixFigure::Scale::Sequential;
    f.title = tr("‖Δθ‖/‖θ_A‖ per head");
    heads_->setFigure(f);
    f.values = r.neuronRelative.array().min(std::numeric_limits<float>::max()).matrix();
    f.colLabels = indexLabels(int(r.neuronRelative.cols()));
    f.colTitle = tr("neuron");
    f.title = tr("‖Δθ‖/‖θ_A‖ per FF neuron");
    neurons_->setFigure(f);
    tensors_->setRowCount(int(r.tensors.size()));
    for (int i = 0; i < int(r.tensors.size()); ++i) {
        const TensorChange& t = r.tensors[size_t(i)];
        auto* name = new QTableWidgetItem(t.name);
        name->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
        tensors_->setItem(i, 0, name);
        tensors_->setItem(i, 1, scoreCell(t.delta));
        tensors_->setItem(i, 2, scoreCell(t.norm));
        tensors_->setItem(i, 3, scoreCell(t.relative));
    }
}

void FinetuneView::updateParameterChoices() {
    const QSignalBlocker block(parameter_);
    const bool head = kind_ == ComponentChange::Kind::Head;
    const int keep = parameter_->currentIndex();
    parameter_->clear();
    if (head) parameter_->addItems({tr("ΔW_OV: source → output token"), tr("ΔW_QK: query → key token")});
    else parameter_->addItems({tr("Δ FF value v (what the neuron writes)"), tr("Δ FF key k (what it reads)")});
    parameter_->setCurrentIndex(std::clamp(keep, 0, 1));
}

void FinetuneView::showComponent(ComponentChange::Kind kind, int layer, int index, ChangedParameter parameter) {
    kind_ = kind;
    layer_ = layer;
    index_ = index;
    updateParameterChoices();
    {
        const QSignalBlocker block(parameter_);
        const bool second = parameter == ChangedParameter::QK || parameter == ChangedParameter::FFKey;
        parameter_->setCurrentIndex(second ? 1 : 0);
    }
    project();
}

void FinetuneView::project() {
    projTop_->setRowCount(0);
    projBottom_->setRowCount(0);
    if (!before_ || !after_ || layer_ < 0) return;
    const bool head = kind_ == ComponentChange::Kind::Head;
    const ChangedParameter p = parameterAt((head ? 0 : 2) + parameter_->currentIndex());
    const int layer = layer_, index = index_;
    const QString name = head ? QStringLiteral("L%1H%2").arg(layer).arg(index) : QStringLiteral("L%1N%2").arg(layer).arg(index);
    for (QTableWidget* t : {projTop_, projBottom_}) tableFigureOf(t)->setEmptyText(tr("Computing…"));
    projectTool_.start(tr("Projecting the change of %1…").arg(name),
                       [this, a = before_, b = after_, p, layer, index, name, head](const BackgroundTask::Context& ctx)
                           -> std::function<void()> {
        const bool tied = unembeddingTied(*a);
        bool identical = false;
        float maxAbs = 0;
        std::vector<ScoredToken> topT, bottomT;
        std::vector<ScoredPair> topP, bottomP;
        if (head) {
            PairDiff d = diffPairs(*a, *b, p == ChangedParameter::OV ? PairProjectionKind::OV : PairProjectionKind::QK, layer, index,
                                   kTopTokens, ctx.progress);
            identical = d.identical, maxAbs = d.maxAbsDiff, topP = std::move(d.top), bottomP = std::move(d.bottom);
        } else {
            NeuronDiff d = diffNeuron(*a, *b, p == ChangedParameter::FFKey ? NeuronVectorKind::FFKey : NeuronVectorKind::FFValue,
                                      layer, index, kTopTokens);
            identical = d.identical, maxAbs = d.maxAbsDiff, topT = std::move(d.top), bottomT = std::move(d.bottom);
        }
        return [=, this] {
            const QString what = p == ChangedParameter::OV ? tr("ΔW_OV of %1, as E·ΔW_OV·W_U").arg(name)
                                 : p == ChangedParameter::QK ? tr("ΔW_QK of %1, as E·ΔW_QK·Eᵀ").arg(name)
                                 : p == ChangedParameter::FFValue ? tr("Δv of %1, as Δv·W_U").arg(name)
                                                                  : tr("Δk of %1, as E·Δk").arg(name);
            const QString convention = tied ? tr("A ties its embeddings (W_U = W_Eᵀ): E = A's W_E reads both sides, norms "
                                                 "ignored, as in the paper")
                                            : tr("A has a separate unembedding: what the parameter writes (FF values, OV output "
                                                 "tokens) through A's W_U, what it reads (keys, sources, queries) through A's W_E");
            for (QTableWidget* t : {projTop_, projBottom_})
                tableFigureOf(t)->setEmptyText(identical ? tr("Identical in both checkpoints: no token to list.") : QString());
            if (identical) {
                projSummary_->setText(tr("%1: identical in both checkpoints (max |Δ| = 0), nothing to project.").arg(name));
                return;
            }
            projSummary_->setText(tr("%1 (max |Δ| = %2); %3. Left: what fine-tuning raised, right: what it lowered.")
                                      .arg(what).arg(double(maxAbs), 0, 'g', 4).arg(convention));
            const Tokenizer& tok = a->tokenizer();
            const bool pairs = head;
            if (pairs) {
                const QString r = p == ChangedParameter::OV ? tr("source token") : tr("query token");
                const QString c = p == ChangedParameter::OV ? tr("output token") : tr("key token");
                for (QTableWidget* t : {projTop_, projBottom_}) {
                    t->setColumnCount(4);
                    t->setHorizontalHeaderLabels({tr("#"), r, c, t == projTop_ ? tr("increase") : tr("decrease")});
                }
                fillPairTable(projTop_, topP, tok);
                fillPairTable(projBottom_, bottomP, tok);
            } else {
                for (QTableWidget* t : {projTop_, projBottom_}) {
                    t->setColumnCount(3);
                    t->setHorizontalHeaderLabels({tr("#"), tr("token"), t == projTop_ ? tr("increase") : tr("decrease")});
                }
                fillTokenTable(projTop_, topT, tok);
                fillTokenTable(projBottom_, bottomT, tok);
            }
            tableFigureOf(projTop_)->setTitle(tr("%1: raised").arg(what));
            tableFigureOf(projBottom_)->setTitle(tr("%1: lowered").arg(what));
        };
    });
}

QString FinetuneView::exportCsv(const QString& path) const {
    if (!ranking_) return tr("%1: nothing to export yet (open a second checkpoint)").arg(path);
    std::vector<QStringList> rows;
    int rank = 0;
    for (const ComponentChange& c : ranking_->components()) {
        QStringList row{QString::number(++rank), c.name(), c.kind == ComponentChange::Kind::Head ? "head" : "neuron",
                        QString::number(c.layer), QString::number(c.index), exactNumber(c.delta), exactNumber(c.norm),
                        exactNumber(c.relative)};
        for (size_t i = 0; i < 4; ++i) row << exactNumber(c.partDelta[i]) << exactNumber(c.partNorm[i]);
        rows.push_back(row);
    }
    QString error;
    if (!writeCsv(path, {"rank", "component", "kind", "layer", "index", "delta", "norm", "relative", "part1_delta (Q|key)",
                         "part1_norm", "part2_delta (K|gate)", "part2_norm", "part3_delta (V|value)", "part3_norm",
                         "part4_delta (O)", "part4_norm"},
                  rows, &error))
        return error;
    std::vector<QStringList> tensors;
    for (const TensorChange& t : ranking_->tensors)
        tensors.push_back({t.name, QString::number(t.layer), exactNumber(t.delta), exactNumber(t.norm), exactNumber(t.relative)});
    if (!writeCsv(sibling(path, QStringLiteral("tensors"), QStringLiteral("csv")), {"tensor", "layer", "delta", "norm", "relative"},
                  tensors, &error))
        return error;
    return {};
}

QString FinetuneView::exportPng(const QString& path) const {
    if (!ranking_) return tr("%1: nothing to export yet (open a second checkpoint)").arg(path);
    QString error;
    const QSize size(900, 600);
    if (!exportMatrixFigure(heads_->figure(), sibling(path, QStringLiteral("heads"), QStringLiteral("png")), ImageFormat::Png, size, 2.0, &error) ||
        !exportMatrixFigure(neurons_->figure(), sibling(path, QStringLiteral("neurons"), QStringLiteral("png")), ImageFormat::Png, QSize(1400, 500), 2.0, &error) ||
        !exportTableFigure(tableFigureFrom(*table_, tableFigureOf(table_)->figureTitle()),
                           sibling(path, QStringLiteral("ranking"), QStringLiteral("png")), ImageFormat::Png, 2.0, &error))
        return error;
    return {};
}

QJsonObject FinetuneView::saveState() const {
    const bool head = kind_ == ComponentChange::Kind::Head;
    QJsonObject o{{QStringLiteral("component"), layer_ < 0 ? QString()
                                                            : (head ? QStringLiteral("L%1H%2") : QStringLiteral("L%1N%2")).arg(layer_).arg(index_)},
                  {QStringLiteral("parameter"), kParameterNames.value((head ? 0 : 2) + parameter_->currentIndex())}};
    rankTool_.settings().save(o); // filter
    return o;
}

void FinetuneView::restoreState(const QJsonObject&, const PanelStateReader& r) {
    rankTool_.settings().restore(r); // filter
    const auto parameter = r.choice(QStringLiteral("parameter"), kParameterNames);
    if (const auto c = r.string(QStringLiteral("component")); c && !c->isEmpty()) {
        static const QRegularExpression re(QStringLiteral("^L(\\d+)([HN])(\\d+)$"));
        const auto m = re.match(*c);
        if (!m.hasMatch()) {
            r.problem(tr("fine-tuning component “%1” is not of the form L1H2 or L0N17").arg(*c));
        } else {
            const auto kind = m.captured(2) == QLatin1String("H") ? ComponentChange::Kind::Head : ComponentChange::Kind::Neuron;
            const int layer = m.captured(1).toInt(), index = m.captured(3).toInt();
            if (before_) {
                const ModelConfig& cfg = before_->config();
                const int n = kind == ComponentChange::Kind::Head ? cfg.n_heads : cfg.d_mlp;
                if (layer >= cfg.n_layers || index >= n) {
                    r.problem(tr("fine-tuning component %1 is not in %2").arg(*c, before_->info().name));
                    return;
                }
            }
            kind_ = kind;
            layer_ = m.captured(1).toInt();
            index_ = m.captured(3).toInt();
            updateParameterChoices();
            if (parameter) {
                const QSignalBlocker block(parameter_);
                parameter_->setCurrentIndex(*parameter % 2);
            }
        }
    }
    fillRanking();
    project();
}

} // namespace attnscope
