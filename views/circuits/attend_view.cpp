#include "views/circuits/attend_view.h"

#include "views/figures/matrix_heatmap.h"

#include <QSpinBox>
#include <QVBoxLayout>

namespace attnscope {

AttendView::AttendView(QWidget* parent)
    : QWidget(parent), tool_(tr("Split the score"), tr("Pick a head, a query and a key position.")) {
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
    tool_.addTo(new QVBoxLayout(this), {layer_, head_, query_, key_}, heatmap_);
    connect(&tool_, &BackgroundTool::runRequested, this, &AttendView::run);
    connect(query_, &QSpinBox::valueChanged, this, [this](int q) { key_->setMaximum(q); });
}

void AttendView::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache, const QStringList& labels) {
    if (model == model_ && cache == cache_) return;
    tool_.newContext();
    model_ = std::move(model);
    cache_ = std::move(cache);
    labels_ = labels;
    split_.reset();
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
