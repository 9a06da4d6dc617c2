#include "views/figures/chart_figure.h"

#include "views/figures/appearance.h"
#include "views/figures/empty_state.h"
#include "views/figures/figure_actions.h"
#include "views/figures/plot_theme.h"

#include <QToolTip>

namespace attnscope {

ChartFigure::ChartFigure(QCustomPlot* plot, const QString& baseName, const QString& emptyText)
    : QObject(plot), plot_(plot), empty_(new EmptyState(plot, emptyText)), actions_(new FigureActions(plot, this, baseName)) {
    plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot->axisRect()->setRangeDrag(Qt::Horizontal | Qt::Vertical);
    plot->axisRect()->setRangeZoom(Qt::Horizontal | Qt::Vertical);
    plot->setMouseTracking(true);
    connect(plot, &QCustomPlot::mouseDoubleClick, this, [this] { resetZoom(); });
    connect(plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
        if (event->buttons() != Qt::NoButton || !tooltip_ || !hasData_) return;
        const QString text = tooltip_(event->pos());
        if (text.isEmpty()) QToolTip::hideText();
        else QToolTip::showText(event->globalPosition().toPoint(), text, plot_);
    });
    connect(&Appearance::instance(), &Appearance::changed, this, &ChartFigure::restyle);
    plot->installEventFilter(this);
    empty_->setEmpty(true);
    restyle();
}

void ChartFigure::setHomeRanges(const QCPRange& x, const QCPRange& y) {
    homeX_ = x;
    homeY_ = y;
    resetZoom();
}

void ChartFigure::resetZoom() {
    plot_->xAxis->setRange(homeX_);
    plot_->yAxis->setRange(homeY_);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ChartFigure::setHasData(bool on) {
    hasData_ = on;
    empty_->setEmpty(!on);
}

bool ChartFigure::isShowingEmptyState() const { return empty_->isEmpty(); }

void ChartFigure::setEmptyText(const QString& text) { empty_->setText(text); }

void ChartFigure::restyle() {
    applyPlotColors(plot_, plotColors(Appearance::instance().isDark()));
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString ChartFigure::figureTitle() const {
    for (QCPLayoutElement* e : plot_->plotLayout()->elements(false))
        if (auto* text = qobject_cast<QCPTextElement*>(e)) return text->text();
    return {};
}

QSize ChartFigure::figureSize() const { return plot_->size().isEmpty() ? QSize(1000, 500) : plot_->size(); }

void ChartFigure::paintFigure(QCPPainter& painter, QSize size, bool) {
    const QRect oldViewport = plot_->viewport();
    applyPlotColors(plot_, plotColors(false)); // files and copied images are drawn light, like print
    plot_->toPainter(&painter, size.width(), size.height());
    applyPlotColors(plot_, plotColors(Appearance::instance().isDark()));
    plot_->setViewport(oldViewport);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool ChartFigure::eventFilter(QObject* watched, QEvent* event) {
    if (watched == plot_ && event->type() == QEvent::Paint) syncDevicePixelRatio(plot_);
    return QObject::eventFilter(watched, event);
}

} // namespace attnscope
