#include "views/comparison/model_compare_panel.h"

#include "model/core/csv_writer.h"
#include "views/comparison/finetune_view.h"
#include "views/figures/matrix_heatmap.h"
#include "views/figures/figure_actions.h"
#include "views/common/panel_state.h"
#include "views/common/score_tables.h"
#include "views/comparison/stitch_view.h"
#include "views/figures/table_figure.h"

#include <QComboBox>
#include <QDir>
#include <QEventLoop>
#include <QFileDialog>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QMetaMethod>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

namespace attnscope {
namespace {

// saved names of the similarity kinds and the parameters (session files), in combo-box order
const QStringList kSimilarityNames{QStringLiteral("ffvalue"), QStringLiteral("ffkey")};
const QStringList kParameterNames{QStringLiteral("ffkey"), QStringLiteral("ffvalue"), QStringLiteral("ov"), QStringLiteral("qk")};
const QStringList kSubTabNames{QStringLiteral("layers"), QStringLiteral("stitch"), QStringLiteral("finetune")};

QStringList layerLabels(int n) {
    QStringList l;
    for (int i = 0; i < n; ++i) l << QString::number(i);
    return l;
}

/// "<dir>/<base>_<suffix>.<ext>" for `path` = "<dir>/<base>.<ext>".
QString sibling(const QString& path, const QString& suffix, const QString& ext) {
    const QFileInfo fi(path);
    return fi.dir().filePath(fi.completeBaseName() + QLatin1Char('_') + suffix + QLatin1Char('.') + ext);
}

} // namespace

ModelComparePanel::ModelComparePanel(QWidget* parent) : AnalysisPanel(parent) { buildUi(); }

void ModelComparePanel::buildUi() {
    otherPath_ = new QLineEdit;
    otherPath_->setPlaceholderText(tr("second model: a model folder, a .safetensors/.gguf file or a name (gpt2, ollama:…)"));
    auto* browse = new QPushButton(tr("Open second checkpoint…"));
    auto* load = new QPushButton(tr("Load"));
    otherInfo_ = new QLabel(tr("No second model open. It must share the tokenizer (same vocabulary)."));
    otherInfo_->setWordWrap(true);
    loadProgress_ = new QProgressBar;
    loadProgress_->setMaximumWidth(200);
    loadProgress_->setVisible(false);
    loadCancel_ = new QPushButton(tr("Cancel"));
    loadCancel_->setEnabled(false);
    auto* top = new QHBoxLayout;
    top->addWidget(otherPath_, 1);
    top->addWidget(load);
    top->addWidget(browse);
    top->addWidget(loadProgress_);
    top->addWidget(loadCancel_);

    simKind_ = new QComboBox;
    simKind_->addItems({tr("FF values (rows of W_out)"), tr("FF keys (columns of W_in)")});
    auto* csv = new QPushButton(tr("Export CSV…"));
    auto* fig = new QPushButton(tr("Export figures…"));
    auto* simControls = new QHBoxLayout;
    simControls->addWidget(new QLabel(tr("Compare")));
    simControls->addWidget(simKind_);
    simControls->addLayout(taskRow(compareTask_));
    simControls->addStretch();
    simControls->addWidget(csv);
    simControls->addWidget(fig);
    embedding_ = new MatrixHeatmap;
    feature_ = new MatrixHeatmap;
    embedding_->figureActions()->setBaseName(QStringLiteral("layer_similarity_embedding"));
    feature_->figureActions()->setBaseName(QStringLiteral("layer_similarity_feature"));
    embedding_->setMinimumSize(320, 280);
    feature_->setMinimumSize(320, 280);
    auto* maps = new QHBoxLayout;
    maps->addWidget(embedding_);
    maps->addWidget(feature_);
    auto* simNote = new QLabel(tr("Cell (a, b): mean over the neurons of layer a of model A of the best cosine "
                                  "match among the neurons of layer b of model B. Left: in embedding space "
                                  "(each model's vectors times its own Eᵀ); right: raw d_model vectors."));
    simNote->setWordWrap(true);
    auto* simBox = new QGroupBox(tr("Layer × layer similarity"));
    auto* simV = new QVBoxLayout(simBox);
    simV->addLayout(simControls);
    simV->addWidget(simNote);
    simV->addLayout(maps, 1);

    param_ = new QComboBox;
    param_->addItems({tr("FF key"), tr("FF value"), tr("W_OV"), tr("W_QK")});
    param_->setCurrentIndex(1);
    layer_ = new QSpinBox;
    index_ = new QSpinBox;
    indexLabel_ = new QLabel(tr("neuron"));
    k_ = new QSpinBox;
    k_->setRange(1, 500);
    k_->setValue(20);
    auto* diffControls = new QHBoxLayout;
    diffControls->addWidget(param_);
    diffControls->addWidget(new QLabel(tr("layer")));
    diffControls->addWidget(layer_);
    diffControls->addWidget(indexLabel_);
    diffControls->addWidget(index_);
    diffControls->addWidget(new QLabel(tr("top-k")));
    diffControls->addWidget(k_);
    diffControls->addLayout(taskRow(diffTask_));
    diffControls->addStretch();
    diffSummary_ = new QLabel;
    diffSummary_->setWordWrap(true);
    diffSummary_->setTextFormat(Qt::PlainText);
    const QString noDiff = tr("Open a second checkpoint of the same architecture to see what changed.");
    diffTop_ = makeScoreTable({tr("#"), tr("token"), tr("score")}, QStringLiteral("difference_increase"), noDiff);
    diffBottom_ = makeScoreTable({tr("#"), tr("token"), tr("score")}, QStringLiteral("difference_decrease"), noDiff);
    auto* tables = new QHBoxLayout;
    tables->addWidget(diffTop_);
    tables->addWidget(diffBottom_);
    auto* diffBox = new QGroupBox(tr("Difference B − A of one parameter, in embedding space (same architecture)"));
    auto* diffV = new QVBoxLayout(diffBox);
    diffV->addLayout(diffControls);
    diffV->addWidget(diffSummary_);
    diffV->addLayout(tables, 1);

    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(simBox);
    split->addWidget(diffBox);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    stitch_ = new StitchView;
    finetune_ = new FinetuneView;
    subTabs_ = new QTabWidget;
    subTabs_->addTab(split, tr("Layers and differences"));
    subTabs_->addTab(stitch_, tr("Stitch"));
    subTabs_->addTab(finetune_, tr("Fine-tuning directions"));
    auto* v = new QVBoxLayout(this);
    v->addLayout(top);
    v->addWidget(otherInfo_);
    v->addWidget(subTabs_, 1);
    connect(stitch_, &StitchView::statusMessage, this, &AnalysisPanel::statusMessage);
    connect(finetune_, &FinetuneView::statusMessage, this, &AnalysisPanel::statusMessage);
    connect(finetune_, &FinetuneView::headRequested, this, &AnalysisPanel::headRequested);
    connect(loadCancel_, &QPushButton::clicked, this, &AnalysisPanel::secondModelCancelRequested);

    connect(browse, &QPushButton::clicked, this, [this] {
        // the dialog only picks the path: the window's model session opens it
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Second checkpoint (model folder)"));
        if (!dir.isEmpty()) openSecondModel(dir);
    });
    connect(load, &QPushButton::clicked, this, [this] { openSecondModel(otherPath_->text()); });
    connect(otherPath_, &QLineEdit::returnPressed, this, [this] { openSecondModel(otherPath_->text()); });
    connect(simKind_, &QComboBox::currentIndexChanged, this, [this] { compare(); });
    connect(param_, &QComboBox::currentIndexChanged, this, [this] {
        updateControls();
        diff();
    });
    for (QSpinBox* s : {layer_, index_, k_}) connect(s, &QSpinBox::valueChanged, this, [this] { diff(); });
    connect(csv, &QPushButton::clicked, this, [this] {
        const QString p = QFileDialog::getSaveFileName(this, tr("Export CSV"), "layer_similarity.csv", tr("CSV (*.csv)"));
        if (p.isEmpty()) return;
        if (const QString e = exportCsv(p); !e.isEmpty()) QMessageBox::warning(this, tr("Export failed"), e);
    });
    connect(fig, &QPushButton::clicked, this, [this] {
        const QString p = QFileDialog::getSaveFileName(this, tr("Export figures"), "layer_similarity.png",
                                                       tr("Images (*.png *.svg *.pdf)"));
        if (p.isEmpty()) return;
        if (const QString e = exportFigures(p); !e.isEmpty()) QMessageBox::warning(this, tr("Export failed"), e);
    });
    connect(&compareTask_, &BackgroundTask::failed, this, [this](const QString& m) {
        otherInfo_->setText(tr("Cannot compare: %1").arg(m));
        for (MatrixHeatmap* h : {embedding_, feature_}) {
            h->setFigure({});
            h->setEmptyText(tr("Cannot compare these two models: %1").arg(m));
        }
    });
    connect(&diffTask_, &BackgroundTask::failed, this, [this](const QString& m) {
        diffSummary_->setText(tr("No difference to show: %1").arg(m));
        diffTop_->setRowCount(0);
        diffBottom_->setRowCount(0);
    });
    updateControls();
    compare(); // the empty states: what to open
    diff();
}

void ModelComparePanel::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                                   const QStringList&) {
    cache_ = std::move(cache);
    if (model.get() == model_.get()) return updateSubViews(); // a new prompt: the stitch's default text
    model_ = std::move(model);
    updateControls();
    compare();
    diff();
    updateSubViews();
}

void ModelComparePanel::updateSubViews() {
    stitch_->setModels(model_, other_, cache_);
    finetune_->setModels(model_, other_);
}

void ModelComparePanel::setSelectedHead(int layer, int head) {
    const auto p = Parameter(param_->currentIndex());
    if (p != Parameter::OV && p != Parameter::QK) return;
    const QSignalBlocker b1(layer_), b2(index_);
    layer_->setValue(layer);
    index_->setValue(head);
    diff();
}

void ModelComparePanel::openSecondModel(const QString& nameOrPath) {
    if (nameOrPath.isEmpty()) return;
    otherPath_->setText(nameOrPath);
    if (!isSignalConnected(QMetaMethod::fromSignal(&AnalysisPanel::secondModelRequested))) {
        otherInfo_->setText(tr("Cannot open %1 here: second models are opened by the window's model session.").arg(nameOrPath));
        return;
    }
    pendingSecond_ = nameOrPath;
    otherInfo_->setText(tr("Opening %1…").arg(nameOrPath));
    emit secondModelRequested(nameOrPath); // the window resolves the name (a failure comes back at once)
}

void ModelComparePanel::setSecondModelStatus(const SecondModelStatus& status) {
    loadProgress_->setVisible(status.loading);
    loadCancel_->setEnabled(status.loading);
    if (status.loading) {
        loadProgress_->setRange(0, int(std::max<qint64>(status.total, 0)));
        loadProgress_->setValue(int(status.done));
        otherInfo_->setText(tr("Opening %1: %2").arg(status.path, status.what));
        return;
    }
    otherInfo_->setText(status.error.isEmpty() ? tr("Opening %1 was cancelled.").arg(status.path)
                                               : tr("Cannot open the second model: %1").arg(status.error));
    secondError_ = status.error;
    if (status.path == pendingSecond_ || pendingSecond_.isEmpty()) {
        pendingSecond_.clear();
        emit secondModelSettled();
    }
}

void ModelComparePanel::setSecondModel(std::shared_ptr<const Model> model) {
    other_ = std::move(model);
    loadProgress_->setVisible(false);
    loadCancel_->setEnabled(false);
    if (other_) {
        const ModelConfig& c = other_->config();
        otherInfo_->setText(tr("Model B: %1 (%2, %3 layers, d_model %4, d_vocab %5). Model A is the open model.")
                                .arg(other_->info().path, other_->info().storageDtype)
                                .arg(c.n_layers).arg(c.d_model).arg(c.d_vocab));
        if (otherPath_->text().isEmpty()) otherPath_->setText(other_->info().path);
    }
    updateControls();
    compare();
    diff();
    updateSubViews();
    // the session delivers only the newest request's model (older loads are dropped), and the request may be a
    // name ("demo-variant", "gpt2") whose model's path differs: any model arriving settles it
    if (!pendingSecond_.isEmpty()) {
        pendingSecond_.clear();
        emit secondModelSettled();
    }
}

void ModelComparePanel::setSimilarityKind(NeuronVectorKind kind) {
    simKind_->setCurrentIndex(kind == NeuronVectorKind::FFValue ? 0 : 1); // emits → compare()
    if (!compareTask_.isRunning()) compare();
}

void ModelComparePanel::setDifference(Parameter parameter, int layer, int index) {
    {
        const QSignalBlocker b0(param_), b1(layer_), b2(index_);
        param_->setCurrentIndex(int(parameter));
        updateControls();
        layer_->setValue(layer);
        index_->setValue(index);
    }
    diff();
}

void ModelComparePanel::updateControls() {
    const auto p = Parameter(param_->currentIndex());
    const bool pairs = p == Parameter::OV || p == Parameter::QK;
    indexLabel_->setText(pairs ? tr("head") : tr("neuron"));
    const ModelConfig* c = model_ ? &model_->config() : nullptr;
    layer_->setRange(0, c ? c->n_layers - 1 : 0);
    index_->setRange(0, c ? (pairs ? c->n_heads : c->d_mlp) - 1 : 0);
    if (pairs) {
        const QString a = p == Parameter::OV ? tr("source token") : tr("query token");
        const QString b = p == Parameter::OV ? tr("output token") : tr("key token");
        for (QTableWidget* t : {diffTop_, diffBottom_}) {
            t->setColumnCount(4);
            t->setHorizontalHeaderLabels({tr("#"), a, b, t == diffTop_ ? tr("increase") : tr("decrease")});
        }
    } else {
        diffTop_->setColumnCount(3);
        diffTop_->setHorizontalHeaderLabels({tr("#"), tr("token"), tr("increase")});
        diffBottom_->setColumnCount(3);
        diffBottom_->setHorizontalHeaderLabels({tr("#"), tr("token"), tr("decrease")});
    }
}

void ModelComparePanel::compare() {
    for (MatrixHeatmap* h : {embedding_, feature_})
        h->setEmptyText(model_ && other_ ? tr("Comparing the layers of the two models…")
                                         : tr("Open a second model to compare its layers with this one: type its folder "
                                              "or .safetensors file above and press Load, or use Open second "
                                              "checkpoint… (try demo-variant, the demo's fine-tuned copy)."));
    if (!model_ || !other_) {
        compareTask_.cancel();
        embedding_->setFigure({});
        feature_->setFigure({});
        return;
    }
    const NeuronVectorKind kind = simKind_->currentIndex() == 0 ? NeuronVectorKind::FFValue : NeuronVectorKind::FFKey;
    compareTask_.start([this, a = model_, b = other_, kind](const BackgroundTask::Context& ctx) {
        LayerSimilarity s = compareLayers(*a, *b, kind, ctx.progress);
        return [this, s = std::move(s), a, b] {
            if (a != model_ || b != other_) return;
            const QString what = s.kind == NeuronVectorKind::FFValue ? tr("FF values") : tr("FF keys");
            MatrixFigure f;
            f.values = s.embedding;
            f.rowLabels = layerLabels(int(s.embedding.rows()));
            f.colLabels = layerLabels(int(s.embedding.cols()));
            f.rowTitle = tr("layer of A (%1)").arg(a->info().name);
            f.colTitle = tr("layer of B (%1)").arg(b->info().name);
            f.valueTitle = tr("mean best cosine");
            f.scale = MatrixFigure::Scale::Sequential;
            f.title = tr("%1 in embedding space").arg(what);
            embedding_->setFigure(f);
            f.values = s.feature;
            f.title = tr("%1 in feature space").arg(what);
            feature_->setFigure(f);
        };
    });
}

void ModelComparePanel::diff() {
    identical_ = false;
    diffTop_->setRowCount(0);
    diffBottom_->setRowCount(0);
    const auto emptyText = [this](const QString& text) {
        for (QTableWidget* t : {diffTop_, diffBottom_}) tableFigureOf(t)->setEmptyText(text);
    };
    if (!model_ || !other_) {
        diffTask_.cancel();
        diffSummary_->setText(tr("Open a second checkpoint of the same architecture to see what changed."));
        emptyText(diffSummary_->text());
        return;
    }
    emptyText(tr("Computing…"));
    const auto p = Parameter(param_->currentIndex());
    const int layer = layer_->value(), index = index_->value(), k = k_->value();
    const QString name = p == Parameter::FFKey   ? tr("FF key %1 of layer %2").arg(index).arg(layer)
                         : p == Parameter::FFValue ? tr("FF value %1 of layer %2").arg(index).arg(layer)
                         : p == Parameter::OV      ? tr("W_OV of head L%1H%2").arg(layer).arg(index)
                                                   : tr("W_QK of head L%1H%2").arg(layer).arg(index);
    diffSummary_->setText(tr("Computing the difference of %1…").arg(name));
    diffTask_.start([this, a = model_, b = other_, p, layer, index, k, name](const BackgroundTask::Context& ctx)
                        -> std::function<void()> {
        const bool pairs = p == Parameter::OV || p == Parameter::QK;
        bool identical = false;
        float maxAbs = 0;
        std::vector<ScoredToken> topT, bottomT;
        std::vector<ScoredPair> topP, bottomP;
        if (pairs) {
            PairDiff d = diffPairs(*a, *b, p == Parameter::OV ? PairProjectionKind::OV : PairProjectionKind::QK,
                                   layer, index, k, ctx.progress);
            identical = d.identical;
            maxAbs = d.maxAbsDiff;
            topP = std::move(d.top);
            bottomP = std::move(d.bottom);
        } else {
            NeuronDiff d = diffNeuron(*a, *b, p == Parameter::FFKey ? NeuronVectorKind::FFKey : NeuronVectorKind::FFValue,
                                      layer, index, k);
            identical = d.identical;
            maxAbs = d.maxAbsDiff;
            topT = std::move(d.top);
            bottomT = std::move(d.bottom);
        }
        return [=, this] {
            if (a != model_ || b != other_) return;
            identical_ = identical;
            for (QTableWidget* t : {diffTop_, diffBottom_})
                tableFigureOf(t)->setEmptyText(identical ? tr("Identical in both checkpoints: no token to list.") : QString());
            if (identical) {
                diffSummary_->setText(tr("Identical: %1 is exactly the same in both checkpoints (max |Δ| = 0), "
                                         "so there is nothing to project.").arg(name));
                return;
            }
            diffSummary_->setText(tr("%1 differs: max |Δ| = %2. Tokens of E_A·Δ (E_A = model A's embedding; "
                                     "Eᵀ in place of E⁻¹, LayerNorm ignored) that the change raises (left) and "
                                     "lowers (right).").arg(name).arg(double(maxAbs), 0, 'g', 4));
            const Tokenizer& tok = model_->tokenizer();
            if (pairs) {
                fillPairTable(diffTop_, topP, tok);
                fillPairTable(diffBottom_, bottomP, tok);
            } else {
                fillTokenTable(diffTop_, topT, tok);
                fillTokenTable(diffBottom_, bottomT, tok);
            }
        };
    });
}

void ModelComparePanel::waitForIdle() {
    while (!pendingSecond_.isEmpty()) { // the window's session delivers setSecondModel or a failure
        QEventLoop loop;
        connect(this, &ModelComparePanel::secondModelSettled, &loop, &QEventLoop::quit);
        if (!pendingSecond_.isEmpty()) loop.exec();
    }
    for (BackgroundTask* t : {&compareTask_, &diffTask_}) t->waitForIdle();
    stitch_->waitForIdle();
    finetune_->waitForIdle();
}

QString ModelComparePanel::exportCsv(const QString& path) const {
    QString error;
    for (MatrixHeatmap* h : {embedding_, feature_}) {
        const MatrixFigure& f = h->figure();
        if (f.values.size() == 0) return tr("%1: nothing to export yet (open a second model)").arg(path);
        const QString p = sibling(path, h == embedding_ ? QStringLiteral("embedding") : QStringLiteral("feature"),
                                  QStringLiteral("csv"));
        if (!writeMatrixCsv(p, f.values, f.rowLabels, f.colLabels, &error)) return error;
    }
    return {};
}

QString ModelComparePanel::exportFigures(const QString& path) const {
    const auto fmt = imageFormatFromName(path);
    if (!fmt) return tr("%1: unknown image format (use .png, .svg or .pdf)").arg(path);
    QString error;
    for (MatrixHeatmap* h : {embedding_, feature_}) {
        const MatrixFigure& f = h->figure();
        if (f.values.size() == 0) return tr("%1: nothing to export yet (open a second model)").arg(path);
        const QString p = sibling(path, h == embedding_ ? QStringLiteral("embedding") : QStringLiteral("feature"),
                                  imageFormatSuffix(*fmt));
        if (!exportMatrixFigure(f, p, *fmt, QSize(700, 600), 2.0, &error)) return error;
    }
    return {};
}

QJsonObject ModelComparePanel::saveState() const {
    // absolute, so the session restores from any working directory
    const QString path = other_ ? other_->info().path : QString();
    return {{QStringLiteral("secondModel"), !path.isEmpty() && QFileInfo(path).isRelative() ? QFileInfo(path).absoluteFilePath() : path},
            {QStringLiteral("similarity"), kSimilarityNames.value(simKind_->currentIndex())},
            {QStringLiteral("parameter"), kParameterNames.value(param_->currentIndex())},
            {QStringLiteral("layer"), layer_->value()},
            {QStringLiteral("index"), index_->value()},
            {QStringLiteral("topK"), k_->value()},
            {QStringLiteral("subTab"), kSubTabNames.value(subTabs_->currentIndex())},
            {QStringLiteral("stitch"), stitch_->saveState()},
            {QStringLiteral("finetune"), finetune_->saveState()}};
}

void ModelComparePanel::restoreState(const QJsonObject& state, QStringList* problems) {
    const PanelStateReader r(state, title(), problems);
    {
        const QSignalBlocker b0(simKind_), b1(param_), b2(layer_), b3(index_), b4(k_);
        r.comboBox(QStringLiteral("similarity"), kSimilarityNames, simKind_);
        r.comboBox(QStringLiteral("parameter"), kParameterNames, param_);
        updateControls(); // the ranges of this model and parameter
        r.spinBox(QStringLiteral("layer"), layer_);
        r.spinBox(QStringLiteral("index"), index_);
        r.spinBox(QStringLiteral("topK"), k_);
    }
    if (const auto tab = r.choice(QStringLiteral("subTab"), kSubTabNames)) subTabs_->setCurrentIndex(*tab);
    if (const auto o = r.object(QStringLiteral("stitch"))) stitch_->restoreState(*o, PanelStateReader(*o, title() + tr(" (stitch)"), problems));
    if (const auto o = r.object(QStringLiteral("finetune")))
        finetune_->restoreState(*o, PanelStateReader(*o, title() + tr(" (fine-tuning directions)"), problems));
    const auto second = r.string(QStringLiteral("secondModel"));
    const bool same = second && other_ && other_->info().path == *second;
    if (second && !second->isEmpty() && !same) {
        secondError_.clear();
        openSecondModel(*second); // compares when loaded; a name or path that names nothing fails at once
        if (!secondError_.isEmpty()) r.problem(tr("second model: %1").arg(secondError_));
    } else {
        compare();
        diff();
    }
}

} // namespace attnscope
