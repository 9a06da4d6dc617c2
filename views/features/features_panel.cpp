#include "views/features/features_panel.h"

#include "model/analysis/common/top_tokens.h"
#include "model/analysis/embedding_space/logit_lens.h"
#include "model/analysis/features/context_activations.h"
#include "model/analysis/features/context_store.h"
#include "model/analysis/features/feature_contexts.h"
#include "model/analysis/features/feature_intervention.h"
#include "model/core/errors.h"
#include "model/transformer/generate.h"
#include "model/transformer/prompt.h"
#include "views/features/feature_dashboard.h"

#include <QComboBox>
#include <QDateTime>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

namespace attnscope {

namespace {

QTableWidget* table(const QStringList& headers) {
    auto* t = new QTableWidget(0, int(headers.size()));
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->setVisible(false);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setSelectionMode(QAbstractItemView::SingleSelection);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->horizontalHeader()->setStretchLastSection(true);
    return t;
}

QTableWidgetItem* cell(const QString& text, const QVariant& data = {}) {
    auto* item = new QTableWidgetItem(text);
    if (data.isValid()) item->setData(Qt::UserRole, data);
    return item;
}

QString tokenList(const Model& model, const std::vector<ScoredToken>& tokens) {
    QStringList parts;
    for (const ScoredToken& t : tokens)
        parts << QStringLiteral("%1 (%2)").arg(tokenLabels(model.tokenizer(), {t.id}).value(0).toHtmlEscaped()).arg(double(t.score), 0, 'f', 2);
    return parts.join(QStringLiteral(", "));
}

QString number(double v) { return std::isfinite(v) ? QString::number(v, 'f', 4) : QStringLiteral("—"); }

} // namespace

FeaturesPanel::FeaturesPanel(QWidget* parent)
    : AnalysisPanel(parent),
      tool_(QString(), tr("Open a dictionary (an SAE or transcoder) and run a prompt to see its features.")),
      steerTool_(tr("Steer and generate"), tr("Adds α·W_dec[f] at every position and writes 12 tokens, with and without.")),
      contextsTool_(QString(), QString()) {
    dictionary_ = new QComboBox;
    dictionary_->setMinimumContentsLength(24);
    dictionary_->setToolTip(tr("The dictionary: an SAELens folder, Gemma Scope params.npz, a circuit-tracer set or Llama Scope folder"));
    open_ = new QPushButton(tr("Open…"));
    layer_ = new QSpinBox;
    layer_->setRange(0, 0);
    layer_->setPrefix(tr("layer "));
    layer_->setToolTip(tr("A transcoder set's layer"));
    layer_->setEnabled(false);
    top_ = new QSpinBox;
    top_->setRange(1, 200);
    top_->setValue(10);
    top_->setPrefix(tr("top "));
    summary_ = textLine();
    positions_ = table({tr("pos"), tr("token"), tr("firing"), tr("‖x − x̂‖²")});
    firing_ = table({tr("feature"), tr("activation"), tr("label")});
    // feature and activation fit their contents; the label takes what is left (elided, whole in its tooltip)
    firing_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    firing_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    firing_->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
    firing_->horizontalHeader()->setStretchLastSection(false); // its minimum would be the default section size
    firing_->horizontalHeader()->setMinimumSectionSize(24);
    firing_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    firing_->setMinimumWidth(firing_->fontMetrics().horizontalAdvance(QStringLiteral("feature activation label")) + 36);
    card_ = textLine(tr("Click a feature to read it."));
    card_->setTextFormat(Qt::RichText);
    dashboard_ = new FeatureDashboard;
    activationText_ = dashboard_->promptStrip();
    alpha_ = new QDoubleSpinBox;
    alpha_->setRange(-1000, 1000);
    alpha_->setValue(8);
    alpha_->setPrefix(QStringLiteral("α = "));
    steered_ = textLine();

    auto* layout = new QVBoxLayout(this);
    tool_.addTo(layout, {new QLabel(tr("Dictionary")), dictionary_, open_, layer_, top_}, nullptr);
    layout->addWidget(summary_);
    auto* cardPane = new QWidget;
    auto* cardLayout = new QVBoxLayout(cardPane);
    cardLayout->setContentsMargins(0, 0, 0, 0);
    cardLayout->addWidget(dashboard_, 1);
    cardLayout->addWidget(card_);
    cardLayout->addLayout(steerTool_.controlRow({alpha_}));
    cardLayout->addWidget(steerTool_.statusLabel());
    cardLayout->addWidget(steered_);
    layout->addWidget(splitPanes(Qt::Horizontal, {{positions_, 2}, {firing_, 1}, {cardPane, 3}}), 1);

    connect(open_, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a dictionary folder (SAELens, circuit-tracer, Llama Scope, Gemma Scope)"));
        if (!dir.isEmpty()) emit dictionaryRequested(dir);
    });
    connect(dictionary_, &QComboBox::activated, this, [this](int i) {
        const QString path = dictionary_->itemData(i).toString();
        if (!path.isEmpty() && path != setPath_) emit dictionaryRequested(path);
    });
    connect(layer_, &QSpinBox::valueChanged, this, [this] { run(); });
    connect(top_, &QSpinBox::valueChanged, this, [this] { selectPosition(position_); });
    connect(positions_, &QTableWidget::currentCellChanged, this, [this](int row) {
        if (row >= 0) selectPosition(row);
    });
    connect(firing_, &QTableWidget::currentCellChanged, this, [this](int row) {
        if (row >= 0 && firing_->item(row, 0)) selectFeature(firing_->item(row, 0)->data(Qt::UserRole).toInt());
    });
    connect(dashboard_, &FeatureDashboard::promptRequested, this, &FeaturesPanel::promptRequested);
    connect(&steerTool_, &BackgroundTool::runRequested, this, [this] { steer(alpha_->value()); });
    tool_.setFailedHandler([this](const QString& m) { summary_->setText(m); });
    contextsTool_.setFailedHandler([this](const QString& m) { dashboard_->setContextsStatus(m); });
}

void FeaturesPanel::setKnownDictionaries(const QStringList& paths) {
    for (const QString& p : paths)
        if (dictionary_->findData(p) < 0) dictionary_->addItem(QFileInfo(p).fileName(), p);
}

void FeaturesPanel::setDictionaries(std::shared_ptr<const DictionarySet> set, const QString& path, const QString& error) {
    QString why = error;
    if (set) {
        try {
            requireOneHookPerDictionary(*set);
        } catch (const InputError& e) {
            why = e.message();
            set.reset();
        }
    }
    if (!set) {
        summary_->setText(tr("Cannot open %1: %2").arg(path, why));
        return;
    }
    set_ = std::move(set);
    setPath_ = path;
    if (dictionary_->findData(path) < 0) dictionary_->addItem(QFileInfo(path).fileName(), path);
    dictionary_->setCurrentIndex(dictionary_->findData(path));
    const int n = int(set_->coders.size());
    layer_->blockSignals(true);
    layer_->setRange(0, std::max(0, n - 1));
    layer_->setEnabled(n > 1);
    layer_->blockSignals(false);
    feature_ = -1;
    corpusShown_.clear();
    run();
}

void FeaturesPanel::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                               const QStringList& tokenLabels) {
    model_ = std::move(model);
    cache_ = std::move(cache);
    labels_ = tokenLabels;
    tool_.newContext();
    steerTool_.newContext();
    steered_->clear();
    corpusShown_.clear();
    run();
}

const SparseCoder* FeaturesPanel::coder() const {
    if (!set_ || set_->coders.empty()) return nullptr;
    return &set_->coders[size_t(std::clamp(layer_->value(), 0, int(set_->coders.size()) - 1))];
}

void FeaturesPanel::run() {
    run_.reset();
    positions_->setRowCount(0);
    firing_->setRowCount(0);
    activationText_->clear();
    card_->setText(tr("Click a feature to read it."));
    const SparseCoder* sae = coder();
    if (!model_ || !cache_ || !sae) {
        summary_->setText(!sae ? tr("Open a dictionary: an SAELens folder, Gemma Scope params.npz, a circuit-tracer transcoder set "
                                    "or a Llama Scope folder.")
                               : tr("Run a prompt to see the dictionary's features."));
        tool_.discard();
        return;
    }
    std::vector<int> tokens = cache_->tokens;
    tool_.start(tr("Encoding %1 …").arg(sae->hookIn), [this, model = model_, cache = cache_, set = set_, sae, tokens](const BackgroundTask::Context& ctx) {
        auto r = std::make_shared<FeatureRun>(runDictionary(*model, *cache, *sae));
        const ReconstructionQuality q = reconstructionQuality(*model, tokens, *cache, *r, ctx.progress);
        return std::function<void()>([this, r, q] {
            run_ = r;
            quality_ = q;
            showRun();
        });
    });
}

void FeaturesPanel::showRun() {
    const SparseCoder* sae = coder();
    if (!run_ || !sae) return;
    summary_->setText(tr("%1 %2, %3 → %4, d_sae %5: %6 features fire on this prompt. FVU %7; loss %8 clean, %9 with x̂ spliced in, "
                         "%10 with the hook zeroed.")
                          .arg(sae->format, sae->architecture, run_->hookIn.name(), run_->hookOut.name()).arg(sae->d_sae)
                          .arg(run_->aliveCount()).arg(number(quality_.fvu), number(quality_.lossClean), number(quality_.lossSpliced),
                                                       number(quality_.lossZeroAblated)));
    const int S = int(run_->f.rows());
    positions_->setRowCount(S);
    for (int p = 0; p < S; ++p) {
        positions_->setItem(p, 0, cell(QString::number(p)));
        positions_->setItem(p, 1, cell(labels_.value(p)));
        positions_->setItem(p, 2, cell(QString::number(run_->firing(p, 0).size())));
        positions_->setItem(p, 3, cell(QString::number(quality_.squaredError[size_t(p)], 'g', 4)));
    }
    positions_->resizeColumnsToContents();
    tool_.setStatus(tr("Click a token to list its features."));
    selectPosition(position_ >= 0 && position_ < S ? position_ : S - 1);
    if (feature_ >= 0 && feature_ < sae->d_sae) showFeature();
}

void FeaturesPanel::selectPosition(int position) {
    if (!run_ || position < 0 || position >= run_->f.rows()) return;
    position_ = position;
    if (positions_->currentRow() != position) positions_->setCurrentCell(position, 0);
    const std::vector<FeatureValue> top = run_->firing(position, top_->value());
    firing_->setRowCount(int(top.size()));
    for (int i = 0; i < int(top.size()); ++i) {
        firing_->setItem(i, 0, cell(QString::number(top[size_t(i)].feature), top[size_t(i)].feature));
        firing_->setItem(i, 1, cell(QString::number(double(top[size_t(i)].activation), 'f', 3)));
        const QString label = featureLabel(top[size_t(i)].feature);
        QTableWidgetItem* item = cell(label);
        item->setToolTip(label);
        firing_->setItem(i, 2, item);
    }
    firing_->resizeColumnToContents(0);
    firing_->resizeColumnToContents(1);
    if (feature_ < 0 && !top.empty()) selectFeature(top.front().feature);
    else if (feature_ >= 0) showFeature();
}

void FeaturesPanel::setFeatureLabels(std::shared_ptr<const FeatureLabels> labels) {
    featureLabels_ = std::move(labels);
    if (run_) selectPosition(position_);
}

QString FeaturesPanel::featureLabel(int feature) const {
    return featureLabels_ && run_ ? featureLabels_->label(run_->hookIn.layer, feature) : QString();
}

void FeaturesPanel::selectFeature(int feature) {
    const SparseCoder* sae = coder();
    if (!sae || feature < 0 || feature >= sae->d_sae) return;
    feature_ = feature;
    showFeature();
}

void FeaturesPanel::showFeature() {
    const SparseCoder* sae = coder();
    if (!run_ || !sae || !model_ || feature_ < 0) return;
    // the activation across the prompt as coloured text: orange, as strong as the activation is against its maximum
    const Eigen::VectorXf acts = run_->f.col(feature_);
    const float maxAct = std::max(acts.maxCoeff(), 1e-12f);
    const QString html = FeatureDashboard::tintedTokens(labels_, acts, maxAct);
    const QString label = featureLabel(feature_);
    activationText_->setText(tr("<b>Feature %1</b>%2 across the prompt (max %3):<br>%4")
                                 .arg(feature_)
                                 .arg(label.isEmpty() ? QString() : QStringLiteral(" — <i>%1</i>").arg(label.toHtmlEscaped()))
                                 .arg(double(maxAct), 0, 'f', 3)
                                 .arg(html));
    const FeatureReadout r = readFeature(*model_, *sae, feature_, 8);
    auto texts = [&](const std::vector<ScoredToken>& tokens) {
        QStringList out;
        for (const ScoredToken& t : tokens) out << tokenLabels(model_->tokenizer(), {t.id}).value(0);
        return out;
    };
    dashboard_->setLogits(texts(r.decoderTop), r.decoderTop, texts(r.decoderBottom), r.decoderBottom);
    QString text;
    if (!r.decoderTop.empty())
        text += tr("<b>Writes</b> (W_dec[f] through ln_final's gain and W_U) — promotes: %1<br>suppresses: %2<br>")
                    .arg(tokenList(*model_, r.decoderTop), tokenList(*model_, r.decoderBottom));
    if (!r.encoderTop.empty())
        text += tr("<b>Reads</b> (W_E·W_enc[:, f]) — excited by: %1<br>inhibited by: %2<br>")
                    .arg(tokenList(*model_, r.encoderTop), tokenList(*model_, r.encoderBottom));
    // at the selected position, to the model's top prediction there (its logits row, or the last lens boundary's: the same)
    const int p = position_;
    if (cache_ && p >= 0 && run_->hookOut.site != HookSite::Z && sae->d_out == model_->config().d_model) {
        const int row = cache_->logitRow(p);
        const RowVector logits = row >= 0 ? RowVector(cache_->logits.row(row))
                                          : lensLogits(*model_, *cache_, lensBoundaryCount(model_->config()) - 1, p);
        const int target = topTokens(logits, 1).front().id;
        const double dla = featureLogitAttribution(*model_, *cache_, *sae, *run_, feature_, p, target);
        text += tr("<b>Direct logit attribution</b> at position %1 to the prediction %2: %3")
                    .arg(p).arg(tokenLabels(model_->tokenizer(), {target}).value(0).toHtmlEscaped()).arg(dla, 0, 'f', 4);
    }
    card_->setText(text);
    showCorpus(*sae);
}

void FeaturesPanel::showCorpus(const SparseCoder& sae) {
    // its histogram and top contexts over a corpus, when a contexts database sits beside the dictionary
    // (attnscope --feature-contexts); the contexts' per-token activations are recomputed off the GUI thread
    const QString db = sae.path.startsWith(QLatin1Char(':')) ? QString() : defaultContextsDb(sae, 0, 1);
    const QString key = QStringLiteral("%1\n%2\n%3\n%4").arg(db, QFileInfo(db).lastModified().toString(Qt::ISODateWithMs), sae.hookIn).arg(feature_);
    if (key == corpusShown_) return; // the same feature of the same database: the contexts need no second forward
    corpusShown_ = key;
    contextsTool_.discard();
    if (db.isEmpty() || !QFileInfo::exists(db)) {
        dashboard_->setNoDatabase(
            tr("No corpus contexts yet: <tt>attnscope --model … --sae %1 --feature-contexts CORPUS</tt> writes them (a histogram and "
               "the top contexts of every feature) beside the dictionary; the dashboard then shows them here.")
                .arg(db.isEmpty() ? tr("FOLDER (a copy of this bundled dictionary)") : sae.path.toHtmlEscaped()));
        return;
    }
    std::vector<FeatureContext> top;
    try {
        const ContextStore store(db, false);
        const auto [firing, counts] = store.histogram(feature_);
        dashboard_->setHistogram(counts, firing, contextsSummary(store).positions, QFileInfo(db).fileName());
        top = store.topContexts(feature_, 5);
    } catch (const InputError& e) {
        dashboard_->setNoDatabase(tr("Top contexts: %1").arg(e.message().toHtmlEscaped()));
        return;
    }
    dashboard_->setContextsStatus(tr("Recomputing the contexts' activations …"));
    contextsTool_.start([this, model = model_, set = set_, coder = &sae, top, feature = feature_](const BackgroundTask::Context&) {
        std::vector<DashboardContext> contexts;
        for (const FeatureContext& c : top) {
            DashboardContext d;
            d.tokens = tokenLabels(model->tokenizer(), c.ids);
            d.activations = contextActivations(*model, *coder, c.ids, feature);
            d.position = c.position;
            d.stored = c.activation;
            d.prompt = model->tokenizer().decode(std::vector<int>(c.ids.begin() + 1, c.ids.end()));
            contexts.push_back(std::move(d));
        }
        return std::function<void()>([this, contexts] { dashboard_->setContexts(contexts); });
    });
}

void FeaturesPanel::steer(double alpha) {
    const SparseCoder* sae = coder();
    if (!model_ || !cache_ || !sae || feature_ < 0) {
        steerTool_.reject(tr("Pick a feature first."));
        return;
    }
    const FeatureEdit edit{feature_, FeatureEditKind::Steer, alpha, {}};
    std::shared_ptr<const ForwardHooks> hooks;
    try {
        hooks = featureEditHooks(*model_, *sae, {edit});
    } catch (const InputError& e) {
        steerTool_.reject(e.message());
        return;
    }
    const int feature = feature_;
    steerTool_.start(tr("Generating …"), [this, model = model_, tokens = cache_->tokens, hooks, feature, alpha](const BackgroundTask::Context& ctx) {
        const std::vector<int> clean = greedyContinuation(*model, tokens, 12, ctx.progress);
        const std::vector<int> steered = greedyContinuation(*model, tokens, 12, hooks, ctx.progress);
        auto text = [&](const std::vector<int>& ids) { return model->tokenizer().decode(ids).toHtmlEscaped(); };
        const QString html = tr("<b>Without</b>: …%1<br><b>With feature %2 × %3</b>: …%4").arg(text(clean)).arg(feature).arg(alpha).arg(text(steered));
        return std::function<void()>([this, html] {
            steered_->setTextFormat(Qt::RichText);
            steered_->setText(html);
            steerTool_.setStatus(tr("Done."));
        });
    });
}

QJsonObject FeaturesPanel::saveState() const {
    return QJsonObject{{"dictionary", setPath_}, {"layer", layer_->value()}, {"feature", feature_}, {"position", position_},
                       {"top", top_->value()}, {"alpha", alpha_->value()}};
}

void FeaturesPanel::restoreState(const QJsonObject& state, QStringList* problems) {
    Q_UNUSED(problems);
    top_->setValue(state.value(QStringLiteral("top")).toInt(top_->value()));
    alpha_->setValue(state.value(QStringLiteral("alpha")).toDouble(alpha_->value()));
    position_ = state.value(QStringLiteral("position")).toInt(position_);
    feature_ = state.value(QStringLiteral("feature")).toInt(feature_);
    const QString path = state.value(QStringLiteral("dictionary")).toString();
    if (!path.isEmpty() && path != setPath_) emit dictionaryRequested(path);
    layer_->setValue(state.value(QStringLiteral("layer")).toInt(layer_->value()));
}

void FeaturesPanel::waitForIdle() {
    tool_.waitForIdle();
    steerTool_.waitForIdle();
    contextsTool_.waitForIdle();
}

} // namespace attnscope
