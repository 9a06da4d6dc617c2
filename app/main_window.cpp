#include "app/main_window.h"

#include "app/about_text.h"
#include "views/figures/appearance.h"
#include "app/help_browser.h"
#include "app/keyboard_shortcuts.h"
#include "app/model_drop.h"
#include "app/model_file_watcher.h"
#include "app/model_open_dialog.h"
#include "app/model_picker_dialog.h"
#include "app/recent_models.h"
#include "app/session_controller.h"
#include "app/view_ids.h"
#include "app/window_layout.h"
#include "model/discovery/model_name.h"

#include "model/analysis/common/top_tokens.h"
#include "views/embedding_space/logit_lens_panel.h"
#include "views/comparison/model_compare_panel.h"
#include "views/embedding_space/projections_panel.h"
#include "model/transformer/prompt.h"
#include "model/transformer/weight_checks.h"
#include "views/common/analysis_panel.h"
#include "views/figures/appearance.h"
#include "views/attention/attention_sandbox_panel.h"
#include "views/attention/attention_steps_panel.h"
#include "views/circuits/circuits_panel.h"
#include "views/attention/attention_heatmap.h"
#include "views/figures/figure_export.h"
#include "views/attention/head_grid.h"
#include "views/attention/head_metrics_view.h"
#include "views/residual/residual_panel.h"
#include "views/features/features_panel.h"
#include "views/graphs/graph_panel.h"
#include "model/features/dictionary_set.h"
#include "model/features/feature_labels.h"
#include "model/core/errors.h"
#include "views/common/top_tokens_view.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QJsonDocument>
#include <QMimeData>
#include <QTabBar>
#include <QThread>
#include <QToolButton>
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

/// The K/V head query head h reads, for titles: −1 without grouped-query attention.
static int kvHeadLabel(const Model& model, int h) { return model.config().groupSize() > 1 ? model.config().kvHeadOf(h) : -1; }

MainWindow::MainWindow(QWidget* parent, Mode mode) : QMainWindow(parent), desktop_(mode == Mode::Desktop) {
    setWindowTitle(tr("AttnScope"));
    Appearance::instance().install(); // the saved theme (or the desktop's) before any widget is shown
    setAcceptDrops(true);
    buildUi();
    buildMenus();
    addHelpButton(0); // the Attention tab; addPanel adds the others
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
    auto* circuits = new CircuitsPanel;
    addPanel(circuits);
    // the Features and Graph tabs: the window opens the dictionaries they ask for (read-only, memory-mapped)
    const auto openFor = [](const QString& path, const std::function<void(std::shared_ptr<const DictionarySet>, const QString&)>& apply) {
        try {
            apply(std::make_shared<const DictionarySet>(openDictionaries(path)), QString());
        } catch (const ModelError& e) {
            apply(nullptr, e.message());
        } catch (const InputError& e) {
            apply(nullptr, e.message());
        }
    };
    features_ = new FeaturesPanel;
    addPanel(features_);
    connect(features_, &FeaturesPanel::promptRequested, this, [this](const QString& prompt) {
        setPrompt(prompt);
        runPrompt();
    });
    connect(features_, &FeaturesPanel::dictionaryRequested, this, [this, openFor](const QString& path) {
        openFor(path, [&](std::shared_ptr<const DictionarySet> set, const QString& error) { features_->setDictionaries(std::move(set), path, error); });
    });
    graph_ = new GraphPanel;
    addPanel(graph_);
    connect(graph_, &GraphPanel::transcodersChanged, circuits, &CircuitsPanel::setTranscoders); // its Attend view traces in the set
    connect(graph_, &GraphPanel::transcodersRequested, this, [this, openFor](const QString& path) {
        openFor(path, [&](std::shared_ptr<const DictionarySet> set, const QString& error) { graph_->setTranscoders(std::move(set), path, error); });
    });
    connect(&session_, &ModelSession::modelLoaded, this, &MainWindow::onModelLoaded);
    connect(&session_, &ModelSession::forwardFinished, this, &MainWindow::onForwardFinished);
    connect(&session_, &ModelSession::busyChanged, this, &MainWindow::onBusyChanged);
    connect(&session_, &ModelSession::modelLoadFailed, this,
            [this](const QString& m) { showError(tr("Cannot open model"), m); });
    connect(&session_, &ModelSession::forwardFailed, this,
            [this](const QString& m) { showError(tr("Cannot run the prompt"), m); });
    connect(&session_, &ModelSession::cancelled, this, [this] { statusLabel_->showFinished(tr("Cancelled.")); });
    // the second model (comparison, stitching): opened by the session, handed to every panel
    connect(&session_, &ModelSession::secondModelProgress, this,
            [this](const QString& path, qint64 done, qint64 total, const QString& what) {
                if (secondRequester_) secondRequester_->setSecondModelStatus({path, true, done, total, what, {}});
            });
    connect(&session_, &ModelSession::secondModelLoaded, this, [this] {
        const auto second = session_.secondModel();
        for (AnalysisPanel* p : panels_) p->setSecondModel(second);
        statusLabel_->showFinished(tr("Opened %1 as the second model.").arg(second->info().path));
    });
    connect(&session_, &ModelSession::secondModelLoadFailed, this, [this](const QString& path, const QString& message) {
        if (secondRequester_) secondRequester_->setSecondModelStatus({path, false, 0, 0, {}, message});
        if (message.isEmpty()) statusLabel_->showFinished(tr("Opening %1 was cancelled.").arg(path));
        else statusLabel_->showMessage(tr("Cannot open the second model: %1").arg(message));
    });
    connect(&gridTask_, &BackgroundTask::progressChanged, this, [this](qint64, qint64, const QString& what) {
        if (!layerTask_.isRunning()) statusLabel_->showMessage(what);
    });
    connect(&gridTask_, &BackgroundTask::failed, statusLabel_, &StatusLine::showMessage);
    connect(&layerTask_, &BackgroundTask::failed, this, [this](const QString& m) {
        statusLabel_->showMessage(m);
        startGridFill();
    });
    connect(&session_, &ModelSession::progressChanged, this, [this](qint64 done, qint64 total, const QString& what) {
        progress_->setRange(0, int(total));
        progress_->setValue(int(done));
        statusLabel_->showMessage(what);
    });

    sessions_ = new SessionController(this); // after the connections above: it acts once the window has updated
    connect(sessions_, &SessionController::restored, this, &MainWindow::onSessionRestored);
    watcher_ = new ModelFileWatcher(this);
    connect(watcher_, &ModelFileWatcher::changed, this, &MainWindow::askReload);
    help_ = new HelpBrowser(this);
    connect(tabs_, &QTabWidget::currentChanged, this, [this] { saveSettings(); }); // the tab belongs to the last session

    prompt_->setText(QString::fromUtf8(kDefaultPrompt));
    prependBos_->setChecked(true);
    resize(1500, 920);
    if (!desktop_) return;
    QSettings s;
    prompt_->setText(s.value("prompt", QString::fromUtf8(kDefaultPrompt)).toString());
    prependBos_->setChecked(s.value("prependBos", true).toBool());
    layerSpin_->setValue(s.value("layer", 0).toInt());
    headSpin_->setValue(s.value("head", 0).toInt());
    restoreWindowLayout(this);
}

MainWindow::~MainWindow() = default;

void MainWindow::buildUi() {
    // prompt bar
    auto* bar = addToolBar(tr("Prompt"));
    bar->setObjectName(QStringLiteral("promptToolBar")); // QMainWindow::saveState needs it
    bar->setMovable(false);
    bar->addWidget(new QLabel(tr(" Prompt: ")));
    prompt_ = new QLineEdit;
    prompt_->setPlaceholderText(tr("Type a prompt and press Enter"));
    prompt_->setClearButtonEnabled(true);
    prompt_->setMaxLength(16 * 1024 * 1024); // the default (32767) would silently cut a long paste
    bar->addWidget(prompt_);
    prependBos_ = new QCheckBox(tr("Prepend BOS"));
    prependBos_->setToolTip(tr("Put the beginning-of-sequence token (<|endoftext|> for GPT-2, <s> for Llama 2) at "
                               "position 0. Checked by default when the model's tokenizer adds it (add_bos_token)."));
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
    headMetrics_ = new HeadMetricsView;
    connect(headMetrics_, &HeadMetricsView::headClicked, this, [this](int l, int h) { selectHead(l, h); });
    auto* rightSplit = new QSplitter(Qt::Vertical); // the head grid over the head metrics and their scatter
    rightSplit->setObjectName(QStringLiteral("headGridMetricsSplitter"));
    rightSplit->addWidget(headGrid_);
    rightSplit->addWidget(headMetrics_);
    rightSplit->setStretchFactor(0, 1);
    rightSplit->setStretchFactor(1, 1);
    auto* attnSplit = new QSplitter(Qt::Horizontal);
    attnSplit->setObjectName(QStringLiteral("attentionSplitter"));
    attnSplit->addWidget(heatmap_);
    attnSplit->addWidget(rightSplit);
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
    statusLabel_ = new StatusLine;
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
    file->addAction(tr("&Open…"), QKeySequence::Open, this, &MainWindow::openDialog)
        ->setToolTip(tr("A .safetensors, .gguf or llama2.c .bin file, a model folder or a session"));
    file->addAction(tr("Open Recent/&Installed…"), QKeySequence(tr("Ctrl+Shift+O")), this, &MainWindow::showModelPicker);
    recentMenu_ = file->addMenu(tr("Open &Recent"));
    connect(recentMenu_, &QMenu::aboutToShow, this, &MainWindow::rebuildRecentMenu);
    rebuildRecentMenu();
    file->addAction(tr("Open &Demo Model"), this, [this] { openModel(QStringLiteral("demo")); });
    QAction* reload = file->addAction(tr("Re&load Model"), QKeySequence(tr("Ctrl+R")), this, [this] {
        if (session_.model()) sessions_->restore(sessions_->capture(), {}, true);
    });
    file->addAction(tr("Open Feature &Labels…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open feature labels"), QString(),
                                                          tr("Feature labels (*.jsonl *.jsonl.gz *.csv);;All files (*)"));
        if (!path.isEmpty()) openFeatureLabels({path});
    });
    file->addSeparator();
    file->addAction(tr("Open Sess&ion…"), QKeySequence(tr("Ctrl+Alt+O")), this, &MainWindow::openSessionDialog);
    QAction* saveSession = file->addAction(tr("&Save Session…"), QKeySequence::Save, this, &MainWindow::saveSessionDialog);
    needsCache_ << reload << saveSession;
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
    viewMenu_ = menuBar()->addMenu(tr("&View")); // filled by buildViewMenu once the tabs exist
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("About This &View"), QKeySequence::HelpContents, this, [this] { showHelp(currentViewId()); });
    help->addAction(tr("&Guides to All Views"), this, [this] { showHelp(QStringLiteral("index")); });
    help->addAction(tr("&Keyboard Shortcuts"), QKeySequence(tr("Ctrl+/")), this,
                    [this] { showShortcutsDialog(this, windowShortcuts(this)); });
    help->addSeparator();
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
    addHelpButton(tabs_->count() - 1);
    buildViewMenu(); // Ctrl+N for the new tab
    connect(panel, &AnalysisPanel::headRequested, this, [this](int l, int h) {
        selectHead(l, h);
        tabs_->setCurrentIndex(0);
    });
    connect(panel, &AnalysisPanel::statusMessage, statusLabel_, &StatusLine::showFinished); // a panel's job is done
    connect(panel, &AnalysisPanel::secondModelRequested, this, [this, panel](const QString& path) {
        secondRequester_ = panel;
        statusLabel_->startJob(tr("Opening %1 as the second model…").arg(path));
        session_.openSecondModel(path);
    });
    connect(panel, &AnalysisPanel::secondModelCancelRequested, &session_, &ModelSession::cancelSecondModel);
    panel->setContext(session_.model(), session_.cache(), session_.tokenLabels());
    if (session_.secondModel()) panel->setSecondModel(session_.secondModel());
    panel->setSelectedHead(layer(), head());
}

void MainWindow::updatePanels() {
    for (AnalysisPanel* p : panels_) p->setContext(session_.model(), session_.cache(), session_.tokenLabels());
}

void MainWindow::openModel(const QString& nameOrPath, const QString& prompt, const QString& tokenizerPath) {
    if (!prompt.isEmpty()) prompt_->setText(prompt);
    const ResolvedModel resolved = resolveModelName(nameOrPath);
    if (!resolved.ok()) {
        showError(tr("Cannot open model"), resolved.error);
        return;
    }
    openedAs_ = nameOrPath.isEmpty() ? QStringLiteral("demo") : nameOrPath;
    LoadOptions options; // absolute: the load runs later, and sessions store it (session_file.h)
    options.tokenizerPath = tokenizerPath.isEmpty() ? QString() : QFileInfo(tokenizerPath).absoluteFilePath();
    session_.openModel(resolved.path, options); // a new job: the status line is cleared (onBusyChanged)
    statusLabel_->showMessage(tr("Opening %1…").arg(resolved.path));
}

void MainWindow::openGraphFile(const QString& path) {
    if (sessions_->isRestoring()) { // after the session: its tab and Graph settings would otherwise replace the file's
        connect(sessions_, &SessionController::restored, this, [this, path] { openGraphFile(path); }, Qt::SingleShotConnection);
        return;
    }
    showView(QStringLiteral("graphs"));
    graph_->openGraphFile(path);
}

QString MainWindow::openFeatureLabels(const QStringList& paths) {
    std::shared_ptr<const FeatureLabels> labels;
    try {
        auto read = std::make_shared<FeatureLabels>();
        for (const QString& path : paths) read->merge(readFeatureLabels(path));
        labels = read;
    } catch (const ModelError& e) {
        showError(tr("Cannot open feature labels"), e.message());
        return e.message();
    } catch (const InputError& e) {
        showError(tr("Cannot open feature labels"), e.message());
        return e.message();
    }
    features_->setFeatureLabels(labels);
    graph_->setFeatureLabels(labels);
    statusLabel_->showFinished(tr("Feature labels: %1.").arg(labels->summary()));
    return {};
}

void MainWindow::openPath(const QString& nameOrPath) {
    if (nameOrPath.endsWith(QLatin1Char('.') + kSessionSuffix)) {
        if (const QString e = sessions_->openFile(nameOrPath); !e.isEmpty()) showError(tr("Cannot open session"), e);
        else if (desktop_) addRecentModel(nameOrPath);
        return;
    }
    openModel(nameOrPath);
}

QString MainWindow::prompt() const { return prompt_->text(); }

void MainWindow::setPrependBos(bool on) {
    const QSignalBlocker block(prependBos_);
    prependBos_->setChecked(on);
    bosChosen_ = on; // a session's choice outlives the model default applied when its model opens
}

bool MainWindow::prependBos() const { return prependBos_->isChecked(); }

void MainWindow::setPrompt(const QString& text) { prompt_->setText(text); }

void MainWindow::runPrompt() {
    if (session_.isBusy() || !session_.model()) return;
    // a prompt longer than the context: the user chooses between running its last n_ctx tokens and not running
    const auto model = session_.model();
    const int nCtx = model->config().n_ctx;
    const size_t n = tokenizePrompt(model->tokenizer(), prompt_->text(), prependBos_->isChecked()).size();
    bool keepLast = false; // offscreen (--screenshot): the forward pass refuses it, as --dump-json does
    if (n > size_t(nCtx) && desktop_) {
        QMessageBox box(QMessageBox::Warning, tr("Prompt too long"),
                        tr("The prompt has %1 tokens but the model's context (n_ctx) is %2 tokens.").arg(n).arg(nCtx),
                        QMessageBox::Cancel, this);
        QPushButton* truncate = box.addButton(tr("Run the Last %1 Tokens").arg(nCtx), QMessageBox::AcceptRole);
        box.setDefaultButton(truncate);
        box.exec();
        if (box.clickedButton() != truncate) {
            statusLabel_->showMessage(tr("Not run: the prompt has %1 tokens, more than n_ctx = %2.").arg(n).arg(nCtx));
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
    headMetrics_->setContext(model, nullptr);
    topTokens_->setRowCount(0);
    {   // the model's own default (Llama 2 and GPT-2 put BOS first, Qwen2 does not), unless a session chose
        const QSignalBlocker quiet(prependBos_);
        prependBos_->setChecked(bosChosen_.value_or(model->tokenizer().addsBos()));
        bosChosen_.reset();
    }
    updatePanels();
    if (model->info().path == QLatin1String(":/demo")) { // the bundled demo dictionaries (resources/demo-features)
        QStringList bundled;
        for (const QString& d : QDir(QStringLiteral(":/demo-features")).entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
            bundled << QStringLiteral(":/demo-features/") + d;
        features_->setKnownDictionaries(bundled);
        if (!features_->dictionaries() && !bundled.isEmpty())
            emit features_->dictionaryRequested(bundled.contains(QStringLiteral(":/demo-features/resid-topk")) ? QStringLiteral(":/demo-features/resid-topk")
                                                                                                              : bundled.first());
        const QString transcoders = QStringLiteral(":/demo-features/transcoders"), clt = QStringLiteral(":/demo-features/clt");
        if (bundled.contains(transcoders)) {
            graph_->setKnownTranscoders(bundled.contains(clt) ? QStringList{transcoders, clt} : QStringList{transcoders});
            if (!graph_->transcoders()) emit graph_->transcodersRequested(transcoders);
        }
    }
    statusLabel_->showFinished(tr("Opened %1.").arg(model->info().path));
    watcher_->watch(modelFilesOnDisk(model->info()));
    if (desktop_) addRecentModel(openedAs_.isEmpty() ? model->info().path : openedAs_);
    if (model->info().hasNonFiniteWeights)
        statusLabel_->showMessage(tr("Warning: %1 has NaN or Inf weights; results may be NaN.").arg(model->info().path));
    runPrompt();
}

void MainWindow::onForwardFinished() {
    bosChosen_.reset();
    layerTask_.cancel(); // requests for the previous cache
    shownLayer_.reset();
    for (QAction* a : needsCache_) a->setEnabled(true);
    updateHeadGrid();
    headMetrics_->setContext(session_.model(), session_.cache());
    updateHeatmap();
    updateTopTokens();
    updatePanels();
    for (AnalysisPanel* p : panels_) p->setSelectedHead(layer(), head());
    const auto cache = session_.cache();
    if (cache->residualsOnly()) // how the views behave from now on: it stays
        statusLabel_->showMessage(tr("Ran %1 tokens. Only the residual streams fit in memory: layers are recomputed as "
                                     "they are shown.").arg(cache->nPositions()));
    else statusLabel_->showFinished(tr("Ran %1 tokens.").arg(cache->nPositions()));
    if (!cache->logits.allFinite()) {
        const QStringList bad = nonFiniteWeights(*session_.model(), 5);
        statusLabel_->showMessage(bad.isEmpty() ? tr("Warning: the logits contain NaN or Inf.")
                                                : tr("Warning: the logits contain NaN or Inf; NaN/Inf weights in %1.")
                                                      .arg(bad.join(QStringLiteral(", "))));
    }
    saveSettings();
}

void MainWindow::onBusyChanged(bool busy) {
    if (busy) statusLabel_->startJob(); // the last job's message no longer applies
    progress_->setVisible(busy);
    cancelButton_->setVisible(busy);
    runButton_->setEnabled(!busy);
    if (!busy) progress_->reset();
}

void MainWindow::showError(const QString& title, const QString& message) {
    statusLabel_->showMessage(message);
    if (desktop_) QMessageBox::critical(this, title, message);
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
    headMetrics_->setSelectedHead(l, h);
    if (cache->isLayerReady(l)) showHead(cache->layer(l)); // full cache, or recomputed and still held
    else requestLayer(l);
}

void MainWindow::showHead(const std::shared_ptr<const LayerCache>& layerCache) {
    const int l = layer(), h = head();
    shownLayer_ = layerCache;
    if (headGrid_->isLayerPending(l)) headGrid_->setLayerPatterns(l, layerCache->pattern); // computed anyway
    heatmap_->setData({layerCache->pattern[size_t(h)], session_.tokenLabels(),
                       heatmapTitle(session_.model()->info().name, l, h, kvHeadLabel(*session_.model(), h))});
    for (AnalysisPanel* p : panels_) p->setSelectedHead(l, h);
    saveSettings();
}

void MainWindow::requestLayer(int l) {
    const auto cache = session_.cache();
    statusLabel_->showMessage(tr("Computing layer %1…").arg(l));
    gridTask_.cancel(); // the selected layer first; the grid resumes when it is done
    // start() cancels an older request still waiting (LayerRecomputer checks the flag before computing)
    layerTask_.start([this, cache, l](const BackgroundTask::Context& ctx) -> std::function<void()> {
        std::shared_ptr<const LayerCache> lc = cache->layer(l, ctx.progress);
        return [this, cache, l, lc] {
            if (session_.cache() != cache) return;
            statusLabel_->showFinished(tr("Layer %1 recomputed.").arg(l));
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
            if (session_.cache() == cache) statusLabel_->showFinished(tr("Head grid complete (%1 layers).").arg(cache->nLayers()));
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
                                    heatmapTitle(model->info().name, layer(), head(), kvHeadLabel(*model, head()))};
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
            return AttentionHeatmapData{cache->layer(l)->pattern[size_t(h)], labels, heatmapTitle(name, l, h, kvHeadLabel(*model, h))};
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
    else statusLabel_->showFinished(tr("Exported %1").arg(path));
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
    else statusLabel_->showFinished(tr("Exported %1 heads to %2").arg(cfg.n_layers * cfg.n_heads).arg(dir));
}

void MainWindow::openDialog() {
    const QString path = ModelOpenDialog::getPath(this);
    if (!path.isEmpty()) openPath(path);
}

void MainWindow::openSessionDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open session"), QDir::homePath(),
                                                      tr("AttnScope sessions (*.%1)").arg(kSessionSuffix));
    if (!path.isEmpty()) openPath(path);
}

void MainWindow::saveSessionDialog() {
    const QString suggested = QDir::home().filePath(
        (session_.model() ? QString(session_.model()->info().name).replace(QLatin1Char('/'), QLatin1Char('_')) : QStringLiteral("session")) +
        QLatin1Char('.') + kSessionSuffix);
    QString path = QFileDialog::getSaveFileName(this, tr("Save session"), suggested,
                                                tr("AttnScope sessions (*.%1)").arg(kSessionSuffix));
    if (path.isEmpty()) return;
    if (!path.endsWith(QLatin1Char('.') + kSessionSuffix)) path += QLatin1Char('.') + kSessionSuffix;
    if (const QString e = sessions_->saveFile(path); !e.isEmpty()) return showError(tr("Cannot save session"), e);
    statusLabel_->showFinished(tr("Saved the session to %1").arg(path));
    if (desktop_) addRecentModel(path);
}

void MainWindow::onSessionRestored(const QStringList& problems) {
    if (problems.isEmpty()) {
        statusLabel_->showFinished(tr("Session restored."));
        return;
    }
    statusLabel_->showMessage(tr("Session restored, except: %1").arg(problems.join(QStringLiteral("; ")))); // stays
    if (!desktop_) return;
    auto* box = new QMessageBox(QMessageBox::Warning, tr("Session restored in part"),
                                tr("The session was restored except for:"), QMessageBox::Ok, this);
    box->setInformativeText(QStringLiteral("• ") + problems.join(QStringLiteral("\n• ")));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open(); // not exec(): the restore is done and the window stays usable
}

void MainWindow::rebuildRecentMenu() {
    recentMenu_->clear();
    const QStringList recent = desktop_ ? recentModels() : QStringList();
    for (int i = 0; i < recent.size(); ++i) {
        const QString& entry = recent[i];
        const bool stale = isStaleRecentModel(entry);
        QString label = QStringLiteral("&%1  %2").arg((i + 1) % 10).arg(entry);
        if (stale) label += tr("  (missing)");
        QAction* a = recentMenu_->addAction(label, this, [this, entry] { openPath(entry); });
        a->setEnabled(!stale);
        a->setToolTip(stale ? tr("%1 no longer exists").arg(entry) : entry);
    }
    if (recent.isEmpty()) recentMenu_->addAction(tr("No recent models"))->setEnabled(false);
    recentMenu_->addSeparator();
    recentMenu_->addAction(tr("&Clear Recent"), this, [this] {
        clearRecentModels();
        rebuildRecentMenu();
    })->setEnabled(!recent.isEmpty());
}

ModelPickerDialog* MainWindow::showModelPicker() {
    if (!picker_) {
        picker_ = new ModelPickerDialog(this);
        connect(picker_, &ModelPickerDialog::modelChosen, this, &MainWindow::openPath);
    } else {
        picker_->refresh();
    }
    picker_->show();
    picker_->raise();
    return picker_;
}

void MainWindow::buildViewMenu() {
    viewMenu_->clear();
    for (int i = 0; i < tabs_->count(); ++i) {
        QAction* a = viewMenu_->addAction(tabs_->tabText(i), this, [this, i] { tabs_->setCurrentIndex(i); });
        if (i < 9) a->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
        else if (i == 9) a->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0)); // the tenth tab (Graph)
    }
    viewMenu_->addSeparator();
    viewMenu_->addMenu(Appearance::instance().createMenu(this)); // Theme and colour maps
}

void MainWindow::addHelpButton(int tab) {
    auto* b = new QToolButton;
    b->setText(QStringLiteral("?"));
    b->setAutoRaise(true);
    b->setObjectName(QStringLiteral("helpButton_%1").arg(viewIdAt(tab)));
    b->setToolTip(tr("What %1 shows and how it is computed").arg(tabs_->tabText(tab)));
    connect(b, &QToolButton::clicked, this, [this, tab] { showHelp(viewIdAt(tab)); });
    tabs_->tabBar()->setTabButton(tab, QTabBar::RightSide, b);
}

void MainWindow::showHelp(const QString& viewId) { help_->showTopic(viewId); }

QString MainWindow::viewIdAt(int index) const {
    if (index == 0) return kAttentionViewId;
    auto* p = qobject_cast<AnalysisPanel*>(tabs_->widget(index));
    return p ? viewIdOf(p) : QString();
}

QString MainWindow::currentViewId() const { return viewIdAt(tabs_->currentIndex()); }

bool MainWindow::showView(const QString& id) {
    for (int i = 0; i < tabs_->count(); ++i)
        if (viewIdAt(i) == id) {
            tabs_->setCurrentIndex(i);
            return true;
        }
    return false;
}

AnalysisPanel* MainWindow::panel(const QString& id) const {
    for (AnalysisPanel* p : panels_)
        if (viewIdOf(p) == id) return p;
    return nullptr;
}

void MainWindow::waitForIdle() {
    session_.waitForIdle();
    session_.waitForSecondModel();
    waitForLayers();
    for (AnalysisPanel* p : panels_) p->waitForIdle();
    headMetrics_->waitForIdle();
    QCoreApplication::processEvents();
}

void MainWindow::askReload(const QString& file) {
    if (askingReload_ || !session_.model() || !desktop_) return;
    askingReload_ = true;
    QMessageBox box(QMessageBox::Question, tr("Model changed on disk"),
                    tr("%1 changed on disk.").arg(QDir::toNativeSeparators(file)), QMessageBox::NoButton, this);
    box.setInformativeText(tr("Reload the model? The prompt, the selected head and every view's settings are kept."));
    QPushButton* reload = box.addButton(tr("Reload"), QMessageBox::AcceptRole);
    box.addButton(tr("Keep the Loaded Model"), QMessageBox::RejectRole);
    box.setDefaultButton(reload);
    box.exec();
    askingReload_ = false;
    if (box.clickedButton() == reload) sessions_->restore(sessions_->capture(), {}, true);
    else statusLabel_->showMessage(tr("%1 changed on disk; the loaded model was kept (File → Reload Model reloads it).").arg(file));
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (!droppedModelPath(event->mimeData()).isEmpty()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QString path = droppedModelPath(event->mimeData());
    if (path.isEmpty()) return;
    event->acceptProposedAction();
    openPath(path);
}

void MainWindow::saveSettings() const {
    if (!desktop_) return;
    QSettings s;
    if (!sessions_->isRestoring() && session_.model()) // the whole session, restored at the next start (startup_model.h)
        s.setValue("lastSession", QString::fromUtf8(QJsonDocument(sessionToJson(sessions_->capture())).toJson(QJsonDocument::Compact)));
    s.setValue("prompt", prompt_->text());
    s.setValue("prependBos", prependBos_->isChecked());
    s.setValue("layer", layer());
    s.setValue("head", head());
    if (session_.model()) s.setValue("lastModel", session_.model()->info().path);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    saveSettings();
    if (desktop_) saveWindowLayout(this);
    session_.cancel();
    session_.cancelSecondModel();
    layerTask_.cancel();
    gridTask_.cancel();
    event->accept();
}

} // namespace attnscope
