#include "views/embedding_space/component_readout_view.h"

#include "views/common/score_tables.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

namespace attnscope {

ComponentReadoutView::ComponentReadoutView(QWidget* parent) : QWidget(parent) {
    component_ = new QComboBox;
    component_->addItems({tr("Head output z_h·W_O^h"), tr("MLP output")});
    layer_ = new QSpinBox;
    head_ = new QSpinBox;
    position_ = new QSpinBox;
    k_ = new QSpinBox;
    k_->setRange(1, 200);
    k_->setValue(10);
    auto* controls = tool_.controlRow({component_, new QLabel(tr("layer")), layer_, new QLabel(tr("head")), head_,
                                       new QLabel(tr("position")), position_, new QLabel(tr("k")), k_});

    const QString runFirst = tr("Run a prompt to read what a head or MLP writes.");
    promoted_ = makeScoreTable({tr("#"), tr("promoted token"), tr("x·W_U")}, QStringLiteral("readout_promoted"), runFirst);
    suppressed_ = makeScoreTable({tr("#"), tr("suppressed token"), tr("x·W_U")}, QStringLiteral("readout_suppressed"),
                                 runFirst);
    auto* tables = new QHBoxLayout;
    tables->addWidget(promoted_);
    tables->addWidget(suppressed_);

    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(0, 0, 0, 0);
    v->addLayout(controls);
    v->addWidget(tool_.statusLabel());
    v->addLayout(tables, 1);

    auto changed = [this] { recompute(); };
    connect(component_, &QComboBox::currentIndexChanged, this, [this](int i) {
        head_->setEnabled(i == 0);
        recompute();
    });
    for (QSpinBox* s : {layer_, head_, position_, k_}) connect(s, &QSpinBox::valueChanged, this, changed);
}

void ComponentReadoutView::setContext(std::shared_ptr<const Model> model, std::shared_ptr<const ActivationCache> cache,
                                      const QStringList& tokenLabels) {
    model_ = std::move(model);
    cache_ = std::move(cache);
    labels_ = tokenLabels;
    const QSignalBlocker b1(layer_), b2(head_), b3(position_);
    layer_->setRange(0, model_ ? model_->config().n_layers - 1 : 0);
    head_->setRange(0, model_ ? model_->config().n_heads - 1 : 0);
    position_->setRange(0, cache_ ? std::max(cache_->nPositions() - 1, 0) : 0);
    if (cache_) position_->setValue(cache_->nPositions() - 1);
    recompute();
}

void ComponentReadoutView::setComponent(Component component, int layer, int head) {
    const QSignalBlocker b1(component_), b2(layer_), b3(head_);
    component_->setCurrentIndex(component == Component::Head ? 0 : 1);
    head_->setEnabled(component == Component::Head);
    layer_->setValue(layer);
    head_->setValue(head);
    recompute();
}

void ComponentReadoutView::setPosition(int position) { position_->setValue(position); }
int ComponentReadoutView::position() const { return position_->value(); }

void ComponentReadoutView::recompute() {
    if (!model_ || !cache_ || cache_->nPositions() == 0) {
        tool_.newContext();
        promoted_->setRowCount(0);
        suppressed_->setRowCount(0);
        tool_.setStatus(tr("Run a prompt to read what a head or MLP writes at a position."));
        return;
    }
    const bool isHead = component_->currentIndex() == 0;
    const int l = layer_->value(), h = head_->value(), p = position_->value(), k = k_->value();
    const QString what = isHead ? tr("head L%1H%2").arg(l).arg(h) : tr("MLP of layer %1").arg(l);
    tool_.start(tr("What %1 writes at position %2 (%3), read through W_U without ln_final or bias "
                   "(Dar et al. 2022).").arg(what).arg(p).arg(labels_.value(p)),
                [this, model = model_, cache = cache_, isHead, l, h, p, k](const BackgroundTask::Context&) {
        ComponentReadout r = isHead ? readHead(*model, *cache, l, h, p, k) : readMlp(*model, *cache, l, p, k);
        return [this, r = std::move(r)] { display(r); };
    });
}

void ComponentReadoutView::display(const ComponentReadout& r) {
    result_ = r;
    fillTokenTable(promoted_, r.promoted, model_->tokenizer());
    fillTokenTable(suppressed_, r.suppressed, model_->tokenizer());
}

} // namespace attnscope
