#include "views/circuits/attend_view.h"

#include "model/analysis/graphs/replacement_model.h"
#include "model/core/errors.h"
#include "views/figures/matrix_heatmap.h"

#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace attnscope {

/// The prompt's replacement model through a transcoder set and the QkTracer reading it (kept alive together).
struct QkTracerOfPrompt {
    QkTracerOfPrompt(std::shared_ptr<const Model> m, std::shared_ptr<const ActivationCache> c, std::shared_ptr<const DictionarySet> s,
                     const Progress& progress)
        : model(std::move(m)), cache(std::move(c)), set(std::move(s)), rm(buildReplacementModel(*model, *set, cache->tokens, progress)), tracer(rm) {}
    std::shared_ptr<const Model> model;
    std::shared_ptr<const ActivationCache> cache;
    std::shared_ptr<const DictionarySet> set;
    ReplacementModel rm;
    QkTracer tracer;
};

AttendView::AttendView(QWidget* parent)
    : QWidget(parent), tool_(tr("Split the score"), tr("Pick a head, a query and a key position.")),
      qkTool_(QString(), tr("Split the score to trace it in the transcoders' features too.")) {
    const auto spin = [](const QString& prefix) {
        auto* s = new QSpinBox;
        s->setPrefix(prefix);
        s->setRange(0, 0);
        return s;
    };
    layer_ = spin(tr("layer "));
    head_ = spin(tr("head "));
    query_ = spin(tr("query "));
    key_ = spin(tr("key "));
    heatmap_ = new MatrixHeatmap;
    heatmap_->setEmptyText(tr("Each cell: scale · q-side component · k-side component; the cells sum to the pre-softmax score."));
    // the feature-level trace beside the split: the cell in the transcoders' features (with a set), else what enables it
    qk_ = makeQkTraceTables(QStringLiteral("attend_qk_trace"));
    traceTitle_ = textLine();
    tracePane_ = new QWidget;
    auto* traceLayout = new QVBoxLayout(tracePane_);
    traceLayout->setContentsMargins(0, 0, 0, 0);
    QHBoxLayout* titleRow = qkTool_.controlRow({traceTitle_});
    titleRow->setStretchFactor(traceTitle_, 1);
    traceLayout->addLayout(titleRow);
    traceLayout->addWidget(qkTool_.statusLabel());
    traceLayout->addWidget(qk_.widget, 1);
    tracePane_->hide();
    hint_ = textLine(tr("In features: choose a transcoder set in the Graph tab (Transcoders) to also trace this score through the "
                        "replacement model, as pairs of features, error nodes and tokens."));
    auto* layout = new QVBoxLayout(this);
    tool_.addTo(layout, {layer_, head_, query_, key_}, splitPanes(Qt::Horizontal, {{heatmap_, 3}, {tracePane_, 2}}));
    layout->insertWidget(1, hint_);
    connect(&tool_, &BackgroundTool::runRequested, this, &AttendView::run);
    connect(query_, &QSpinBox::valueChanged, this, [this](int q) { key_->setMaximum(q); });
}

AttendView::~AttendView() = default;

void AttendView::setTranscoders(std::shared_ptr<const DictionarySet> set, const QString& path) {
    if (set == set_) return;
    set_ = std::move(set);
    setPath_ = path;
    qkTool_.newContext();
    tracer_.reset();
    trace_.reset();
    fillQkTraceTables(qk_, QkTrace{}, {});
    tracePane_->setVisible(bool(set_));
    hint_->setVisible(!set_);
    traceTitle_->setText(tr("In features, through the transcoder set “%1”: the score's largest (q-side, k-side) pairs in the "
                            "replacement model").arg(QFileInfo(path).fileName()));
}

void AttendView::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache, const QStringList& labels) {
    if (model == model_ && cache == cache_) return;
    tool_.newContext();
    model_ = std::move(model);
    cache_ = std::move(cache);
    labels_ = labels;
    split_.reset();
    qkTool_.newContext();
    tracer_.reset();
    trace_.reset();
    fillQkTraceTables(qk_, QkTrace{}, {});
    if (model_) {
        layer_->setMaximum(model_->config().n_layers - 1);
        head_->setMaximum(model_->config().n_heads - 1);
    }
    const int S = cache_ ? cache_->nPositions() : 1;
    query_->setMaximum(S - 1);
    if (cache_ && query_->value() == 0) query_->setValue(S - 1);
    key_->setMaximum(query_->value());
    tool_.runButton()->setEnabled(model_ && cache_);
    redraw();
}

void AttendView::setQuery(int layer, int head, int query, int key) {
    layer_->setValue(layer);
    head_->setValue(head);
    query_->setValue(query);
    key_->setValue(key);
}

void AttendView::run() {
    if (!model_ || !cache_) return;
    const int l = layer_->value(), h = head_->value(), q = query_->value(), k = key_->value();
    tool_.start(tr("Splitting…"), [this, model = model_, cache = cache_, l, h, q, k](const BackgroundTask::Context&) -> std::function<void()> {
        AttentionScoreSplit s = splitAttentionScore(*model, *cache, l, h, q, k);
        return [this, s = std::move(s)] {
            split_ = s;
            redraw();
        };
    });
    if (set_) traceInFeatures(l, h, q, k);
}

void AttendView::traceInFeatures(int layer, int head, int query, int key) {
    try {
        requireFitsModel(*set_, model_->config());
    } catch (const InputError& e) {
        qkTool_.reject(tr("The transcoder set %1 does not fit this model (%2).").arg(QFileInfo(setPath_).fileName(), e.message()));
        return;
    }
    std::shared_ptr<const QkTracerOfPrompt> cached = tracer_ && tracer_->cache == cache_ && tracer_->set == set_ ? tracer_ : nullptr;
    qkTool_.start(cached ? tr("Tracing in features…") : tr("Building the prompt's replacement model, then tracing in features…"),
                  [this, model = model_, cache = cache_, set = set_, cached, layer, head, query, key](const BackgroundTask::Context& ctx) {
                      const auto tracer = cached ? cached : std::make_shared<const QkTracerOfPrompt>(model, cache, set, ctx.progress);
                      QkTrace t = tracer->tracer.trace(layer, head, query, key, 50, ctx.progress);
                      return std::function<void()>([this, tracer, t = std::move(t)] {
                          tracer_ = tracer;
                          trace_ = t;
                          fillQkTraceTables(qk_, t, [this](QTableWidgetItem* item, int column) {
                              item->setText(qkSourceLabel(tracer_->tracer.columns()[size_t(column)], labels_));
                          });
                          qkTool_.setStatus(qkTraceCheckText(t, labels_));
                      });
                  });
}

void AttendView::redraw() {
    if (!split_ || !model_) {
        heatmap_->setFigure({});
        return;
    }
    const AttentionScoreSplit& s = *split_;
    MatrixFigure f;
    f.values = s.terms.cast<float>();
    for (const ComponentId& c : s.queryComponents) f.rowLabels << c.name;
    for (const ComponentId& c : s.keyComponents) f.colLabels << c.name;
    f.rowTitle = tr("query-side component (position %1 %2)").arg(s.query).arg(labels_.value(s.query));
    f.colTitle = tr("key-side component (position %1 %2)").arg(s.key).arg(labels_.value(s.key));
    f.title = tr("L%1H%2 score %3 → %4, split by component").arg(s.layer).arg(s.head).arg(s.query).arg(s.key);
    f.valueTitle = tr("score term");
    f.scale = MatrixFigure::Scale::Signed;
    heatmap_->setFigure(f);
    tool_.setStatus(tr("Σ terms = %1; cached scaled score (attn_scores) = %2; check error |Σ − score| = %3; attention weight "
                       "A[%4, %5] = %6")
                        .arg(s.sum, 0, 'g', 8)
                        .arg(s.score, 0, 'g', 8)
                        .arg(s.checkError, 0, 'g', 3)
                        .arg(s.query)
                        .arg(s.key)
                        .arg(s.pattern, 0, 'g', 5));
}

} // namespace attnscope
