#include "views/attention_heatmap.h"

#include "model/core/errors.h"
#include "views/palettes.h"
#include "views/token_axis.h"

#include <qcustomplot.h>

#include <QAction>
#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

namespace attnscope {
namespace {

/// QCustomPlot whose layout can be computed without drawing (fitSquareCells needs the axis rect).
class LayoutablePlot : public QCustomPlot {
public:
    using QCustomPlot::QCustomPlot;
    void layoutNow() { updateLayout(); }
};

QFont withPointSize(QFont f, double pt, bool bold = false) {
    f.setPointSizeF(pt);
    f.setBold(bold);
    return f;
}

void styleAxis(QCPAxis* axis, const QFont& base, const QString& label) {
    axis->setLabel(label);
    axis->setLabelFont(withPointSize(base, 10));
    axis->setTickLabelFont(withPointSize(base, 9));
    axis->setTickLengthIn(0);
    axis->setTickLengthOut(3);
    axis->setBasePen(QPen(Qt::black, 0));
    axis->setTickPen(QPen(Qt::black, 0));
    axis->setPadding(4);
}

} // namespace

AttentionHeatmap::AttentionHeatmap(QWidget* parent) : QWidget(parent), plot_(new LayoutablePlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    // The resolved family ("DejaVu Sans"), not an alias like "Sans Serif" that SVG viewers don't know.
    QFont base = font();
    base.setFamily(QFontInfo(base).family());

    // Layout: [title] over [heatmap | colour bar]; the title is centred over both.
    plot_->plotLayout()->clear();
    plot_->plotLayout()->setAutoMargins(QCP::msNone);
    plot_->plotLayout()->setRowSpacing(2);
    title_ = new QCPTextElement(plot_, QString(), withPointSize(base, 12, true));
    plot_->plotLayout()->addElement(0, 0, title_);
    auto* body = new QCPLayoutGrid;
    plot_->plotLayout()->addElement(1, 0, body);
    body->setColumnSpacing(10);
    rect_ = new QCPAxisRect(plot_);
    body->addElement(0, 0, rect_);
    scale_ = new QCPColorScale(plot_);
    body->addElement(0, 1, scale_);
    auto* group = new QCPMarginGroup(plot_);
    rect_->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    scale_->setMarginGroup(QCP::msTop | QCP::msBottom, group);

    QCPAxis* x = rect_->axis(QCPAxis::atBottom);
    QCPAxis* y = rect_->axis(QCPAxis::atLeft);
    styleAxis(x, base, tr("key position"));
    styleAxis(y, base, tr("query position"));
    y->setRangeReversed(true); // query 0 at the top, as in a matrix
    // Frame the cells with a thin box.
    for (auto type : {QCPAxis::atTop, QCPAxis::atRight}) {
        rect_->axis(type)->setVisible(true);
        rect_->axis(type)->setTicks(false);
        rect_->axis(type)->setTickLabels(false);
        rect_->axis(type)->setBasePen(QPen(Qt::black, 0));
    }
    // Axis lines go on a layer above the cells, otherwise the colour map hides the frame.
    plot_->addLayer(QStringLiteral("frame"), plot_->layer(QStringLiteral("main")), QCustomPlot::limAbove);
    for (auto type : {QCPAxis::atBottom, QCPAxis::atLeft, QCPAxis::atTop, QCPAxis::atRight})
        rect_->axis(type)->setLayer(QStringLiteral("frame"));
    connect(x, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), rect_->axis(QCPAxis::atTop),
            qOverload<const QCPRange&>(&QCPAxis::setRange));
    connect(y, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), rect_->axis(QCPAxis::atRight),
            qOverload<const QCPRange&>(&QCPAxis::setRange));
    xTicker_ = setTokenAxis(x, {});
    yTicker_ = setTokenAxis(y, {});

    scale_->setType(QCPAxis::atRight);
    scale_->setBarWidth(14);
    scale_->setDataRange(QCPRange(0, 1));
    scale_->setGradient(viridisGradient());
    scale_->setLabel(tr("attention weight"));
    styleAxis(scale_->axis(), base, tr("attention weight"));
    scale_->axis()->setTickLengthOut(3);
    scale_->axis()->setSubTicks(false);
    scale_->axis()->ticker()->setTickCount(5);

    map_ = new QCPColorMap(x, y);
    map_->setColorScale(scale_);
    map_->setGradient(viridisGradient());
    map_->setDataRange(QCPRange(0, 1)); // fixed: weights are probabilities, compare across heads
    map_->setInterpolate(false);        // crisp cells
    map_->setTightBoundary(false);

    plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    rect_->setRangeDrag(Qt::Horizontal | Qt::Vertical);
    rect_->setRangeZoom(Qt::Horizontal | Qt::Vertical);
    plot_->setMouseTracking(true);
    connect(plot_, &QCustomPlot::mouseMove, this, &AttentionHeatmap::onMouseMove);
    connect(plot_, &QCustomPlot::mouseDoubleClick, this, [this] { resetView(); });
    auto* reset = new QAction(tr("Reset view"), plot_);
    connect(reset, &QAction::triggered, this, &AttentionHeatmap::resetView);
    plot_->addAction(reset);
    plot_->setContextMenuPolicy(Qt::ActionsContextMenu);
    plot_->installEventFilter(this);
    setMinimumSize(240, 200);
}

QCustomPlot* AttentionHeatmap::plot() { return plot_; }

void AttentionHeatmap::setData(const AttentionHeatmapData& data) {
    if (data.pattern.rows() != data.pattern.cols())
        throw InputError(tr("attention pattern must be square [query_pos, key_pos], got %1×%2")
                             .arg(data.pattern.rows()).arg(data.pattern.cols()));
    if (!data.tokens.isEmpty() && data.tokens.size() != data.pattern.rows())
        throw InputError(tr("%1 token labels for an attention pattern over %2 positions")
                             .arg(data.tokens.size()).arg(data.pattern.rows()));
    pattern_ = data.pattern;
    causal_ = data.causal;
    tokens_ = data.tokens;
    if (tokens_.isEmpty())
        for (int i = 0; i < pattern_.rows(); ++i) tokens_ << QString::number(i);
    xTicker_->setTokens(tokens_);
    yTicker_->setTokens(tokens_);
    titleText_ = data.title;
    title_->setText(data.title);
    title_->setVisible(!data.title.isEmpty());
    fillColorMap();
    resetView();
}

void AttentionHeatmap::setCellOversampling(int k) {
    k = std::clamp(k, 1, 64);
    if (k == oversampling_) return;
    oversampling_ = k;
    fillColorMap();
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionHeatmap::fillColorMap() {
    const int n = int(pattern_.rows());
    const int k = oversampling_;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    // Cell centres at 0..n-1; with k samples per cell the sample centres sit at i + (j+0.5)/k - 0.5.
    const double edge = 0.5 - 0.5 / k;
    map_->data()->setSize(n * k, n * k);
    map_->data()->setRange(QCPRange(-edge, n - 1 + edge), QCPRange(-edge, n - 1 + edge));
    for (int q = 0; q < n; ++q)
        for (int key = 0; key < n; ++key) {
            const bool masked = (causal_ && key > q) || std::isnan(pattern_(q, key));
            const double z = masked ? nan : double(pattern_(q, key));
            for (int a = 0; a < k; ++a)
                for (int b = 0; b < k; ++b) map_->data()->setCell(key * k + b, q * k + a, z);
        }
}

void AttentionHeatmap::resetView() {
    const int n = std::max(1, positions());
    rect_->axis(QCPAxis::atBottom)->setRange(-0.5, n - 0.5);
    rect_->axis(QCPAxis::atLeft)->setRange(-0.5, n - 0.5);
    fitSquareCells();
    plot_->replot();
}

void AttentionHeatmap::fitSquareCells() {
    auto* plot = static_cast<LayoutablePlot*>(plot_);
    const int pad = 8;
    QMargins m(pad, pad, pad, pad);
    plot->plotLayout()->setMargins(m);
    for (int iter = 0; iter < 4; ++iter) {
        plot->layoutNow();
        const QRect r = rect_->rect();
        const double nx = rect_->axis(QCPAxis::atBottom)->range().size();
        const double ny = rect_->axis(QCPAxis::atLeft)->range().size();
        if (r.width() <= 0 || r.height() <= 0 || nx <= 0 || ny <= 0) return;
        const double cell = std::min(r.width() / nx, r.height() / ny);
        const int extraW = r.width() - int(std::lround(cell * nx));
        const int extraH = r.height() - int(std::lround(cell * ny));
        if (std::abs(extraW) <= 1 && std::abs(extraH) <= 1) return;
        m.setLeft(std::max(pad, m.left() + extraW / 2));
        m.setRight(std::max(pad, m.right() + extraW - extraW / 2));
        m.setTop(std::max(pad, m.top() + extraH / 2));
        m.setBottom(std::max(pad, m.bottom() + extraH - extraH / 2));
        plot->plotLayout()->setMargins(m);
    }
    plot->layoutNow();
}

QString AttentionHeatmap::describeCell(int query, int key) const {
    const int n = positions();
    if (query < 0 || key < 0 || query >= n || key >= n) return {};
    const bool masked = (causal_ && key > query) || std::isnan(pattern_(query, key));
    const QString head = tr("query %1 %2 → key %3 %4").arg(query).arg(tokens_[query]).arg(key).arg(tokens_[key]);
    return masked ? head + tr(": masked") : head + QStringLiteral(": %1").arg(double(pattern_(query, key)), 0, 'f', 3);
}

QPointF AttentionHeatmap::cellCentre(int query, int key) const {
    return {rect_->axis(QCPAxis::atBottom)->coordToPixel(key), rect_->axis(QCPAxis::atLeft)->coordToPixel(query)};
}

QString AttentionHeatmap::tooltipAt(const QPoint& plotPos) const {
    if (!rect_->rect().contains(plotPos)) return {};
    const int key = int(std::lround(rect_->axis(QCPAxis::atBottom)->pixelToCoord(plotPos.x())));
    const int query = int(std::lround(rect_->axis(QCPAxis::atLeft)->pixelToCoord(plotPos.y())));
    return describeCell(query, key);
}

void AttentionHeatmap::onMouseMove(QMouseEvent* event) {
    if (event->buttons() != Qt::NoButton) return; // dragging
    const QString text = tooltipAt(event->pos());
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
}

bool AttentionHeatmap::eventFilter(QObject* watched, QEvent* event) {
    // Refit after QCustomPlot has taken the new size (its resizeEvent runs after this filter).
    if (watched == plot_ && event->type() == QEvent::Resize && !fitQueued_) {
        fitQueued_ = true;
        QMetaObject::invokeMethod(this, [this] {
            fitQueued_ = false;
            fitSquareCells();
            plot_->replot();
        }, Qt::QueuedConnection);
    }
    return QWidget::eventFilter(watched, event);
}

} // namespace attnscope
