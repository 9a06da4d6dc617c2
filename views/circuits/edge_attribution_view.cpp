#include "views/circuits/edge_attribution_view.h"

#include "model/analysis/common/json_number.h"
#include "views/circuits/circuit_inputs.h"
#include "views/circuits/edge_graph_plot.h"

#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace attnscope {

namespace {
QString kEmptyText() {
    return QObject::tr("Find circuit: the edges of the top N drawn from the input (top) to the logits (bottom), width ∝ |score|, "
                       "red positive, blue negative.");
}
} // namespace

EdgeAttributionView::EdgeAttributionView(CircuitInputs* inputs, QWidget* parent)
    : QWidget(parent), inputs_(inputs),
      tool_(tr("Find circuit"), tr("Enter a corrupted prompt and a metric, then Find circuit: every edge between heads, MLPs, "
                                   "the input and the logits scored, the top N kept and evaluated.")) {
    auto* layout = new QVBoxLayout(this);
    methodCombo_ = new QComboBox;
    methodCombo_->addItem(tr("EAP"), int(EdgeAttributionMethod::Eap));
    methodCombo_->addItem(tr("EAP-IG"), int(EdgeAttributionMethod::EapIg));
    methodCombo_->setItemData(0, tr("Edge attribution patching (Syed et al. 2023): (a_corrupt − a_clean)·∂metric/∂(receiver input) at the clean run"),
                              Qt::ToolTipRole);
    methodCombo_->setItemData(1, tr("EAP with integrated gradients (Hanna et al. 2024): the gradient averaged along the embeddings' "
                                    "path from corrupted to clean"),
                              Qt::ToolTipRole);
    methodCombo_->setCurrentIndex(1);
    steps_ = new QSpinBox;
    steps_->setRange(1, 1000);
    steps_->setValue(5);
    steps_->setPrefix(tr("steps "));
    steps_->setToolTip(tr("EAP-IG: forward and backward passes along the path"));
    top_ = new QSpinBox;
    top_->setRange(1, 1000000);
    top_->setValue(200);
    top_->setPrefix(tr("top "));
    top_->setSuffix(tr(" edges"));
    top_->setToolTip(tr("The circuit: the edges with the largest |score|"));
    auto* jsonButton = new QPushButton(tr("Export JSON…"));
    faithfulnessLine_ = textLine();
    plot_ = new EdgeGraphPlot;
    plot_->clear(kEmptyText());
    auto* result = new QWidget;
    auto* resultLayout = new QVBoxLayout(result);
    resultLayout->setContentsMargins(0, 0, 0, 0);
    resultLayout->addWidget(faithfulnessLine_);
    resultLayout->addWidget(plot_, 1);
    layout->addLayout(tool_.controlRow({methodCombo_, steps_, top_}, {jsonButton}));
    layout->addWidget(tool_.statusLabel());
    layout->addWidget(result, 1);

    tool_.settings().add(QStringLiteral("eap_method"), methodCombo_,
                         {edgeAttributionMethodName(EdgeAttributionMethod::Eap), edgeAttributionMethodName(EdgeAttributionMethod::EapIg)});
    tool_.settings().add(QStringLiteral("eap_steps"), steps_);
    tool_.settings().add(QStringLiteral("eap_top"), top_);
    connect(&tool_, &BackgroundTool::runRequested, this, &EdgeAttributionView::run);
    connect(methodCombo_, &QComboBox::currentIndexChanged, this, [this] { steps_->setEnabled(method() == EdgeAttributionMethod::EapIg); });
    connect(top_, &QSpinBox::valueChanged, this, [this] {
        if (attribution_) reselect();
    });
    connect(jsonButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export circuit"), QStringLiteral("circuit.json"), tr("JSON (*.json)"));
        if (!path.isEmpty())
            if (QString e = exportJson(path); !e.isEmpty()) tool_.setStatus(e);
    });
    tool_.setProgressInStatus(true);
    tool_.setFailedHandler([this](const QString& message) { // a gradient that is not finite names its hook, in place of the graph
        tool_.setStatus(message);
        attribution_.reset();
        circuit_.clear();
        faithfulness_.reset();
        faithfulnessLine_->clear();
        plot_->clear(tr("No circuit: %1").arg(message));
    });
}

void EdgeAttributionView::setContext(std::shared_ptr<const Model> model) {
    if (model == model_) return;
    tool_.newContext();
    model_ = std::move(model);
    runs_ = {};
    attribution_.reset();
    circuit_.clear();
    faithfulness_.reset();
    faithfulnessLine_->clear();
    plot_->clear(kEmptyText());
}

void EdgeAttributionView::setMethod(EdgeAttributionMethod m) { methodCombo_->setCurrentIndex(methodCombo_->findData(int(m))); }
EdgeAttributionMethod EdgeAttributionView::method() const { return EdgeAttributionMethod(methodCombo_->currentData().toInt()); }
void EdgeAttributionView::setSteps(int steps) { steps_->setValue(steps); }
void EdgeAttributionView::setTopEdges(int n) { top_->setValue(n); }
QString EdgeAttributionView::faithfulnessText() const { return faithfulnessLine_->text(); }

void EdgeAttributionView::run() {
    if (!model_) return;
    EdgeAttributionOptions o;
    o.method = method();
    o.steps = steps_->value();
    CircuitRunSpec spec;
    try {
        spec = inputs_->spec(true);
    } catch (const InputError& e) {
        tool_.reject(e.message());
        return;
    }
    o.metric = spec.metric;
    metric_ = spec.metric;
    metricDescription_ = spec.metricDescription;
    const int top = top_->value();
    tool_.start(tr("Scoring edges…"), [this, model = model_, spec, o, top](const BackgroundTask::Context& ctx) -> std::function<void()> {
        PatchingRuns runs = preparePatchingRuns(*model, spec.clean, spec.corrupt, {}, ctx.progress);
        EdgeAttribution a = runEdgeAttribution(*model, runs, o, ctx.progress);
        std::vector<int> circuit = selectCircuitEdges(a.graph, top);
        CircuitFaithfulness f = evaluateCircuit(*model, runs, o.metric, a.graph, circuit, ctx.progress);
        return [this, runs = std::move(runs), a = std::move(a), circuit = std::move(circuit), f] {
            runs_ = runs;
            attribution_ = a;
            show(circuit, f);
        };
    });
}

void EdgeAttributionView::reselect() {
    const int top = top_->value();
    tool_.start(tr("Evaluating the top %1 edges…").arg(top),
                [this, model = model_, runs = runs_, metric = metric_, a = *attribution_, top](const BackgroundTask::Context& ctx) -> std::function<void()> {
                    std::vector<int> circuit = selectCircuitEdges(a.graph, top);
                    CircuitFaithfulness f = evaluateCircuit(*model, runs, metric, a.graph, circuit, ctx.progress);
                    return [this, circuit = std::move(circuit), f] { show(circuit, f); };
                });
}

void EdgeAttributionView::show(std::vector<int> circuit, CircuitFaithfulness f) {
    circuit_ = std::move(circuit);
    faithfulness_ = f;
    const EdgeAttribution& a = *attribution_;
    const QString method = a.options.method == EdgeAttributionMethod::EapIg ? tr("EAP-IG (%1 steps)").arg(a.options.steps) : tr("EAP");
    plot_->setCircuit(model_->config(), a, circuit_,
                      tr("%1: top %2 edges, %3 at position %4").arg(method).arg(circuit_.size()).arg(metricDescription_).arg(a.position));
    faithfulnessLine_->setText(tr("The top %1 of %2 edges recover %3 of the metric: circuit %4, clean run %5, corrupted run %6 "
                                  "(every other edge reads the corrupted run).")
                                   .arg(f.edges)
                                   .arg(a.graph.edges.size())
                                   .arg(std::isfinite(f.recovered) ? QString::number(100 * f.recovered, 'f', 1) + QStringLiteral(" %")
                                                                   : tr("an undefined share (clean = corrupted)"))
                                   .arg(f.metric, 0, 'g', 6)
                                   .arg(f.clean, 0, 'g', 6)
                                   .arg(f.corrupt, 0, 'g', 6));
    tool_.setStatus(tr("Done: %1 edges scored by %2.").arg(a.graph.edges.size()).arg(method));
}

QString EdgeAttributionView::exportJson(const QString& path) const {
    if (!attribution_ || !faithfulness_) return tr("%1: nothing to export, find a circuit first").arg(path);
    const EdgeAttribution& a = *attribution_;
    QJsonArray edges;
    for (int i : circuit_) {
        const ScoredEdge& e = a.graph.edges[size_t(i)];
        edges.append(QJsonObject{{"edge", a.graph.edgeName(e)},
                                 {"sender", edgeSenderName(a.graph.senders[size_t(e.sender)])},
                                 {"receiver", edgeReceiverName(a.graph.receivers[size_t(e.receiver)])},
                                 {"score", jsonNumber(e.score)}});
    }
    const CircuitFaithfulness& f = *faithfulness_;
    const QJsonObject o{{"method", edgeAttributionMethodName(a.options.method)},
                        {"steps", a.options.steps},
                        {"metric", metricDescription_},
                        {"position", a.position},
                        {"clean", jsonNumber(a.clean)},
                        {"corrupt", jsonNumber(a.corrupt)},
                        {"graph_edges", int(a.graph.edges.size())},
                        {"top", int(circuit_.size())},
                        {"faithfulness", QJsonObject{{"edges", f.edges}, {"metric", jsonNumber(f.metric)}, {"recovered", jsonNumber(f.recovered)}}},
                        {"edges", edges}};
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) return tr("%1: %2").arg(path, file.errorString());
    file.write(QJsonDocument(QJsonObject{{"edge_attribution", o}}).toJson());
    return {};
}

} // namespace attnscope
