#include "app/main_window.h"

#include "app/about_text.h"
#include "views/appearance.h"

#include "model/analysis/top_tokens.h"
#include "views/logit_lens_panel.h"
#include "views/model_compare_panel.h"
#include "views/projections_panel.h"
#include "model/transformer/prompt.h"
#include "model/transformer/weight_checks.h"
#include "views/analysis_panel.h"
#include "views/appearance.h"
#include "views/attention_sandbox_panel.h"
#include "views/attention_steps_panel.h"
#include "views/attention_heatmap.h"
#include "views/figure_export.h"
#include "views/head_grid.h"
#include "views/residual_panel.h"
#include "views/top_tokens_view.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QInputDialog>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QShortcut>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QVBoxLayout>

namespace attnscope {

namespace {
const char* kDefaultPrompt =
    "In the beginning God created the heaven and the earth. In the beginning God created the heaven and the earth.";

ImageFormat formatForSuffix(const QString& path) {
    return imageFormatFromName(path).value_or(ImageFormat::Png);
}
} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(tr("AttnScope"));
    Appearance::instance().install(); // the stored theme (light / dark / following the desktop)
    Appearance::instance().install(); // the saved theme (or the desktop's) before any widget is shown
    buildUi();
    buildMenus();
    // analysis tabs, one line each: addPanel(new SomePanel);
    {
        auto* dla = new ResidualPanel;
        addPanel(dla);
        connect(dla, &ResidualPanel::headScoresChanged, headGrid_, [this](const Matrix& scores, const QString& name) {
            if (scores.size() == 0 || (scores.rows() == headGrid_->layers() && scores.cols() == headGrid_->heads()))
                headGrid_->setHeadScores(scores, name); // detector overlay on the attention tab's grid
        });
    }
    addPanel(new AttentionStepsPanel);
    addPanel(new AttentionSandboxPanel);
    addPanel(new LogitLensPanel);
    addPanel(new ProjectionsPanel);
    addPanel(new ModelComparePanel);
    connect(&session_, &ModelSession::modelLoaded, this, &MainWindow::onModelLoaded);
    connect(&session_, &ModelSession::forwardFinished, this, &MainWindow::onForwardFinished);
    connect(&session_, &ModelSession::busyChanged, this, &MainWindow::onBusyChanged);
    connect(&session_, &ModelSession::modelLoadFailed, this,
            [this](const QString& m) { showError(tr("Cannot open model"), m); });
    connect(&session_, &ModelSession::forwardFailed, this,
            [this](const QString& m) { showError(tr("Cannot run the prompt"), m); });
    connect(&session_, &ModelSession::cancelled, this, [this] { statusLabel_->setText(tr("Cancelled.")); });
    connect(&gridTask_, &BackgroundTask::progressChanged, this, [this](qint64, qint64, const QString& what) {
        if (!layerTask_.isRunning()) statusLabel_->setText(what);
    });
    connect(&gridTask_, &BackgroundTask::failed, statusLabel_, &QLabel::setText);
    connect(&layerTask_, &BackgroundTask::failed, this, [this](const QString& m) {
        statusLabel_->setText(m);
        startGridFill();
    });
    connect(&session_, &ModelSession::progressChanged, this, [this](qint64 done, qint64 total, const QString& what) {
        progress_->setRange(0, int(total));
        progress_->setValue(int(done));
        statusLabel_->setText(what);
    });

    QSettings s;
    prompt_->setText(s.value("prompt", QString::fromUtf8(kDefaultPrompt)).toString());
    prependBos_->setChecked(s.value("prependBos", true).toBool());
    layerSpin_->setValue(s.value("layer", 0).toInt());
    headSpin_->setValue(s.value("head", 0).toInt());
    resize(1500, 920);
}

MainWindow::~MainWindow() = default;

void MainWindow::buildUi() {
    // prompt bar
    auto* bar = addToolBar(tr("Prompt"));
    bar->setMovable(false);
    bar->addWidget(new QLabel(tr(" Prompt: ")));
    prompt_ = new QLineEdit;
    prompt_->setPlaceholderText(tr("Type a prompt and press Enter"));
    prompt_->setClearButtonEnabled(true);
    prompt_->setMaxLength(16 * 1024 * 1024); // the default (32767) would silently cut a long paste
    bar->addWidget(prompt_);
    prependBos_ = new QCheckBox(tr("Prepend BOS"));
    prependBos_->setToolTip(tr("Put the beginning-of-sequence token (<|endoftext|> for GPT-2) at position 0, "
                               "as the model saw in training and as TransformerLens does by default."));
    bar->addWidget(prependBos_);
    runButton_ = new QPushButton(tr("Run"));
    runButton_->setDefault(true);
    bar->addWidget(runButton_);
    connect(prompt_, &QLineEdit::returnPressed, this, &MainWindow::runPrompt);
    connect(runButton_, &QPushButton::clicked, this, &MainWindow::runPrompt);
    connect(prependBos_, &QCheckBox::toggled, this, [this] { if (session_.cache()) runPrompt(); });

    // left panel: model info, selectors, predictions
    auto* left = new QWidget;
    auto* leftLayout = new QVBoxLayout(left);
    auto* infoBox = new QGroupBox(tr("Model"));
    auto* infoLayout = new QVBoxLayout(infoBox);
    modelInfo_ = new QLabel(tr("No model open."));
    modelInfo_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    modelInfo_->setWordWrap(true);
    infoLayout->addWidget(modelInfo_);
    leftLayout->addWidget(infoBox);

    auto* selBox = new QGroupBox(tr("Head"));
    auto* form = new QFormLayout(selBox);
    layerSpin_ = new QSpinBox;
    headSpin_ = new QSpinBox;
    layerSpin_->setToolTip(tr("Layer (Up/Down or PageUp/PageDown)"));
    headSpin_->setToolTip(tr("Head (Left/Right)"));
    form->addRow(tr("Layer"), layerSpin_);
    form->addRow(tr("Head"), headSpin_);
    leftLayout->addWidget(selBox);
    connect(layerSpin_, &QSpinBox::valueChanged, this, [this] { updateHeatmap(); });
    connect(headSpin_, &QSpinBox::valueChanged, this, [this] { updateHeatmap(); });

    auto* topBox = new QGroupBox(tr("Top next tokens (last position)"));
    auto* topLayout = new QVBoxLayout(topBox);
    topTokens_ = new TopTokensView;
    topLayout->addWidget(topTokens_);
    leftLayout->addWidget(topBox, 1);
    left->setMinimumWidth(260);
    left->setMaximumWidth(360);

    // centre: attention heatmap | head grid
    heatmap_ = new AttentionHeatmap;
    headGrid_ = new HeadGrid;
    connect(headGrid_, &HeadGrid::headClicked, this, [this](int l, int h) { selectHead(l, h); });
    auto* attnSplit = new QSplitter(Qt::Horizontal);
    attnSplit->addWidget(heatmap_);
    attnSplit->addWidget(headGrid_);
    attnSplit->setStretchFactor(0, 3);
    attnSplit->setStretchFactor(1, 2);
    tabs_ = new QTabWidget;
    tabs_->addTab(attnSplit, tr("Attention"));

    auto* main = new QSplitter(Qt::Horizontal);
    main->addWidget(left);
    main->addWidget(tabs_);
    main->setStretchFactor(1, 1);
    setCentralWidget(main);

    // status bar: message, progress, cancel
    statusLabel_ = new QLabel;
    progress_ = new QProgressBar;
    progress_->setMaximumWidth(220);
    progress_->setVisible(false);
    cancelButton_ = new QPushButton(tr("Cancel"));
    cancelButton_->setVisible(false);
    connect(cancelButton_, &QPushButton::clicked, &session_, &ModelSession::cancel);
    statusBar()->addWidget(statusLabel_, 1);
    statusBar()->addPermanentWidget(progress_);
    statusBar()->addPermanentWidget(cancelButton_);
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("Open Model &Folder…"), QKeySequence::Open, this, &MainWindow::openFolderDialog);
    file->addAction(tr("Open &Safetensors File…"), this, &MainWindow::openFileDialog);
    file->addAction(tr("Open &Demo Model"), this, [this] { openModel(QStringLiteral(":/demo")); });
    file->addSeparator();
    QAction* exp = file->addAction(tr("&Export Heatmap…"), QKeySequence(tr("Ctrl+E")), this, &MainWindow::exportHeatmapDialog);
    QAction* expAll = file->addAction(tr("Export &All Heads…"), QKeySequence(tr("Ctrl+Shift+E")), this,
                                      &MainWindow::exportAllHeadsDialog);
    needsCache_ << exp << expAll;
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu* nav = menuBar()->addMenu(tr("&Navigate"));
    struct Move { QString name; QList<QKeySequence> keys; int dl, dh; };
    const QList<Move> moves{
        {tr("Next Head"), {QKeySequence(Qt::Key_Right)}, 0, +1},
        {tr("Previous Head"), {QKeySequence(Qt::Key_Left)}, 0, -1},
        {tr("Next Layer"), {QKeySequence(Qt::Key_Down), QKeySequence(Qt::Key_PageDown)}, +1, 0},
        {tr("Previous Layer"), {QKeySequence(Qt::Key_Up), QKeySequence(Qt::Key_PageUp)}, -1, 0},
    };
    for (const Move& m : moves) {
        QAction* a = nav->addAction(m.name);
        a->setShortcuts(m.keys);
        // arrows stay with the prompt box while it has focus; elsewhere they move between heads
        a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        tabs_->addAction(a);
        connect(a, &QAction::triggered, this, [this, m] { moveHead(m.dl, m.dh); });
    }
    menuBar()->addMenu(tr("&View"))->addMenu(Appearance::instance().createMenu(this));
    menuBar()->addMenu(tr("&View"))->addMenu(Appearance::instance().createMenu(this));
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About AttnScope"), this, [this] {
        QMessageBox::about(this, tr("About AttnScope"),
                           tr("<b>AttnScope</b>: see what a transformer computes, head by head.<br><br>%1")
                               .arg(aboutText().toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>"))));
    });
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
    for (QAction* a : needsCache_) a->setEnabled(false);
}

void MainWindow::addPanel(AnalysisPanel* panel) {
    panels_ << panel;
    tabs_->addTab(panel, panel->title());
    connect(panel, &AnalysisPanel::headRequested, this, [this](int l, int h) {
        selectHead(l, h);
        tabs_->setCurrentIndex(0);
    });
    connect(panel, &AnalysisPanel::statusMessage, statusLabel_, &QLabel::setText);
    panel->setContext(session_.model(), session_.cache(), session_.tokenLabels());
    panel->setSelectedHead(layer(), head());
}

void MainWindow::updatePanels() {
    for (AnalysisPanel* p : panels_) p->setContext(session_.model(), session_.cache(), session_.tokenLabels());
}

void MainWindow::openModel(const QString& path, const QString& prompt) {
    if (!prompt.isEmpty()) prompt_->setText(prompt);
    statusLabel_->setText(tr("Opening %1…").arg(path));
    session_.openModel(path);
}

void MainWindow::setPrompt(const QString& text) { prompt_->setText(text); }

void MainWindow::runPrompt() {
    if (session_.isBusy() || !session_.model()) return;
    // a prompt longer than the context: the user chooses between running its last n_ctx tokens and not running
    const auto model = session_.model();
    const int nCtx = model->config().n_ctx;
    const size_t n = tokenizePrompt(model->tokenizer(), prompt_->text(), prependBos_->isChecked()).size();
    bool keepLast = false;
    if (n > size_t(nCtx)) {
        QMessageBox box(QMessageBox::Warning, tr("Prompt too long"),
                        tr("The prompt has %1 tokens but the model's context (n_ctx) is %2 tokens.").arg(n).arg(nCtx),
                        QMessageBox::Cancel, this);
        QPushButton* truncate = box.addButton(tr("Run the Last %1 Tokens").arg(nCtx), QMessageBox::AcceptRole);
        box.setDefaultButton(truncate);
        box.exec();
        if (box.clickedButton() != truncate) {
            statusLabel_->setText(tr("Not run: the prompt has %1 tokens, more than n_ctx = %2.").arg(n).arg(nCtx));
            return;
        }
        keepLast = true;
    }
    session_.run(prompt_->text(), prependBos_->isChecked(), keepLast);
}

int MainWindow::layer() const { return layerSpin_->value(); }
int MainWindow::head() const { return headSpin_->value(); }

void MainWindow::selectHead(int layer, int head) {
    const QSignalBlocker b1(layerSpin_), b2(headSpin_);
    layerSpin_->setValue(layer);
    headSpin_->setValue(head);
    updateHeatmap();
}

void MainWindow::moveHead(int dLayer, int dHead) {
    if (!session_.model()) return;
    const ModelConfig& c = session_.model()->config();
    int l = layer() + dLayer, h = head() + dHead;
    if (h >= c.n_heads && l + 1 < c.n_layers) { h = 0; ++l; }          // wrap to the next layer
    if (h < 0 && l > 0) { h = c.n_heads - 1; --l; }
    selectHead(std::clamp(l, 0, c.n_layers - 1), std::clamp(h, 0, c.n_heads - 1));
}

void MainWindow::onModelLoaded() {
    const auto model = session_.model();
    const ModelConfig& c = model->config();
    layerSpin_->setRange(0, c.n_layers - 1);
    headSpin_->setRange(0, c.n_heads - 1);
    setWindowTitle(tr("AttnScope — %1").arg(model->info().name));
    updateModelInfo();
    layerTask_.cancel();
    gridTask_.cancel();
    shownLayer_.reset();
    heatmap_->setData({});
    headGrid_->clear();
    topTokens_->setRowCount(0);
    updatePanels();
    statusLabel_->setText(tr("Opened %1.").arg(model->info().path));
    if (model->info().hasNonFiniteWeights)
        statusLabel_->setText(tr("Warning: %1 has NaN or Inf weights; results may be NaN.").arg(model->info().path));
    runPrompt();
}

void MainWindow::onForwardFinished() {
    layerTask_.cancel(); // requests for the previous cache
    shownLayer_.reset();
    for (QAction* a : needsCache_) a->setEnabled(true);
    updateHeadGrid();
    updateHeatmap();
    updateTopTokens();
    updatePanels();
    for (AnalysisPanel* p : panels_) p->setSelectedHead(layer(), head());
    const auto cache = session_.cache();
    statusLabel_->setText(cache->residualsOnly() ? tr("Ran %1 tokens. Only the residual streams fit in memory: layers are "
                                                      "recomputed as they are shown.").arg(cache->nPositions())
                                                 : tr("Ran %1 tokens.").arg(cache->nPositions()));
    if (!cache->logits.allFinite()) {
        const QStringList bad = nonFiniteWeights(*session_.model(), 5);
        statusLabel_->setText(bad.isEmpty() ? tr("Warning: the logits contain NaN or Inf.")
                                            : tr("Warning: the logits contain NaN or Inf; NaN/Inf weights in %1.")
                                                  .arg(bad.join(QStringLiteral(", "))));
    }
    saveSettings();
}

void MainWindow::onBusyChanged(bool busy) {
    progress_->setVisible(busy);
    cancelButton_->setVisible(busy);
    runButton_->setEnabled(!busy);
    if (!busy) progress_->reset();
}

void MainWindow::showError(const QString& title, const QString& message) {
    statusLabel_->setText(message);
    QMessageBox::critical(this, title, message);
}

void MainWindow::updateModelInfo() {
    const auto model = session_.model();
    const ModelConfig& c = model->config();
    const ModelInfo& i = model->info();
    const QLocale loc;
    modelInfo_->setText(
        QStringLiteral("<b>%1</b> (%2)<br>layers %3 · heads %4<br>d_model %5 · d_head %6 · d_mlp %7<br>"
                       "d_vocab %8 · n_ctx %9<br>storage %10 · %11<br><small>%12</small>")
            .arg(i.name.toHtmlEscaped(), c.modelType)
            .arg(c.n_layers).arg(c.n_heads).arg(c.d_model).arg(c.d_head).arg(c.d_mlp)
            .arg(c.d_vocab).arg(c.n_ctx)
            .arg(i.storageDtype, loc.formattedDataSize(i.fileBytes), i.path.toHtmlEscaped()));
}

void MainWindow::updateHeatmap() {
    const auto model = session_.model();
    const auto cache = session_.cache();
    if (!model || !cache) return;
    const int l = layer(), h = head();
    if (l >= cache->nLayers() || h >= cache->nHeads()) return;
    headGrid_->setSelectedHead(l, h);
    if (cache->isLayerReady(l)) showHead(cache->layer(l)); // full cache, or recomputed and still held
    else requestLayer(l);
}

void MainWindow::showHead(const std::shared_ptr<const LayerCache>& layerCache) {
    const int l = layer(), h = head();
    shownLayer_ = layerCache;
    if (headGrid_->isLayerPending(l)) headGrid_->setLayerPatterns(l, layerCache->pattern); // computed anyway
    heatmap_->setData({layerCache->pattern[size_t(h)], session_.tokenLabels(),
                       heatmapTitle(session_.model()->info().name, l, h)});
    for (AnalysisPanel* p : panels_) p->setSelectedHead(l, h);
    saveSettings();
}

void MainWindow::requestLayer(int l) {
    const auto cache = session_.cache();
    statusLabel_->setText(tr("Computing layer %1…").arg(l));
    gridTask_.cancel(); // the selected layer first; the grid resumes when it is done
    // start() cancels an older request still waiting (LayerRecomputer checks the flag before computing)
    layerTask_.start([this, cache, l](const BackgroundTask::Context& ctx) -> std::function<void()> {
        std::shared_ptr<const LayerCache> lc = cache->layer(l, ctx.progress);
        return [this, cache, l, lc] {
            if (session_.cache() != cache) return;
            statusLabel_->setText(tr("Layer %1 recomputed.").arg(l));
            if (layer() == l) showHead(lc);
            startGridFill();
        };
    });
}

void MainWindow::startGridFill() {
    const auto cache = session_.cache();
    if (!cache || !cache->residualsOnly() || headGrid_->pendingLayers() == 0 || layerTask_.isRunning()) return;
    std::vector<int> todo;
    for (int l = 0; l < headGrid_->layers(); ++l)
        if (headGrid_->isLayerPending(l)) todo.push_back(l);
    gridTask_.start([this, cache, todo](const BackgroundTask::Context& ctx) -> std::function<void()> {
        for (size_t i = 0; i < todo.size(); ++i) {
            const int l = todo[i];
            ctx.progress.step(qint64(i), qint64(todo.size()), tr("Head grid: computing layer %1…").arg(l));
            std::shared_ptr<const LayerCache> lc = cache->layer(l, ctx.progress);
            ctx.post([this, cache, l, lc] {
                if (session_.cache() == cache && headGrid_->isLayerPending(l)) headGrid_->setLayerPatterns(l, lc->pattern);
            });
        }
        return [this, cache] {
            if (session_.cache() == cache) statusLabel_->setText(tr("Head grid complete (%1 layers).").arg(cache->nLayers()));
        };
    });
}

void MainWindow::waitForLayers() {
    while (isComputingLayers()) {
        layerTask_.waitForIdle();
        gridTask_.waitForIdle();
    }
}

void MainWindow::updateHeadGrid() {
    const auto cache = session_.cache();
    if (cache->residualsOnly()) { // layers are recomputed in the background and drawn as they arrive
        headGrid_->beginPatterns(cache->nLayers(), cache->nHeads());
        startGridFill();
        return;
    }
    headGrid_->setPatterns(cache->nLayers(), cache->nHeads(),
                           [&](int l, int h) { return cache->stored(l).pattern[size_t(h)]; });
}

void MainWindow::updateTopTokens() {
    const auto model = session_.model();
    const auto cache = session_.cache();
    const int row = cache->logitRow(cache->nPositions() - 1);
    if (row < 0) return;
    QVector<TopToken> rows;
    for (const TokenScore& t : attnscope::topTokens(cache->logits.row(row), 10))
        rows.push_back({t.id, model->tokenizer().displayToken(t.id), t.logit, t.prob});
    topTokens_->setTokens(rows);
}

QString MainWindow::exportCurrentHeatmap(const QString& path, QSize size, double scale) {
    const auto model = session_.model();
    const auto cache = session_.cache();
    if (!model || !cache) return tr("Nothing to export: run a prompt first.");
    if (!cache->isLayerReady(layer())) return tr("Layer %1 is still being computed; try again in a moment.").arg(layer());
    QString error;
    const AttentionHeatmapData data{cache->layer(layer())->pattern[size_t(head())], session_.tokenLabels(),
                                    heatmapTitle(model->info().name, layer(), head())};
    exportHeatmap(data, path, formatForSuffix(path), size, scale, &error);
    return error;
}

QString MainWindow::exportAllHeads(const QString& dir, const QString& ext, QSize size, double scale) {
    const auto model = session_.model();
    const auto cache = session_.cache();
    if (!model || !cache) return tr("Nothing to export: run a prompt first.");
    const ImageFormat fmt = imageFormatFromName(ext).value_or(ImageFormat::Png);
    const QStringList labels = session_.tokenLabels();
    const QString name = model->info().name;
    try {
        attnscope::exportAllHeads(model->config().n_layers, model->config().n_heads, [&](int l, int h) {
            // a residuals-only cache recomputes each layer once here (LRU), on this thread
            return AttentionHeatmapData{cache->layer(l)->pattern[size_t(h)], labels, heatmapTitle(name, l, h)};
        }, dir, fmt, size, scale);
    } catch (const InputError& e) {
        return e.message();
    } catch (const Cancelled&) {
        return tr("Cancelled.");
    }
    return {};
}

namespace {
/// Asks for the PNG pixel size and scale. Returns false when cancelled.
bool askImageSize(QWidget* parent, QSize* size, double* scale) {
    QDialog d(parent);
    d.setWindowTitle(QObject::tr("Image size"));
    auto* form = new QFormLayout(&d);
    auto* w = new QSpinBox;
    auto* h = new QSpinBox;
    auto* s = new QDoubleSpinBox;
    w->setRange(200, 8000);
    h->setRange(200, 8000);
    w->setValue(size->width());
    h->setValue(size->height());
    s->setRange(0.5, 4.0);
    s->setSingleStep(0.5);
    s->setValue(*scale);
    w->setSuffix(" px");
    h->setSuffix(" px");
    form->addRow(QObject::tr("Width"), w);
    form->addRow(QObject::tr("Height"), h);
    form->addRow(QObject::tr("Scale (PNG pixels per unit)"), s);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    form->addRow(buttons);
    QObject::connect(buttons, &QDialogButtonBox::accepted, &d, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &d, &QDialog::reject);
    if (d.exec() != QDialog::Accepted) return false;
    *size = QSize(w->value(), h->value());
    *scale = s->value();
    return true;
}
} // namespace

void MainWindow::exportHeatmapDialog() {
    if (!session_.cache()) return;
    const QString suggested = QDir::home().filePath(headFileName(layer(), head(), ImageFormat::Png));
    // QFileDialog asks before overwriting an existing file
    const QString path = QFileDialog::getSaveFileName(this, tr("Export heatmap"), suggested,
                                                      tr("PNG image (*.png);;SVG image (*.svg);;PDF document (*.pdf)"));
    if (path.isEmpty()) return;
    QSize size(1000, 900);
    double scale = 1.0;
    if (!askImageSize(this, &size, &scale)) return;
    if (QString e = exportCurrentHeatmap(path, size, scale); !e.isEmpty()) showError(tr("Export failed"), e);
    else statusLabel_->setText(tr("Exported %1").arg(path));
}

void MainWindow::exportAllHeadsDialog() {
    if (!session_.cache()) return;
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Export all heads into folder"), QDir::homePath());
    if (dir.isEmpty()) return;
    QStringList formats{"png", "svg", "pdf"};
    bool ok = false;
    const QString ext = QInputDialog::getItem(this, tr("Format"), tr("Image format"), formats, 0, false, &ok);
    if (!ok) return;
    QSize size(1000, 900);
    double scale = 1.0;
    if (!askImageSize(this, &size, &scale)) return;
    const auto cfg = session_.model()->config();
    const QString first = QDir(dir).filePath(headFileName(0, 0, formatForSuffix("x." + ext)));
    if (QFileInfo::exists(first) &&
        QMessageBox::question(this, tr("Overwrite?"), tr("%1 already has exported heads. Overwrite them?").arg(dir)) !=
            QMessageBox::Yes)
        return;
    if (QString e = exportAllHeads(dir, ext, size, scale); !e.isEmpty()) showError(tr("Export failed"), e);
    else statusLabel_->setText(tr("Exported %1 heads to %2").arg(cfg.n_layers * cfg.n_heads).arg(dir));
}

void MainWindow::openFolderDialog() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open model folder (Hugging Face layout)"));
    if (!dir.isEmpty()) openModel(dir);
}

void MainWindow::openFileDialog() {
    const QString file = QFileDialog::getOpenFileName(this, tr("Open safetensors file"), QString(),
                                                      tr("Safetensors (*.safetensors)"));
    if (!file.isEmpty()) openModel(file);
}

void MainWindow::saveSettings() const {
    QSettings s;
    s.setValue("prompt", prompt_->text());
    s.setValue("prependBos", prependBos_->isChecked());
    s.setValue("layer", layer());
    s.setValue("head", head());
    if (session_.model()) s.setValue("lastModel", session_.model()->info().path);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    saveSettings();
    session_.cancel();
    layerTask_.cancel();
    gridTask_.cancel();
    event->accept();
}

} // namespace attnscope
