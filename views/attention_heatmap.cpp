#include "views/attention_heatmap.h"

#include "model/core/errors.h"
#include "views/heatmap_plot.h"
#include "views/palettes.h"
#include "views/token_axis.h"

#include <qcustomplot.h>

#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

namespace attnscope {

AttentionHeatmap::AttentionHeatmap(QWidget* parent) : QWidget(parent), plot_(new LayoutablePlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    const QFont base = resolvedFont(font());
    const HeatmapPlotParts parts = buildHeatmapPlot(plot_, base, tr("key position"), tr("query position"),
                                                    tr("attention weight"));
    title_ = parts.title;
    rect_ = parts.rect;
    scale_ = parts.scale;
    map_ = parts.map;
    QCPAxis* x = rect_->axis(QCPAxis::atBottom);
    QCPAxis* y = rect_->axis(QCPAxis::atLeft);
    xTicker_ = setTokenAxis(x, {});
    yTicker_ = setTokenAxis(y, {});

    scale_->setDataRange(QCPRange(0, 1));
    scale_->setGradient(viridisGradient());
    map_->setGradient(viridisGradient());
    map_->setDataRange(QCPRange(0, 1)); // fixed: weights are probabilities, compare across heads

    installHeatmapInteractions(plot_, rect_, [this] { resetView(); });
    connect(plot_, &QCustomPlot::mouseMove, this, &AttentionHeatmap::onMouseMove);
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
    const double nan = std::numeric_limits<double>::quiet_NaN();
    fillHeatmapCells(map_, n, n, oversampling_, [&](int q, int key) {
        const bool masked = (causal_ && key > q) || std::isnan(pattern_(q, key));
        return masked ? nan : double(pattern_(q, key));
    });
}

void AttentionHeatmap::resetView() {
    const int n = std::max(1, positions());
    rect_->axis(QCPAxis::atBottom)->setRange(-0.5, n - 0.5);
    rect_->axis(QCPAxis::atLeft)->setRange(-0.5, n - 0.5);
    fitSquareCells();
    // One render per event-loop pass: setData + selection changes don't draw twice, and nothing is
    // drawn for a hidden heatmap that is only exported (toPixmap/toPainter render themselves).
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionHeatmap::fitSquareCells() { fitHeatmapCells(static_cast<LayoutablePlot*>(plot_), rect_, true); }

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
    const QPoint cell = heatmapCellAt(rect_, plotPos);
    return describeCell(cell.x(), cell.y());
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
