#include "views/circuits/circuits_panel.h"

#include "views/circuits/attend_view.h"
#include "views/circuits/circuit_inputs.h"
#include "views/circuits/composition_view.h"
#include "views/circuits/edge_attribution_view.h"
#include "views/circuits/flow_view.h"
#include "views/common/panel_state.h"
#include "views/circuits/path_patching_view.h"
#include "views/circuits/patching_view.h"
#include "views/circuits/saliency_view.h"
#include "views/common/token_picker.h"

#include <QLineEdit>
#include <QTabWidget>
#include <QVBoxLayout>

namespace attnscope {

namespace {
const QStringList kTabs{QStringLiteral("patching"), QStringLiteral("path-patching"), QStringLiteral("saliency"), QStringLiteral("edges"), QStringLiteral("flow"), QStringLiteral("attend"),
                        QStringLiteral("composition")};
const QStringList kMetrics{QStringLiteral("logit_diff"), QStringLiteral("logit"), QStringLiteral("prob"), QStringLiteral("logprob"),
                          QStringLiteral("kl")};
} // namespace

CircuitsPanel::CircuitsPanel(QWidget* parent) : AnalysisPanel(parent) {
    auto* layout = new QVBoxLayout(this);
    inputs_ = new CircuitInputs;
    layout->addWidget(inputs_);
    tabs_ = new QTabWidget;
    patching_ = new PatchingView(inputs_);
    pathPatching_ = new PathPatchingView(inputs_);
    saliency_ = new SaliencyView(inputs_);
    edges_ = new EdgeAttributionView(inputs_);
    flow_ = new FlowView;
    attend_ = new AttendView;
    composition_ = new CompositionView;
    tabs_->addTab(patching_, tr("Patching"));
    tabs_->addTab(pathPatching_, tr("Path patching"));
    tabs_->addTab(saliency_, tr("Saliency"));
    tabs_->addTab(edges_, tr("Edge attribution"));
    tabs_->addTab(flow_, tr("Information flow"));
    tabs_->addTab(attend_, tr("Why attend here?"));
    tabs_->addTab(composition_, tr("Composition"));
    layout->addWidget(tabs_, 1);
    connect(patching_, &PatchingView::statusMessage, this, &AnalysisPanel::statusMessage);
    // the prompt inputs matter to the two patching tabs, saliency and edge attribution only
    connect(tabs_, &QTabWidget::currentChanged, this, [this](int i) { inputs_->setEnabled(i <= 3); });
}

void CircuitsPanel::setTranscoders(std::shared_ptr<const DictionarySet> set, const QString& path) { attend_->setTranscoders(std::move(set), path); }

void CircuitsPanel::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                               const QStringList& tokenLabels) {
    model_ = model;
    cache_ = cache;
    inputs_->setContext(model, cache);
    patching_->setContext(model);
    pathPatching_->setContext(model);
    saliency_->setContext(model);
    edges_->setContext(model);
    flow_->setContext(model, cache, tokenLabels);
    attend_->setContext(model, cache, tokenLabels);
    composition_->setContext(model);
}

void CircuitsPanel::setSelectedHead(int layer, int head) {
    if (!cache_) return;
    const int q = cache_->nPositions() - 1;
    attend_->setQuery(layer, head, q, 0);
}

QJsonObject CircuitsPanel::saveState() const {
    QJsonObject o;
    o["tab"] = kTabs.value(tabs_->currentIndex());
    o["clean_prompt"] = inputs_->cleanEdit()->text();
    o["corrupt_prompt"] = inputs_->corruptEdit()->text();
    o["metric"] = kMetrics.value(int(inputs_->metricKind()));
    o["token"] = inputs_->tokenPicker()->text();
    o["counter_token"] = inputs_->counterPicker()->text();
    o["direction"] = patchDirectionName(inputs_->direction());
    patching_->saveSettings(o); // activation, by_position, ablation, method, compare
    saliency_->saveSettings(o); // saliency_method, ig_steps, baseline, baseline_token
    edges_->saveSettings(o);    // eap_method, eap_steps, eap_top
    return o;
}

void CircuitsPanel::restoreState(const QJsonObject& state, QStringList* problems) {
    const PanelStateReader r(state, title(), problems);
    if (auto t = r.choice(QStringLiteral("tab"), kTabs)) tabs_->setCurrentIndex(*t);
    const auto clean = r.string(QStringLiteral("clean_prompt")), corrupt = r.string(QStringLiteral("corrupt_prompt"));
    if (clean || corrupt) inputs_->setPrompts(clean.value_or(inputs_->cleanEdit()->text()), corrupt.value_or(inputs_->corruptEdit()->text()));
    if (auto m = r.choice(QStringLiteral("metric"), kMetrics)) inputs_->setMetricKind(PatchingMetricKind(*m));
    if (auto d = r.choice(QStringLiteral("direction"), {QStringLiteral("denoise"), QStringLiteral("noise")})) inputs_->setDirection(PatchDirection(*d));
    patching_->restoreSettings(r);
    saliency_->restoreSettings(r);
    edges_->restoreSettings(r);
    if (auto t = r.string(QStringLiteral("token"))) inputs_->tokenPicker()->setText(*t);
    if (auto t = r.string(QStringLiteral("counter_token"))) inputs_->counterPicker()->setText(*t);
    if (r.boolean(QStringLiteral("autorun")).value_or(false)) { // screenshots: run the shown sub-tab's tool
        switch (tabs_->currentIndex()) {
        case 0: patching_->run(); break;
        case 1: pathPatching_->run(); break;
        case 2: saliency_->run(); break;
        case 3: edges_->run(); break;
        case 4: flow_->build(); break;
        case 5: attend_->run(); break;
        default: composition_->run(); break;
        }
    }
}

void CircuitsPanel::waitForIdle() {
    for (BackgroundTask* t : {&patching_->task(), &pathPatching_->task(), &saliency_->task(), &edges_->task(), &flow_->task(), &attend_->task(), &attend_->traceTask(), &composition_->task(),
                              &composition_->ovTask()})
        t->waitForIdle();
}

} // namespace attnscope
