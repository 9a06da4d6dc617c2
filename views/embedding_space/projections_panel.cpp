#include "views/embedding_space/projections_panel.h"

#include "views/common/panel_state.h"
#include "views/common/score_tables.h"
#include "views/figures/table_figure.h"
#include "views/common/token_picker.h"

#include <QComboBox>
#include <QFileDialog>
#include <QDir>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace attnscope {
namespace {

// saved names of the kinds (session files), in Kind order
const QStringList kKindNames{QStringLiteral("ov"), QStringLiteral("qk"), QStringLiteral("ffkey"), QStringLiteral("ffvalue")};

bool isPairKind(ProjectionsPanel::Kind k) { return k == ProjectionsPanel::Kind::OV || k == ProjectionsPanel::Kind::QK; }
PairProjectionKind pairKind(ProjectionsPanel::Kind k) {
    return k == ProjectionsPanel::Kind::OV ? PairProjectionKind::OV : PairProjectionKind::QK;
}
NeuronVectorKind neuronKind(ProjectionsPanel::Kind k) {
    return k == ProjectionsPanel::Kind::FFKey ? NeuronVectorKind::FFKey : NeuronVectorKind::FFValue;
}

} // namespace

QString ProjectionsPanel::methodNote() {
    return tr("Method (Dar et al. 2022, “Analyzing Transformers in Embedding Space”): parameters are read as "
              "scores over tokens by multiplying with the token embedding E (d_vocab × d_model). Eᵀ stands in "
              "for E's inverse, and LayerNorm and biases are ignored. What reads the residual stream goes "
              "through E = W_E, what writes to it through the unembedding U = W_U (U = Eᵀ when the model ties "
              "them). OV: E·W_V·W_O·U (source → output token); QK: E·W_Q·W_Kᵀ·Eᵀ (query → key token, raw, no "
              "1/√d_head); FF key i: E·(column i of W_in); FF value i: Uᵀ·(row i of W_out). Scores are "
              "unnormalised.");
}

ProjectionsPanel::ProjectionsPanel(QWidget* parent)
    : AnalysisPanel(parent), rowTool_(tr("Show"), tr("Type a source (OV) or query (QK) token.")), reverseTool_(tr("Find")) {
    buildUi();
}

void ProjectionsPanel::buildUi() {
    kind_ = new QComboBox;
    kind_->addItems({tr("OV circuit (head)"), tr("QK circuit (head)"), tr("FF key (neuron)"), tr("FF value (neuron)")});
    layer_ = new QSpinBox;
    head_ = new QSpinBox;
    neuron_ = new QSpinBox;
    k_ = new QSpinBox;
    k_->setRange(1, 1000);
    k_->setValue(30);
    auto* csv = new QPushButton(tr("Export CSV…"));

    auto* controls = tool_.controlRow({kind_, new QLabel(tr("layer")), layer_, new QLabel(tr("head")), head_,
                                       new QLabel(tr("neuron")), neuron_, new QLabel(tr("top-k")), k_});
    tool_.settings().add(QStringLiteral("kind"), kind_, kKindNames);
    for (auto [key, spin] : {std::pair{QStringLiteral("layer"), layer_}, std::pair{QStringLiteral("head"), head_},
                             std::pair{QStringLiteral("neuron"), neuron_}, std::pair{QStringLiteral("topK"), k_}})
        tool_.settings().add(key, spin);
    controls->addWidget(csv);

    auto* note = new QLabel(methodNote());
    note_ = note;
    note->setWordWrap(true);
    note->setObjectName(QStringLiteral("methodNote"));
    note->setFrameShape(QFrame::StyledPanel); // a framed note on the theme's alternate base, readable in both themes
    note->setBackgroundRole(QPalette::AlternateBase);
    note->setAutoFillBackground(true);
    note->setMargin(4);

    const QString computing = tr("Choose a head or neuron above; its tokens appear here once computed.");
    top_ = makeScoreTable({tr("#"), tr("source token"), tr("output token"), tr("score")}, QStringLiteral("projection_top"),
                          computing);
    bottom_ = makeScoreTable({tr("#"), tr("bottom token"), tr("score")}, QStringLiteral("projection_bottom"), computing);
    auto* lists = new QHBoxLayout;
    lists->addWidget(top_);
    lists->addWidget(bottom_);
    auto* topBox = new QGroupBox(tr("Top entries"));
    auto* topLayout = new QVBoxLayout(topBox);
    topLayout->addWidget(tool_.statusLabel());
    topLayout->addLayout(lists, 1);

    rowField_ = new TokenPicker;
    rowTable_ = makeScoreTable({tr("#"), tr("token"), tr("score")}, QStringLiteral("projection_row"),
                               tr("Type a token above and press Enter or Show."));
    auto* rowBox = new QGroupBox(tr("One token of the selected head"));
    auto* rowV = new QVBoxLayout(rowBox);
    rowV->addLayout(rowTool_.controlRow({rowField_}));
    rowV->addWidget(rowTool_.statusLabel());
    rowV->addWidget(rowTable_, 1);

    revField_ = new TokenPicker;
    const QString typeToken = tr("Type a token above and press Enter or Find.");
    revHeads_ = makeScoreTable({tr("#"), tr("head"), tr("score"), tr("via source token")}, QStringLiteral("reverse_heads"),
                               typeToken);
    revNeurons_ = makeScoreTable({tr("#"), tr("neuron (FF value)"), tr("score")}, QStringLiteral("reverse_neurons"),
                                 typeToken);
    auto* revBox = new QGroupBox(tr("Reverse search: which heads and neurons write a token? (double-click to open)"));
    auto* revV = new QVBoxLayout(revBox);
    revV->addLayout(reverseTool_.controlRow({revField_}));
    auto* revTables = new QHBoxLayout;
    revTables->addWidget(revHeads_);
    revTables->addWidget(revNeurons_);
    revV->addLayout(revTables, 1);

    auto* split = splitPanes(Qt::Horizontal, {{topBox, 3}, {splitPanes(Qt::Vertical, {{rowBox, 0}, {revBox, 0}}), 2}});

    auto* v = new QVBoxLayout(this);
    v->addLayout(controls);
    v->addWidget(note);
    v->addWidget(split, 1);

    connect(kind_, &QComboBox::currentIndexChanged, this, [this] {
        updateControls();
        recompute();
    });
    for (QSpinBox* s : {layer_, head_, neuron_, k_}) connect(s, &QSpinBox::valueChanged, this, [this] { recompute(); });
    connect(rowField_, &TokenPicker::tokenChosen, this, &ProjectionsPanel::queryRowToken);
    connect(&rowTool_, &BackgroundTool::runRequested, this, [this] {
        if (auto id = rowField_->tokenId()) queryRowToken(*id);
    });
    connect(revField_, &TokenPicker::tokenChosen, this, &ProjectionsPanel::reverseSearchFor);
    connect(&reverseTool_, &BackgroundTool::runRequested, this, [this] {
        if (auto id = revField_->tokenId()) reverseSearchFor(*id);
    });
    connect(revHeads_, &QTableWidget::cellDoubleClicked, this, [this](int r, int) {
        if (auto* it = revHeads_->item(r, 1)) setProjection(Kind::OV, it->data(Qt::UserRole).toInt(), it->data(Qt::UserRole + 1).toInt());
    });
    connect(revNeurons_, &QTableWidget::cellDoubleClicked, this, [this](int r, int) {
        if (auto* it = revNeurons_->item(r, 1))
            setProjection(Kind::FFValue, it->data(Qt::UserRole).toInt(), it->data(Qt::UserRole + 1).toInt());
    });
    connect(csv, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export CSV"), QStringLiteral("projection.csv"),
                                                          tr("CSV (*.csv)"));
        if (path.isEmpty()) return;
        if (const QString e = exportCsv(path); !e.isEmpty()) QMessageBox::warning(this, tr("Export failed"), e);
        else emit statusMessage(tr("Wrote %1.").arg(path));
    });
    for (BackgroundTool* t : {&tool_, &rowTool_, &reverseTool_})
        t->setFailedHandler([this](const QString& m) { emit statusMessage(m); }); // the window's status bar
    updateControls();
}

ProjectionsPanel::Kind ProjectionsPanel::kind() const { return Kind(kind_->currentIndex()); }

void ProjectionsPanel::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache>,
                                  const QStringList&) {
    if (model.get() == model_.get()) return;
    model_ = std::move(model);
    for (BackgroundTool* t : {&tool_, &rowTool_, &reverseTool_}) t->newContext();
    pairCache_.clear();
    // the note says which matrix reads each side for this model (tied or separate unembedding)
    note_->setText(model_ ? methodNote() + QLatin1Char(' ') + embeddingConvention(*model_) : methodNote());
    const Tokenizer* tok = model_ ? &model_->tokenizer() : nullptr;
    rowField_->setTokenizer(tok);
    revField_->setTokenizer(tok);
    for (QTableWidget* t : {rowTable_, revHeads_, revNeurons_}) t->setRowCount(0);
    updateControls();
    recompute();
}

void ProjectionsPanel::setSelectedHead(int layer, int head) {
    if (!isPairKind(kind())) return;
    const QSignalBlocker b1(layer_), b2(head_);
    layer_->setValue(layer);
    head_->setValue(head);
    recompute();
}

void ProjectionsPanel::setProjection(Kind kind, int layer, int index) {
    {
        const QSignalBlocker b0(kind_), b1(layer_), b2(head_), b3(neuron_);
        kind_->setCurrentIndex(int(kind));
        updateControls();
        layer_->setValue(layer);
        (isPairKind(kind) ? head_ : neuron_)->setValue(index);
    }
    recompute(true); // an explicit request runs even while the tab is hidden
}

void ProjectionsPanel::setTopK(int k) { k_->setValue(k); }

void ProjectionsPanel::updateControls() {
    const ModelConfig* c = model_ ? &model_->config() : nullptr;
    const bool pairs = isPairKind(kind());
    layer_->setRange(0, c ? c->n_layers - 1 : 0);
    head_->setRange(0, c ? c->n_heads - 1 : 0);
    neuron_->setRange(0, c ? c->d_mlp - 1 : 0);
    head_->setEnabled(pairs);
    neuron_->setEnabled(!pairs);
    bottom_->setVisible(!pairs);
    top_->setColumnCount(pairs ? 4 : 3);
    if (kind() == Kind::OV) top_->setHorizontalHeaderLabels({tr("#"), tr("source token"), tr("output token"), tr("score")});
    else if (kind() == Kind::QK) top_->setHorizontalHeaderLabels({tr("#"), tr("query token"), tr("key token"), tr("score")});
    else top_->setHorizontalHeaderLabels({tr("#"), tr("top token"), tr("score")});
    rowField_->setEnabled(pairs);
}

QString ProjectionsPanel::cacheKey(Kind kind, int layer, int index) const {
    return QStringLiteral("%1/%2/%3").arg(int(kind)).arg(layer).arg(index);
}

bool ProjectionsPanel::isCached(Kind kind, int layer, int head) const {
    if (!model_) return false;
    const auto p = pairCache_.value(cacheKey(kind, layer, head));
    return p && int(p->top.size()) >= std::min<qint64>(k_->value(), qint64(model_->config().d_vocab) * model_->config().d_vocab);
}

void ProjectionsPanel::showEvent(QShowEvent* event) {
    AnalysisPanel::showEvent(event);
    if (dirty_) recompute();
}

void ProjectionsPanel::recompute(bool force) {
    if (!model_) {
        tool_.discard();
        top_->setRowCount(0);
        bottom_->setRowCount(0);
        tool_.setStatus(tr("Open a model."));
        return;
    }
    const Kind k = kind();
    const int layer = layer_->value(), topK = k_->value();
    const int index = isPairKind(k) ? head_->value() : neuron_->value();
    if (isPairKind(k)) {
        const QString what = k == Kind::OV ? tr("OV circuit E·W_OV·Eᵀ of head L%1H%2: source → output token")
                                           : tr("QK circuit E·W_QK·Eᵀ of head L%1H%2: query → key token");
        tool_.setStatus(what.arg(layer).arg(index) +
                          tr(" (top %1 of %2 × %2 pairs)").arg(topK).arg(model_->config().d_vocab));
        if (isCached(k, layer, index)) {
            tool_.discard();
            PairProjection p = *pairCache_.value(cacheKey(k, layer, index));
            p.top.resize(std::min(p.top.size(), size_t(topK)));
            showPairs(p);
            dirty_ = false;
            return;
        }
    } else {
        tool_.setStatus((k == Kind::FFKey ? tr("FF key %2 of layer %1: E·k_i (what the neuron reads)")
                                            : tr("FF value %2 of layer %1: E·v_i (what the neuron writes)"))
                              .arg(layer).arg(index) + tr(" — top %1 and bottom %1 tokens").arg(topK));
    }
    top_->setRowCount(0);
    bottom_->setRowCount(0);
    shownPairs_.clear();
    if (!isVisible() && !force) { // computed when the tab is shown
        dirty_ = true;
        return;
    }
    dirty_ = false;
    tool_.start([this, model = model_, k, layer, index, topK](const BackgroundTask::Context& ctx) -> std::function<void()> {
        if (isPairKind(k)) {
            auto p = std::make_shared<const PairProjection>(projectPairs(*model, pairKind(k), layer, index, topK, ctx.progress));
            return [this, p, k, layer, index] {
                pairCache_.insert(cacheKey(k, layer, index), p);
                showPairs(*p);
            };
        }
        NeuronProjection p = projectNeuron(*model, neuronKind(k), layer, index, topK);
        return [this, p = std::move(p)] { showNeuron(p); };
    });
}

void ProjectionsPanel::showPairs(const PairProjection& p) {
    shownPairs_ = p.top;
    fillPairTable(top_, p.top, model_->tokenizer());
    emit statusMessage(tr("Embedding space: %1 pairs of L%2H%3.").arg(p.top.size()).arg(p.layer).arg(p.head));
}

void ProjectionsPanel::showNeuron(const NeuronProjection& p) {
    shownPairs_.clear();
    fillTokenTable(top_, p.top, model_->tokenizer());
    fillTokenTable(bottom_, p.bottom, model_->tokenizer());
    bottom_->setHorizontalHeaderLabels({tr("#"), tr("bottom token"), tr("score")});
}

void ProjectionsPanel::queryRowToken(int tokenId) {
    if (!model_ || !isPairKind(kind())) return;
    const Kind k = kind();
    const int layer = layer_->value(), head = head_->value(), topK = k_->value();
    if (rowField_->tokenId() != tokenId) rowField_->setTokenId(tokenId);
    const QString tok = model_->tokenizer().displayToken(tokenId);
    rowTable_->setHorizontalHeaderLabels({tr("#"), k == Kind::OV ? tr("output token") : tr("key token"), tr("score")});
    rowTool_.start(k == Kind::OV ? tr("Output tokens of source token %1 through L%2H%3's OV circuit").arg(tok).arg(layer).arg(head)
                                 : tr("Key tokens query %1 attends to most in L%2H%3's QK circuit").arg(tok).arg(layer).arg(head),
                   [this, model = model_, k, layer, head, tokenId, topK](const BackgroundTask::Context&) {
        std::vector<ScoredToken> r = projectPairsForRow(*model, pairKind(k), layer, head, tokenId, topK);
        return [this, r = std::move(r)] { fillTokenTable(rowTable_, r, model_->tokenizer()); };
    });
}

void ProjectionsPanel::reverseSearchFor(int tokenId) {
    if (!model_) return;
    if (revField_->tokenId() != tokenId) revField_->setTokenId(tokenId);
    const int topK = k_->value();
    reverseTool_.start([this, model = model_, tokenId, topK](const BackgroundTask::Context& ctx) {
        ReverseSearch r = reverseSearch(*model, tokenId, topK, topK, ctx.progress);
        return [this, r = std::move(r)] {
            const Tokenizer& tok = model_->tokenizer();
            revHeads_->setRowCount(int(r.heads.size()));
            for (int i = 0; i < int(r.heads.size()); ++i) {
                const HeadForToken& h = r.heads[size_t(i)];
                revHeads_->setItem(i, 0, rankCell(i + 1));
                revHeads_->setItem(i, 1, componentCell(QStringLiteral("L%1H%2").arg(h.layer).arg(h.head), h.layer, h.head));
                revHeads_->setItem(i, 2, scoreCell(h.score));
                revHeads_->setItem(i, 3, tokenCell(tok, h.sourceToken));
            }
            revNeurons_->setRowCount(int(r.neurons.size()));
            for (int i = 0; i < int(r.neurons.size()); ++i) {
                const NeuronForToken& n = r.neurons[size_t(i)];
                revNeurons_->setItem(i, 0, rankCell(i + 1));
                revNeurons_->setItem(i, 1,
                                     componentCell(QStringLiteral("L%1N%2").arg(n.layer).arg(n.neuron), n.layer, n.neuron));
                revNeurons_->setItem(i, 2, scoreCell(n.score));
            }
            emit statusMessage(tr("Reverse search for %1 done.").arg(tok.displayToken(r.token)));
        };
    });
}

void ProjectionsPanel::waitForIdle() {
    for (BackgroundTool* t : {&tool_, &rowTool_, &reverseTool_}) t->waitForIdle();
}

QString ProjectionsPanel::exportCsv(const QString& path) const {
    QString error;
    if (!exportTableCsv(*top_, path, &error)) return error;
    if (!isPairKind(kind())) {
        const QFileInfo fi(path);
        const QString bottomPath = fi.dir().filePath(fi.completeBaseName() + QStringLiteral("_bottom.csv"));
        if (!exportTableCsv(*bottom_, bottomPath, &error)) return error;
    }
    return {};
}

QJsonObject ProjectionsPanel::saveState() const {
    QJsonObject o{{QStringLiteral("rowToken"), rowField_->text()}, {QStringLiteral("reverseToken"), revField_->text()}};
    tool_.settings().save(o); // kind, layer, head, neuron, topK
    return o;
}

void ProjectionsPanel::restoreState(const QJsonObject& state, QStringList* problems) {
    const PanelStateReader r(state, title(), problems);
    tool_.settings().restore(r); // kind, layer, head, neuron, topK (in the ranges setContext gave this model)
    updateControls(); // what the kind enables
    recompute(); // now if shown, else when the tab is shown
    for (auto [key, field] : {std::pair{QStringLiteral("rowToken"), rowField_}, std::pair{QStringLiteral("reverseToken"), revField_}}) {
        const auto text = r.string(key);
        if (!text) continue;
        field->setText(*text);
        if (text->isEmpty()) continue;
        const auto id = field->tokenId();
        if (!id) r.problem(tr("%1 \"%2\" is not a token of this model").arg(key, *text));
        else if (field == rowField_) queryRowToken(*id);
        else reverseSearchFor(*id);
    }
}

} // namespace attnscope
