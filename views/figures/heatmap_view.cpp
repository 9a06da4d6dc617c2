#include "views/figures/heatmap_view.h"

#include "views/figures/appearance.h"
#include "views/figures/empty_state.h"
#include "views/figures/figure_actions.h"
#include "views/figures/plot_theme.h"
#include "views/figures/token_axis.h"

#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>

namespace attnscope {
namespace {

/// Cells per side of the embedded image for vector output: at least ~1200 samples across.
int vectorOversampling(int cells) { return cells <= 0 ? 1 : std::clamp(1200 / cells, 1, 64); }

} // namespace

HeatmapView::HeatmapView(const QString& colLabel, const QString& rowLabel, const QString& valueLabel, QWidget* parent)
    : QWidget(parent), plot_(new LayoutablePlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    parts_ = buildHeatmapPlot(plot_, resolvedFont(font()), colLabel, rowLabel, valueLabel);
    xTicker_ = setTokenAxis(parts_.rect->axis(QCPAxis::atBottom), {});
    yTicker_ = setTokenAxis(parts_.rect->axis(QCPAxis::atLeft), {});
    applyPlotColors(plot_, plotColors(Appearance::instance().isDark())); // the colour map: dataChanged()

    // wheel zoom and drag pan on both axes; double-click or the menu's Reset Zoom shows everything
    plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    parts_.rect->setRangeDrag(Qt::Horizontal | Qt::Vertical);
    parts_.rect->setRangeZoom(Qt::Horizontal | Qt::Vertical);
    plot_->setMouseTracking(true);
    connect(plot_, &QCustomPlot::mouseDoubleClick, this, [this] { resetView(); });
    connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
        if (event->buttons() != Qt::NoButton) return; // dragging
        const QString text = tooltipAt(event->pos());
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
    });
    connect(plot_, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
        if (event->button() != Qt::LeftButton) return;
        const QPoint cell = heatmapCellAt(parts_.rect, event->pos());
        if (cell.x() >= 0 && cell.x() < dataRows() && cell.y() >= 0 && cell.y() < dataCols())
            emit cellClicked(cell.x(), cell.y());
    });
    actions_ = new FigureActions(plot_, this, QStringLiteral("heatmap"));
    empty_ = new EmptyState(this);
    empty_->setEmpty(true);
    connect(&Appearance::instance(), &Appearance::changed, this, [this] {
        applyTheme(Appearance::instance().isDark());
        replot();
    });
    plot_->installEventFilter(this);
}

HeatmapView::~HeatmapView() = default;

QCustomPlot* HeatmapView::plot() { return plot_; }

void HeatmapView::setEmptyText(const QString& text) { empty_->setText(text); }
QString HeatmapView::emptyText() const { return empty_->text(); }
bool HeatmapView::isShowingEmptyState() const { return empty_->isEmpty(); }

void HeatmapView::applyTheme(bool dark) {
    applyPlotColors(plot_, plotColors(dark));
    const QCPColorGradient g = gradient(dark);
    parts_.map->setGradient(g);
    parts_.scale->setGradient(g);
}

void HeatmapView::dataChanged() {
    const bool have = hasFigureData();
    empty_->setEmpty(!have);
    parts_.scale->setVisible(have); // never a colour scale for no data
    applyTheme(Appearance::instance().isDark());
    fillCells();
    resetView();
}

void HeatmapView::fillCells() {
    fillHeatmapCells(parts_.map, dataRows(), dataCols(), oversampling_, [this](int r, int c) { return cellValue(r, c); });
}

void HeatmapView::setCellOversampling(int k) {
    k = std::clamp(k, 1, 64);
    if (k == oversampling_) return;
    oversampling_ = k;
    fillCells();
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapView::setTitle(const QString& text) {
    title_ = text;
    parts_.title->setText(text);
    parts_.title->setVisible(!text.isEmpty());
}

void HeatmapView::fitCells() {
    parts_.title->setText(wrapToWidth(title_, parts_.title->font(), plot_->viewport().width() - 2 * kHeatmapPad));
    fitHeatmapCells(plot_, parts_.rect, wantsSquareCells());
}

void HeatmapView::replot() { plot_->replot(immediateReplot_ ? QCustomPlot::rpRefreshHint : QCustomPlot::rpQueuedReplot); }

void HeatmapView::resetView() {
    parts_.rect->axis(QCPAxis::atBottom)->setRange(-0.5, std::max(1, dataCols()) - 0.5);
    parts_.rect->axis(QCPAxis::atLeft)->setRange(-0.5, std::max(1, dataRows()) - 0.5);
    fitCells();
    replot();
}

QString HeatmapView::tooltipAt(const QPoint& plotPos) const {
    const QPoint cell = heatmapCellAt(parts_.rect, plotPos);
    return describeCell(cell.x(), cell.y());
}

QPointF HeatmapView::cellCentre(int row, int col) const {
    return {parts_.rect->axis(QCPAxis::atBottom)->coordToPixel(col), parts_.rect->axis(QCPAxis::atLeft)->coordToPixel(row)};
}

QSize HeatmapView::figureSize() const { return size().isEmpty() ? QSize(800, 600) : size(); }

void HeatmapView::paintFigure(QCPPainter& painter, QSize size, bool vector) {
    const QRect oldViewport = plot_->viewport();
    const int oldOversampling = oversampling_;
    plot_->setViewport(QRect(QPoint(0, 0), size));
    fitCells();
    if (vector) setCellOversampling(vectorOversampling(std::max(dataRows(), dataCols())));
    applyTheme(false); // files and copied images are drawn light, like print
    plot_->toPainter(&painter, size.width(), size.height());
    applyTheme(Appearance::instance().isDark());
    setCellOversampling(oldOversampling);
    plot_->setViewport(oldViewport);
    fitCells();
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool HeatmapView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == plot_) {
        // Refit after QCustomPlot has taken the new size (its resizeEvent runs after this filter).
        if (event->type() == QEvent::Resize && !fitQueued_) {
            fitQueued_ = true;
            QMetaObject::invokeMethod(this, [this] {
                fitQueued_ = false;
                fitCells();
                plot_->replot();
            }, Qt::QueuedConnection);
        }
        if (event->type() == QEvent::Paint) syncDevicePixelRatio(plot_);
    }
    return QWidget::eventFilter(watched, event);
}

} // namespace attnscope
