#include "views/graphs/graph_panel.h"

#include "model/analysis/circuits/attention_score_split.h"
#include "model/analysis/features/context_store.h"
#include "model/analysis/features/feature_contexts.h"
#include "model/analysis/features/feature_readout.h"
#include "model/analysis/graphs/edge_routes.h"
#include "model/analysis/graphs/graph_document_from_graph.h"
#include "model/analysis/graphs/graph_labels.h"
#include "model/analysis/graphs/feature_intervention.h"
#include "model/core/errors.h"
#include "model/transformer/prompt.h"
#include "views/common/score_tables.h"
#include "views/figures/figure_actions.h"
#include "views/graphs/graph_plot.h"
#include "views/graphs/node_card.h"
#include "views/graphs/qk_trace_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QScrollArea>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

namespace attnscope {

namespace {

void setRow(QTableWidget* t, int row, const QStringList& cells, const QVariant& data = {}) {
    for (int c = 0; c < cells.size(); ++c) {
        auto* item = new QTableWidgetItem(cells[c]);
        if (data.isValid()) item->setData(Qt::UserRole, data);
        t->setItem(row, c, item);
    }
}

QString tokenText(const Model& model, int id) { return tokenLabels(model.tokenizer(), {id}).value(0); }

QString scoredTokens(const Model& model, const std::vector<ScoredToken>& tokens) {
    QStringList parts;
    for (const ScoredToken& t : tokens)
        parts << QStringLiteral("%1 (%2)").arg(tokenText(model, t.id).toHtmlEscaped()).arg(double(t.score), 0, 'f', 2);
    return parts.join(QStringLiteral(", "));
}

QString tokenTexts(const Model& model, const std::vector<TokenScore>& tokens, int i) {
    if (i >= int(tokens.size())) return {};
    return tokenText(model, tokens[size_t(i)].id);
}

} // namespace

GraphPanel::GraphPanel(QWidget* parent)
    : AnalysisPanel(parent),
      tool_(tr("Build graph"), tr("Open a transcoder set and run a prompt to build its attribution graph.")),
      routesTool_(QString(), tr("Click an edge, in the figure or the list above, to see the heads that carry it.")),
      interveneTool_(QString(), tr("Pin nodes, group them into a supernode, then ablate or scale it.")) {
    transcoderBox_ = new QComboBox;
    transcoderBox_->setMinimumContentsLength(12);
    transcoderBox_->setToolTip(tr("A per-layer transcoder set: a circuit-tracer folder (config.yaml) or the demo's bundled set"));
    openSet_ = new QPushButton(tr("Open…"));
    nodeThreshold_ = new QDoubleSpinBox;
    nodeThreshold_->setRange(0.05, 1.0);
    nodeThreshold_->setSingleStep(0.05);
    nodeThreshold_->setDecimals(2);
    nodeThreshold_->setValue(0.8);
    nodeThreshold_->setPrefix(tr("nodes "));
    nodeThreshold_->setToolTip(tr("Keep nodes up to this share of the cumulative influence (circuit-tracer's node_threshold)"));
    edgeThreshold_ = new QDoubleSpinBox;
    edgeThreshold_->setRange(0.05, 1.0);
    edgeThreshold_->setSingleStep(0.01);
    edgeThreshold_->setDecimals(2);
    edgeThreshold_->setValue(0.98);
    edgeThreshold_->setPrefix(tr("edges "));
    edgeThreshold_->setToolTip(tr("Keep edges up to this share of the cumulative edge score (circuit-tracer's edge_threshold)"));
    maxFeatureNodes_ = new QSpinBox;
    maxFeatureNodes_->setRange(0, 1000000);
    maxFeatureNodes_->setSingleStep(500);
    maxFeatureNodes_->setValue(AttributionOptions{}.maxFeatureNodes);
    maxFeatureNodes_->setPrefix(tr("feature nodes "));
    maxFeatureNodes_->setSpecialValueText(tr("every feature"));
    maxFeatureNodes_->setToolTip(tr("At most this many feature nodes, visited in order of their influence on the logits "
                                    "(circuit-tracer's max_feature_nodes); bounds the graph's memory on long prompts. 0: every "
                                    "active feature"));
    targets_ = new QLineEdit;
    targets_->setPlaceholderText(tr("targets: the likeliest logits"));
    targets_->setToolTip(tr("What the graph explains (circuit-tracer's attribution targets). Empty: the likeliest next tokens. "
                            "Tokens: \" Paris, London\"; ids: \"ids: 464, 1234\"; a logit difference: \"diff: Paris, London\"; "
                            "a feature's decoder row: \"feature: 1:300\"; a d_model vector: \"vector: FILE.npy\"; a custom "
                            "target's weight: \"… @0.5\""));
    targets_->setMinimumWidth(120); // the build row fits a 1280-pixel-wide window
    connect(targets_, &QLineEdit::returnPressed, this, [this] { build(); });
    summary_ = textLine();
    plot_ = new GraphPlot;
    plot_->clear(tr("No graph yet."));
    pinnedOnly_ = new QCheckBox(tr("Pinned subgraph only"));
    auto* openJson = new QPushButton(tr("Open graph JSON…"));
    openJson->setToolTip(tr("Show a graph in Neuronpedia's layout (made by circuit-tracer, Neuronpedia or AttnScope) offline"));
    auto* saveJson = new QPushButton(tr("Save graph JSON…"));
    saveJson->setToolTip(tr("Write the graph in Neuronpedia's layout, with the pins and supernodes"));
    auto* exportFigure = new QPushButton(tr("Export figure"));
    auto* exportMenu = new QMenu(exportFigure);
    for (const QString& suffix : {QStringLiteral("png"), QStringLiteral("svg"), QStringLiteral("pdf")})
        exportMenu->addAction(suffix.toUpper() + QStringLiteral("…"), this, [this, suffix] { plot_->actions()->exportDialog(suffix); });
    exportFigure->setMenu(exportMenu);

    card_ = new QLabel(tr("Hover or click a node to read it."));
    card_->setTextFormat(Qt::RichText);
    card_->setWordWrap(true);
    card_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    card_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* cardScroll = new QScrollArea;
    cardScroll->setWidget(card_);
    cardScroll->setWidgetResizable(true);
    cardScroll->setFrameShape(QFrame::NoFrame);
    edges_ = makeScoreTable({tr("edge"), tr("node"), tr("weight")}, QStringLiteral("graph_node_edges"), tr("Click a node to list its edges."));
    edges_->setSelectionMode(QAbstractItemView::SingleSelection);
    edges_->setToolTip(tr("The selected node's strongest edges; click one for the heads that carry it"));
    routes_ = makeScoreTable({tr("route"), tr("part"), tr("share"), tr("query"), tr("pattern")}, QStringLiteral("graph_edge_routes"),
                             tr("Click an edge for the heads that carry it."));
    routes_->setToolTip(tr("The edge split by its first hop: no hop (source and target at the same position), a skip transcoder, "
                           "or a head reading the source's position (query: where it moves the signal; pattern: P[query, source "
                           "position]). Click a head for why it attends there, in the graph's features"));
    routes_->setSelectionMode(QAbstractItemView::SingleSelection);
    qk_ = new QkTraceView;
    pin_ = new QPushButton(tr("Pin"));
    pin_->setEnabled(false);
    supernodeName_ = new QLineEdit;
    supernodeName_->setPlaceholderText(tr("supernode name"));
    group_ = new QPushButton(tr("Group pinned into supernode"));
    supernodes_ = makeScoreTable({tr("supernode"), tr("features"), tr("nodes")}, QStringLiteral("graph_supernodes"), tr("No supernodes yet."));
    supernodes_->setSelectionMode(QAbstractItemView::SingleSelection);
    ablate_ = new QPushButton(tr("Ablate"));
    ablate_->setToolTip(tr("Set the supernode's features to 0 and rerun (patterns frozen; norms, MLPs and later features live)"));
    factor_ = new QDoubleSpinBox;
    factor_->setRange(-100, 100);
    factor_->setSingleStep(0.5);
    factor_->setValue(2);
    factor_->setPrefix(QStringLiteral("× "));
    scale_ = new QPushButton(tr("Scale"));
    scale_->setToolTip(tr("Set the supernode's features to k × their activation and rerun"));
    logits_ = makeScoreTable({tr("rank"), tr("clean"), tr("p"), tr("after"), tr("p")}, QStringLiteral("graph_intervention_logits"),
                             tr("Ablate or scale a supernode to see the top logits change."));
    continuation_ = textLine();
    continuation_->setTextFormat(Qt::RichText);

    // layout: the build row, the file row, the summary; the plot beside the node card and the supernodes
    auto* layout = new QVBoxLayout(this);
    tool_.addTo(layout, {new QLabel(tr("Transcoders")), transcoderBox_, openSet_, targets_, maxFeatureNodes_, nodeThreshold_, edgeThreshold_}, nullptr);
    tool_.setProgressInStatus(true);
    auto* files = new QHBoxLayout;
    for (QWidget* w : std::initializer_list<QWidget*>{openJson, saveJson, exportFigure, pinnedOnly_}) files->addWidget(w);
    files->addStretch(1);
    layout->addLayout(files);
    layout->addWidget(summary_);

    auto* nodePane = new QWidget;
    auto* nodeLayout = new QVBoxLayout(nodePane);
    nodeLayout->addWidget(cardScroll, 3);
    nodeLayout->addWidget(pin_);
    nodeLayout->addWidget(edges_, 2);
    nodeLayout->addWidget(routesTool_.statusLabel());
    nodeLayout->addWidget(routes_, 2);
    auto* superPane = new QWidget;
    auto* superLayout = new QVBoxLayout(superPane);
    auto* groupRow = new QHBoxLayout;
    groupRow->addWidget(supernodeName_, 1);
    groupRow->addWidget(group_);
    superLayout->addLayout(groupRow);
    superLayout->addWidget(supernodes_, 1);
    auto* removeRow = new QHBoxLayout;
    auto* unpinAll = new QPushButton(tr("Unpin all"));
    auto* remove = new QPushButton(tr("Remove supernode"));
    removeRow->addWidget(unpinAll);
    removeRow->addWidget(remove);
    removeRow->addStretch(1);
    superLayout->addLayout(removeRow);
    superLayout->addLayout(interveneTool_.controlRow({ablate_, factor_, scale_}));
    superLayout->addWidget(interveneTool_.statusLabel());
    superLayout->addWidget(logits_, 2);
    superLayout->addWidget(continuation_);
    side_ = new QTabWidget;
    side_->addTab(nodePane, tr("Node"));
    side_->addTab(qk_, tr("Why it attends"));
    side_->addTab(superPane, tr("Supernodes"));
    layout->addWidget(splitPanes(Qt::Horizontal, {{plot_, 3}, {side_, 2}}), 1);

    connect(&tool_, &BackgroundTool::runRequested, this, &GraphPanel::build);
    tool_.setCancelledHandler([this] {
        readingFile_ = false; // a cancelled read: prompts and sets build again
        tool_.setStatus(tr("Cancelled."));
    });
    tool_.setFailedHandler([this](const QString& m) {
        readingFile_ = false;
        tool_.setStatus(m);
        summary_->setText(tr("Cannot build the graph: %1").arg(m));
    });
    connect(openSet_, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a transcoder set (a circuit-tracer folder with config.yaml)"));
        if (!dir.isEmpty()) emit transcodersRequested(dir);
    });
    connect(transcoderBox_, &QComboBox::activated, this, [this](int i) {
        const QString path = transcoderBox_->itemData(i).toString();
        if (!path.isEmpty() && path != setPath_) emit transcodersRequested(path);
    });
    connect(openJson, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open an attribution graph (Neuronpedia JSON)"), QString(), tr("JSON (*.json);;All files (*)"));
        if (!path.isEmpty()) openGraphFile(path);
    });
    connect(saveJson, &QPushButton::clicked, this, [this] {
        if (!doc_) {
            summary_->setText(tr("No graph to save yet."));
            return;
        }
        const QString path = QFileDialog::getSaveFileName(this, tr("Save the graph (Neuronpedia JSON)"), doc_->slug + QStringLiteral(".json"), tr("JSON (*.json)"));
        if (path.isEmpty()) return;
        const QString error = saveGraphFile(path);
        emit statusMessage(error.isEmpty() ? tr("Wrote %1.").arg(path) : error);
    });
    connect(pinnedOnly_, &QCheckBox::toggled, plot_, &GraphPlot::setPinnedOnly);
    connect(plot_, &GraphPlot::nodeHovered, this, [this](int node) {
        hovered_ = node;
        showCard(node >= 0 ? node : selected_);
    });
    connect(plot_, &GraphPlot::nodeClicked, this, &GraphPanel::selectNode);
    connect(plot_, &GraphPlot::linkClicked, this, &GraphPanel::selectLink);
    connect(plot_, &GraphPlot::nodeDoubleClicked, this, [this](int node) {
        if (doc_) setPinned(node, !doc_->pinnedIds.contains(doc_->nodes[size_t(node)].nodeId));
    });
    connect(edges_, &QTableWidget::currentCellChanged, this, [this](int row) {
        if (row >= 0 && edges_->item(row, 0)) selectLink(edges_->item(row, 0)->data(Qt::UserRole).toInt());
    });
    connect(routes_, &QTableWidget::currentCellChanged, this, [this](int row, int, int previous) {
        if (row >= 0 && row != previous) traceRoute(row);
    });
    connect(qk_, &QkTraceView::pinRequested, this, &GraphPanel::pinQkSources);
    connect(pin_, &QPushButton::clicked, this, [this] {
        if (doc_ && selected_ >= 0) setPinned(selected_, !doc_->pinnedIds.contains(doc_->nodes[size_t(selected_)].nodeId));
    });
    connect(group_, &QPushButton::clicked, this, [this] { groupPinned(supernodeName_->text()); });
    connect(unpinAll, &QPushButton::clicked, this, [this] {
        if (!doc_) return;
        doc_->pinnedIds.clear();
        plot_->setPinned({});
        if (selected_ >= 0) pin_->setText(tr("Pin"));
    });
    connect(remove, &QPushButton::clicked, this, [this] { removeSupernode(supernodes_->currentRow()); });
    connect(ablate_, &QPushButton::clicked, this, [this] { intervene(supernodes_->currentRow(), 0.0); });
    connect(scale_, &QPushButton::clicked, this, [this] { intervene(supernodes_->currentRow(), factor_->value()); });
}

void GraphPanel::setKnownTranscoders(const QStringList& paths) {
    for (const QString& p : paths)
        if (transcoderBox_->findData(p) < 0) transcoderBox_->addItem(QFileInfo(p).fileName(), p);
}

void GraphPanel::setTranscoders(std::shared_ptr<const DictionarySet> set, const QString& path, const QString& error) {
    if (!set) {
        summary_->setText(tr("Cannot open %1: %2").arg(path, error));
        return;
    }
    set_ = std::move(set);
    setPath_ = path;
    if (transcoderBox_->findData(path) < 0) transcoderBox_->addItem(QFileInfo(path).fileName(), path);
    transcoderBox_->setCurrentIndex(transcoderBox_->findData(path));
    emit transcodersChanged(set_, setPath_);
    if (!readingFile_ && (!doc_ || !doc_->isOffline())) build();
}

void GraphPanel::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache, const QStringList& tokenLabels) {
    model_ = std::move(model);
    cache_ = std::move(cache);
    labels_ = tokenLabels;
    if (built_ && doc_ && built_->model == model_ && cache_ && built_->rm.tokens == cache_->tokens && !tool_.isRunning())
        return; // the same model and prompt (run again): the graph, pins and supernodes stay
    routesTool_.newContext();
    interveneTool_.newContext();
    if (readingFile_) return; // the file being read is shown once read
    tool_.newContext();
    if (doc_ && doc_->isOffline()) return; // a graph opened from a file stays until one is built here
    built_.reset();
    showDocument(nullptr, QString());
    if (!set_ || !model_ || !cache_) return;
    try { // another model opened with the set of the last (the demo's, say): say so rather than fail on every run
        requireFitsModel(*set_, model_->config());
    } catch (const InputError& e) {
        summary_->setText(tr("The transcoder set %1 does not fit this model (%2). Open a set made for it.").arg(setPath_, e.message()));
        return;
    }
    build();
}

void GraphPanel::build() {
    readingFile_ = false; // Build graph while a file is read: the build replaces the read
    if (!model_ || !cache_) {
        tool_.reject(tr("Run a prompt first."));
        return;
    }
    if (!set_) {
        tool_.reject(tr("Open a transcoder set first: a circuit-tracer folder with one transcoder per layer."));
        return;
    }
    const PruneOptions pruning{nodeThreshold_->value(), edgeThreshold_->value()};
    AttributionOptions attribution;
    attribution.maxFeatureNodes = maxFeatureNodes_->value();
    NeuronpediaGraphInfo info;
    info.prompt = model_->tokenizer().decode(cache_->tokens);
    info.slug = QStringLiteral("attnscope-graph");
    info.scan = set_->scan.isEmpty() ? model_->info().name : set_->scan;
    if (doc_ && !doc_->isOffline()) { // a rebuild keeps the pins and supernodes whose nodes are still there
        info.pinnedIds = doc_->pinnedIds;
        info.supernodes = doc_->supernodes;
    }
    tool_.start(tr("Building the attribution graph…"), [this, model = model_, set = set_, tokens = cache_->tokens, pruning, attribution, info,
                                                          targets = targets_->text()](const BackgroundTask::Context& ctx) mutable {
        auto b = std::make_shared<BuiltGraph>();
        b->model = model;
        b->transcoders = set;
        b->rm = buildReplacementModel(*model, *set, tokens, ctx.progress);
        if (!targets.trimmed().isEmpty()) attribution.targets = parseAttributionTargets(targets, b->rm);
        b->graph = attributeGraph(b->rm, attribution, ctx.progress);
        b->pruned = pruneGraph(b->graph, pruning);
        b->scores = graphScores(b->graph);
        auto doc = std::make_shared<GraphDocument>(graphDocumentFromGraph(b->graph, b->pruned, model->tokenizer(), pruning, info));
        return std::function<void()>([this, b, doc, pruning] {
            built_ = b;
            showDocument(doc, tr("Attribution graph of %1 → %2").arg(QStringLiteral("“%1”").arg(doc->prompt.simplified()),
                                                                    targetLabel(b->graph, b->model->tokenizer(), b->graph.logitOffset)));
            const QString features = b->graph.nFeatures() < b->graph.nActiveFeatures
                                         ? tr("%1 active features, the %2 most influential as nodes").arg(b->graph.nActiveFeatures).arg(b->graph.nFeatures())
                                         : tr("%1 active features").arg(b->graph.nFeatures());
            summary_->setText(tr("Replacement score %1, completeness %2 · %3, %4 nodes; kept %5 nodes and %6 edges "
                                 "(node threshold %7, edge threshold %8).")
                                  .arg(b->scores.replacement, 0, 'f', 3).arg(b->scores.completeness, 0, 'f', 3)
                                  .arg(features).arg(b->graph.nNodes()).arg(doc->nodes.size()).arg(doc->links.size())
                                  .arg(pruning.nodeThreshold, 0, 'f', 2).arg(pruning.edgeThreshold, 0, 'f', 2));
            tool_.setStatus(tr("Built. Hover a node for its card; click one to select it and list its edges."));
            if (const int i = doc_->indexOf(pendingSelection_); i >= 0) selectNode(i); // a session's selected node
            pendingSelection_.clear();
        });
    });
}

void GraphPanel::showDocument(std::shared_ptr<GraphDocument> doc, const QString& title) {
    doc_ = std::move(doc);
    readings_.clear();
    selected_ = hovered_ = link_ = -1;
    routesTool_.discard();
    interveneTool_.discard();
    edges_->setRowCount(0);
    routes_->setRowCount(0);
    logits_->setRowCount(0);
    continuation_->clear();
    pin_->setEnabled(false);
    card_->setText(tr("Hover or click a node to read it."));
    if (!doc_) {
        plot_->clear(set_ ? tr("Run a prompt to build its graph.") : tr("Open a transcoder set to build the prompt's attribution graph."));
        summary_->clear();
    } else {
        if (featureLabels_) applyFeatureLabels(*doc_, *featureLabels_);
        plot_->setDocument(doc_, title);
    }
    qk_->setGraph(doc_ && !doc_->isOffline() ? built_ : nullptr, doc_);
    refreshSupernodes();
}

void GraphPanel::setFeatureLabels(std::shared_ptr<const FeatureLabels> labels) {
    featureLabels_ = std::move(labels);
    if (!doc_ || !featureLabels_ || applyFeatureLabels(*doc_, *featureLabels_) == 0) return;
    plot_->nodesAdded(); // drawn again with the labels, pins and selection kept
    if (selected_ >= 0) showCard(selected_);
}

void GraphPanel::openGraphFile(const QString& path) {
    // read and checked off the GUI thread (a Neuronpedia graph can be a few hundred MB); a running build is replaced,
    // and a prompt run or a transcoder set opened meanwhile (the window's startup) does not replace the read
    readingFile_ = true;
    tool_.start(tr("Reading %1…").arg(path), [this, path](const BackgroundTask::Context&) {
        std::shared_ptr<GraphDocument> doc;
        QString error;
        try {
            doc = std::make_shared<GraphDocument>(readGraphFile(path));
        } catch (const InputError& e) {
            error = e.message();
        }
        return std::function<void()>([this, path, doc, error] {
            readingFile_ = false;
            if (!doc) {
                summary_->setText(tr("Cannot open the graph: %1").arg(error));
                tool_.setStatus(tr("Cannot open %1.").arg(path));
                return;
            }
            built_.reset();
            showDocument(doc, graphFileFigureTitle(path));
            QString text = tr("Offline: %1 — %2 nodes, %3 edges, %4 tokens. The cards show the file's data; head routes and "
                              "interventions need a graph built here (Build graph).")
                               .arg(QFileInfo(path).fileName()).arg(doc->nodes.size()).arg(doc->links.size()).arg(doc->promptTokens.size());
            if (!doc->notes.isEmpty()) text += QLatin1Char(' ') + doc->notes.join(QStringLiteral("; "));
            summary_->setText(text);
            tool_.setStatus(tr("Opened %1.").arg(path));
        });
    });
}

QString GraphPanel::saveGraphFile(const QString& path) {
    if (!doc_) return tr("No graph to save yet.");
    try {
        writeGraphFile(*doc_, path);
        return {};
    } catch (const InputError& e) {
        summary_->setText(e.message());
        return e.message();
    }
}

QString GraphPanel::cardText() const { return card_->text(); }
QString GraphPanel::summaryText() const { return summary_->text(); }

QString GraphPanel::featureReadings(const BuiltGraph& built, const GraphDocumentNode& n) const {
    QString html;
    const SparseCoder& coder = built.transcoders->coders[size_t(n.layer)]; // a built graph's node: its feature is an index of the coder
    try {
        const FeatureReadout r = readFeature(*built.model, coder, int(n.feature), 6);
        html += tr("<b>Writes</b> (W_dec[f] through ln_final and W_U) — promotes: %1<br>suppresses: %2<br>")
                    .arg(scoredTokens(*built.model, r.decoderTop), scoredTokens(*built.model, r.decoderBottom));
    } catch (const InputError& e) {
        html += e.message().toHtmlEscaped() + QStringLiteral("<br>");
    }
    const QString db = coder.path.startsWith(QLatin1Char(':')) ? QString() : defaultContextsDb(coder, 0, 1);
    if (!db.isEmpty() && QFileInfo::exists(db)) {
        try {
            QStringList lines;
            for (const FeatureContext& c : ContextStore(db, false).topContexts(int(n.feature), 3)) {
                const int from = std::max(0, c.position - 8);
                std::vector<int> before(c.ids.begin() + from, c.ids.begin() + c.position);
                lines << QStringLiteral("%1: …%2<b>[%3]</b>").arg(double(c.activation), 0, 'f', 2)
                             .arg(built.model->tokenizer().decode(before).toHtmlEscaped(), tokenText(*built.model, c.ids[size_t(c.position)]).toHtmlEscaped());
            }
            html += tr("<b>Top corpus contexts</b>: %1<br>").arg(lines.isEmpty() ? tr("none (it never fired there)") : lines.join(QStringLiteral("<br>")));
        } catch (const InputError& e) {
            html += tr("Top corpus contexts: %1<br>").arg(e.message().toHtmlEscaped());
        }
    } else {
        html += tr("<i>No corpus contexts for this set (attnscope --sae SET --feature-contexts CORPUS writes them beside a set "
                   "on disk; the bundled demo set has none).</i><br>");
    }
    return html;
}

void GraphPanel::showCard(int node) {
    if (!doc_ || node < 0 || size_t(node) >= doc_->nodes.size()) {
        card_->setText(tr("Hover or click a node to read it."));
        return;
    }
    const GraphDocumentNode& n = doc_->nodes[size_t(node)];
    const BuiltGraph* b = built_.get();
    // a custom target (--graph-targets "diff: …", "feature: …", "vector: …") carries its weight where a logit has its
    // probability (virtual token ids d_vocab + i)
    const bool customTarget = n.kind == GraphNodeKind::Logit && b && n.graphIndex >= 0 &&
                              b->graph.nodes[size_t(n.graphIndex)].id >= b->graph.dVocab;
    QString html = nodeCardFacts(n, doc_->promptTokens, customTarget);
    // a feature's decoder row read in embedding space, when the graph was built here
    if (n.kind == GraphNodeKind::Feature && b && (n.graphIndex >= 0 || n.qkOnly) && n.layer < int(b->transcoders->coders.size())) {
        if (!readings_.contains(node)) readings_.insert(node, featureReadings(*b, n)); // hovering again is free
        html += readings_.value(node);
    } else if (n.kind == GraphNodeKind::Feature && !b) {
        html += tr("<i>Opened from a file: embedding-space readings need the graph built here.</i><br>");
    }
    // its strongest edges
    for (const bool incoming : {true, false}) {
        QStringList parts;
        for (int l : doc_->strongestLinks(node, incoming, 3)) {
            const GraphDocumentLink& link = doc_->links[size_t(l)];
            parts << QStringLiteral("%1 (%2)").arg(doc_->nodeLabel(incoming ? link.source : link.target).toHtmlEscaped()).arg(link.weight, 0, 'g', 3);
        }
        if (!parts.isEmpty()) html += (incoming ? tr("<b>From</b>: %1<br>") : tr("<b>To</b>: %1<br>")).arg(parts.join(QStringLiteral(", ")));
    }
    card_->setText(html);
}

void GraphPanel::selectNode(int node) {
    if (!doc_ || node >= int(doc_->nodes.size())) return;
    selected_ = node;
    link_ = -1;
    plot_->setSelection(node, -1);
    showCard(node);
    routesTool_.discard();
    routes_->setRowCount(0);
    const QSignalBlocker quiet(edges_);
    edges_->setRowCount(0);
    pin_->setEnabled(node >= 0);
    if (node < 0) return;
    pin_->setText(doc_->pinnedIds.contains(doc_->nodes[size_t(node)].nodeId) ? tr("Unpin") : tr("Pin"));
    for (const bool incoming : {true, false})
        for (int l : doc_->strongestLinks(node, incoming, 8)) {
            const GraphDocumentLink& link = doc_->links[size_t(l)];
            const int row = edges_->rowCount();
            edges_->insertRow(row);
            setRow(edges_, row, {incoming ? tr("from") : tr("to"), doc_->nodeLabel(incoming ? link.source : link.target),
                                 QString::number(link.weight, 'g', 4)}, l);
        }
    edges_->resizeColumnsToContents();
}

void GraphPanel::selectLink(int link) {
    if (!doc_ || link < 0 || size_t(link) >= doc_->links.size()) return;
    link_ = link;
    plot_->setSelection(selected_, link);
    routes_->setRowCount(0);
    const GraphDocumentLink& l = doc_->links[size_t(link)];
    const int target = doc_->nodes[size_t(l.target)].graphIndex, source = doc_->nodes[size_t(l.source)].graphIndex;
    if (!built_ || target < 0 || source < 0) {
        routesTool_.reject(tr("Head routes need a graph built here: this one was opened from a file."));
        return;
    }
    const QString name = tr("%1 → %2").arg(doc_->nodeLabel(l.source), doc_->nodeLabel(l.target));
    routesTool_.start(tr("Splitting %1 by heads…").arg(name), [this, b = built_, target, source, name](const BackgroundTask::Context&) {
        const EdgeRoutes r = edgeRoutes(b->rm, b->graph, target, source);
        // why the strongest head attends there: its pre-softmax score at (query, source position) split into
        // (query-side component, key-side component) terms (attention_score_split.h), the three largest
        QString why;
        if (!r.heads.empty() && r.heads[0].query >= 0) {
            const HeadRoute& h = r.heads[0];
            const int key = b->graph.nodes[size_t(source)].position;
            try {
                const AttentionScoreSplit split = splitAttentionScore(*b->model, b->rm.clean, h.layer, h.head, h.query, key);
                std::vector<std::pair<double, QString>> terms;
                for (Eigen::Index qi = 0; qi < split.terms.rows(); ++qi)
                    for (Eigen::Index ki = 0; ki < split.terms.cols(); ++ki)
                        terms.push_back({split.terms(qi, ki), QStringLiteral("%1 · %2").arg(split.queryComponents[size_t(qi)].name,
                                                                                        split.keyComponents[size_t(ki)].name)});
                std::partial_sort(terms.begin(), terms.begin() + std::min<size_t>(3, terms.size()), terms.end(),
                                  [](const auto& a, const auto& b) { return std::abs(a.first) > std::abs(b.first); });
                QStringList parts;
                for (size_t i = 0; i < std::min<size_t>(3, terms.size()); ++i) parts << QStringLiteral("%1 %2").arg(terms[i].second).arg(terms[i].first, 0, 'f', 2);
                why = tr(" L%1H%2 attends %3 → %4 (pattern %5): its score %6, largest terms (query side · key side) %7.")
                          .arg(h.layer).arg(h.head).arg(h.query).arg(key).arg(split.pattern, 0, 'f', 3).arg(split.score, 0, 'f', 2)
                          .arg(parts.join(QStringLiteral(", ")));
            } catch (const InputError&) {
                // a masked or out-of-window cell has no score to split: the table still stands
            }
        }
        const int key = b->graph.nodes[size_t(source)].position;
        return std::function<void()>([this, b, r, name, why, key] {
            const auto share = [&](double v) { return r.edge != 0 ? QString::number(100 * v / r.edge, 'f', 1) + QLatin1Char('%') : QString(); };
            std::vector<QStringList> rows{{tr("no hop"), QString::number(r.residual, 'g', 4), share(r.residual), QString(), QString()}};
            if (r.skip != 0) rows.push_back({tr("skip transcoder"), QString::number(r.skip, 'g', 4), share(r.skip), QString(), QString()});
            std::vector<QVariant> cells(rows.size()); // a head row's cell to trace: layer, head, query, key
            for (const HeadRoute& h : r.heads) {
                if (rows.size() >= 14) break;
                const QString query = h.query < 0 ? QString() : QStringLiteral("%1 “%2”").arg(h.query).arg(doc_->promptTokens.value(h.query));
                rows.push_back({QStringLiteral("L%1H%2").arg(h.layer).arg(h.head), QString::number(h.value, 'g', 4), share(h.value), query,
                                QString::number(double(h.pattern), 'f', 3)});
                cells.push_back(h.query < 0 ? QVariant() : QVariant(QVariantList{h.layer, h.head, h.query, key}));
            }
            const QSignalBlocker quiet(routes_);
            routes_->setRowCount(int(rows.size()));
            for (size_t i = 0; i < rows.size(); ++i) setRow(routes_, int(i), rows[i], cells[i]);
            routes_->resizeColumnsToContents();
            routesTool_.setStatus(tr("%1: %2 = %3 (no hop, skip and %4 heads; the largest heads listed).")
                                      .arg(name).arg(r.edge, 0, 'g', 4).arg(r.sum(), 0, 'g', 4).arg(r.heads.size()) + why);
        });
    });
}

void GraphPanel::traceRoute(int row) {
    const QTableWidgetItem* item = row >= 0 ? routes_->item(row, 0) : nullptr;
    const QVariantList cell = item ? item->data(Qt::UserRole).toList() : QVariantList();
    if (cell.size() != 4) return; // no hop, skip, or a head that moves nothing
    qk_->trace(cell[0].toInt(), cell[1].toInt(), cell[2].toInt(), cell[3].toInt());
    side_->setCurrentWidget(qk_);
}

void GraphPanel::pinQkSources(const std::vector<int>& columns) {
    if (!doc_ || !built_) return;
    bool added = false;
    for (int c : columns) {
        int i = qk_->documentIndex(c);
        if (i < 0) { // pruned (or beyond the feature-node bound): drawn as a QK-only node
            doc_->nodes.push_back(qk_->columnNode(c));
            i = int(doc_->nodes.size()) - 1;
            added = true;
        }
        const QString id = doc_->nodes[size_t(i)].nodeId;
        if (!doc_->pinnedIds.contains(id)) doc_->pinnedIds << id;
    }
    if (added) plot_->nodesAdded();
    plot_->setPinned(pinnedNodes());
    qk_->refreshLabels();
    if (selected_ >= 0) pin_->setText(doc_->pinnedIds.contains(doc_->nodes[size_t(selected_)].nodeId) ? tr("Unpin") : tr("Pin"));
}

std::vector<int> GraphPanel::pinnedNodes() const {
    std::vector<int> out;
    if (doc_)
        for (const QString& id : doc_->pinnedIds)
            if (const int i = doc_->indexOf(id); i >= 0) out.push_back(i);
    return out;
}

void GraphPanel::setPinned(int node, bool pinned) {
    if (!doc_ || node < 0 || size_t(node) >= doc_->nodes.size()) return;
    const QString id = doc_->nodes[size_t(node)].nodeId;
    doc_->pinnedIds.removeAll(id);
    if (pinned) doc_->pinnedIds << id;
    plot_->setPinned(pinnedNodes());
    if (node == selected_) pin_->setText(pinned ? tr("Unpin") : tr("Pin"));
}

int GraphPanel::groupPinned(const QString& name) {
    if (!doc_ || doc_->pinnedIds.isEmpty()) {
        interveneTool_.reject(tr("Pin some nodes first (select a node, then Pin)."));
        return -1;
    }
    const QString shown = name.trimmed().isEmpty() ? tr("supernode %1").arg(doc_->supernodes.size() + 1) : name.trimmed();
    doc_->supernodes.push_back(QStringList{shown} + doc_->pinnedIds);
    refreshSupernodes();
    const int index = int(doc_->supernodes.size()) - 1;
    supernodes_->setCurrentCell(index, 0);
    supernodeName_->clear();
    return index;
}

void GraphPanel::removeSupernode(int index) {
    if (!doc_ || index < 0 || size_t(index) >= doc_->supernodes.size()) return;
    doc_->supernodes.erase(doc_->supernodes.begin() + index);
    refreshSupernodes();
}

void GraphPanel::refreshSupernodes() {
    supernodes_->setRowCount(0);
    plot_->setPinned(pinnedNodes());
    if (!doc_) return;
    supernodes_->setRowCount(int(doc_->supernodes.size()));
    for (size_t s = 0; s < doc_->supernodes.size(); ++s) {
        const QStringList& group = doc_->supernodes[s];
        QStringList labels;
        int features = 0;
        for (int k = 1; k < group.size(); ++k)
            if (const int i = doc_->indexOf(group[k]); i >= 0) {
                labels << doc_->nodeLabel(i);
                features += doc_->nodes[size_t(i)].kind == GraphNodeKind::Feature;
            }
        setRow(supernodes_, int(s), {group.value(0), QString::number(features), labels.join(QStringLiteral(", "))});
    }
}

void GraphPanel::intervene(int supernode, double factor) {
    if (!doc_ || supernode < 0 || size_t(supernode) >= doc_->supernodes.size()) {
        interveneTool_.reject(tr("Pick a supernode first (pin nodes, then Group pinned into supernode)."));
        return;
    }
    if (!built_ || doc_->isOffline()) {
        interveneTool_.reject(tr("Interventions need a graph built here: this one was opened from a file."));
        return;
    }
    const QStringList group = doc_->supernodes[size_t(supernode)];
    std::vector<int> nodes;
    for (int k = 1; k < group.size(); ++k)
        if (const int i = doc_->indexOf(group[k]); i >= 0 && doc_->nodes[size_t(i)].kind == GraphNodeKind::Feature)
            nodes.push_back(doc_->nodes[size_t(i)].graphIndex);
    if (nodes.empty()) {
        interveneTool_.reject(tr("%1 has no feature nodes: only features can be ablated or scaled.").arg(group.value(0)));
        return;
    }
    const QString what = factor == 0 ? tr("ablating %1").arg(group.value(0)) : tr("scaling %1 × %2").arg(group.value(0)).arg(factor);
    interveneTool_.start(tr("Running the prompt %1…").arg(what), [this, b = built_, nodes, factor, group](const BackgroundTask::Context& ctx) {
        InterventionOptions options;
        options.mode = InterventionMode::Live;
        options.continuationTokens = 8;
        const InterventionResult clean = interveneOnFeatures(b->rm, {}, options, ctx.progress);
        const InterventionResult after = interveneOnFeatures(b->rm, scaleFeatureNodes(b->graph, nodes, float(factor)), options, ctx.progress);
        GraphInterventionView v;
        v.supernode = group.value(0);
        v.factor = float(factor);
        v.clean = topTokens(clean.logits.row(clean.logits.rows() - 1), 10);
        v.after = topTokens(after.logits.row(after.logits.rows() - 1), 10);
        v.cleanText = b->model->tokenizer().decode(clean.continuation);
        v.afterText = b->model->tokenizer().decode(after.continuation);
        return std::function<void()>([this, b, v] {
            intervention_ = v;
            logits_->setRowCount(int(v.clean.size()));
            for (int i = 0; i < int(v.clean.size()); ++i)
                setRow(logits_, i, {QString::number(i + 1), tokenTexts(*b->model, v.clean, i), QString::number(double(v.clean[size_t(i)].prob), 'f', 4),
                                    tokenTexts(*b->model, v.after, i),
                                    i < int(v.after.size()) ? QString::number(double(v.after[size_t(i)].prob), 'f', 4) : QString()});
            logits_->resizeColumnsToContents();
            continuation_->setText(tr("<b>Clean</b>: …%1<br><b>%2 × %3</b>: …%4")
                                       .arg(v.cleanText.toHtmlEscaped(), v.supernode.toHtmlEscaped()).arg(double(v.factor)).arg(v.afterText.toHtmlEscaped()));
            interveneTool_.setStatus(tr("Top logits and 8 greedy tokens with %1's features × %2 (patterns frozen; norms, MLPs and later "
                                        "features live).").arg(v.supernode).arg(double(v.factor)));
        });
    });
}

QJsonObject GraphPanel::saveState() const {
    return QJsonObject{{"transcoders", setPath_}, {"max_feature_nodes", maxFeatureNodes_->value()}, {"targets", targets_->text()}, {"node_threshold", nodeThreshold_->value()}, {"edge_threshold", edgeThreshold_->value()},
                       {"pinned_only", pinnedOnly_->isChecked()}, {"factor", factor_->value()},
                       {"selected", doc_ && selected_ >= 0 ? doc_->nodes[size_t(selected_)].nodeId : QString()}};
}

void GraphPanel::restoreState(const QJsonObject& state, QStringList* problems) {
    Q_UNUSED(problems);
    const int bound = maxFeatureNodes_->value();
    const QString targets = targets_->text();
    maxFeatureNodes_->setValue(state.value(QStringLiteral("max_feature_nodes")).toInt(maxFeatureNodes_->value()));
    targets_->setText(state.value(QStringLiteral("targets")).toString(targets_->text()));
    nodeThreshold_->setValue(state.value(QStringLiteral("node_threshold")).toDouble(nodeThreshold_->value()));
    edgeThreshold_->setValue(state.value(QStringLiteral("edge_threshold")).toDouble(edgeThreshold_->value()));
    pinnedOnly_->setChecked(state.value(QStringLiteral("pinned_only")).toBool(pinnedOnly_->isChecked()));
    factor_->setValue(state.value(QStringLiteral("factor")).toDouble(factor_->value()));
    pendingSelection_ = state.value(QStringLiteral("selected")).toString(); // selected once a graph with that node is built
    if (doc_ && doc_->indexOf(pendingSelection_) >= 0) selectNode(doc_->indexOf(pendingSelection_));
    const QString path = state.value(QStringLiteral("transcoders")).toString();
    if (!path.isEmpty() && path != setPath_) emit transcodersRequested(path);
    // a graph built before the session's bound or targets arrived is built again with them
    else if ((bound != maxFeatureNodes_->value() || targets != targets_->text()) && (built_ || tool_.isRunning()) && !readingFile_) build();
}

void GraphPanel::waitForIdle() {
    tool_.waitForIdle();
    routesTool_.waitForIdle();
    interveneTool_.waitForIdle();
    qk_->waitForIdle();
}

} // namespace attnscope
