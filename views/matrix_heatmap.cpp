#include "views/matrix_heatmap.h"

#include "model/core/errors.h"
#include "views/heatmap_plot.h"
#include "views/palettes.h"
#include "views/plot_render.h"
#include "views/token_axis.h"

#include <qcustomplot.h>

#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

namespace attnscope {
namespace {

constexpr double kMaxSquareAspect = 8.0; // beyond this cols/rows ratio cells fill the area

/// Labels for an axis: the given ones, or the indices 0..n-1.
QStringList axisLabels(const QStringList& given, int n) {
    if (!given.isEmpty()) return given;
    QStringList out;
    out.reserve(n);
    for (int i = 0; i < n; ++i) out << QString::number(i);
    return out;
}

/// "3 ␣cat" when labelled, "d_head 3" (or "3") when indexed.
QString cellAxisText(const QStringList& labels, const QString& title, int i) {
    if (!labels.isEmpty()) return QStringLiteral("%1 %2").arg(i).arg(labels[i]);
    return title.isEmpty() ? QString::number(i) : QStringLiteral("%1 %2").arg(title).arg(i);
}

} // namespace

struct MatrixHeatmap::Impl {
    LayoutablePlot* plot = nullptr;
    HeatmapPlotParts parts;
    QSharedPointer<TokenAxisTicker> xTicker, yTicker;
    QCPRange range{0, 1};
    int oversampling = 1;
    bool fitQueued = false;
};

MatrixHeatmap::MatrixHeatmap(QWidget* parent) : QWidget(parent), d_(new Impl) {
    d_->plot = new LayoutablePlot(this);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(d_->plot);
    d_->parts = buildHeatmapPlot(d_->plot, resolvedFont(font()), QString(), QString(), QString());
    d_->xTicker = setTokenAxis(d_->parts.rect->axis(QCPAxis::atBottom), {});
    d_->yTicker = setTokenAxis(d_->parts.rect->axis(QCPAxis::atLeft), {});
    d_->xTicker->setMaxLabelChars(12);
    d_->yTicker->setMaxLabelChars(12);
    installHeatmapInteractions(d_->plot, d_->parts.rect, [this] { resetView(); });
    connect(d_->plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
        if (event->buttons() != Qt::NoButton) return; // dragging
        const QString text = tooltipAt(event->pos());
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(event->globalPosition().toPoint(), text, d_->plot);
    });
    connect(d_->plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
        const QPoint cell = heatmapCellAt(d_->parts.rect, event->pos());
        if (cell.x() >= 0 && cell.x() < figure_.values.rows() && cell.y() >= 0 && cell.y() < figure_.values.cols())
            emit cellClicked(cell.x(), cell.y());
    });
    setMinimumSize(240, 160);
}

MatrixHeatmap::~MatrixHeatmap() { delete d_; }

QCustomPlot* MatrixHeatmap::plot() { return d_->plot; }

void MatrixHeatmap::setFigure(const MatrixFigure& figure) {
    const int rows = int(figure.values.rows()), cols = int(figure.values.cols());
    if (!figure.rowLabels.isEmpty() && figure.rowLabels.size() != rows)
        throw InputError(tr("%1 row labels for a matrix with %2 rows").arg(figure.rowLabels.size()).arg(rows));
    if (!figure.colLabels.isEmpty() && figure.colLabels.size() != cols)
        throw InputError(tr("%1 column labels for a matrix with %2 columns").arg(figure.colLabels.size()).arg(cols));
    figure_ = figure;
    const HeatmapPlotParts& p = d_->parts;
    p.title->setText(figure.title);
    p.title->setVisible(!figure.title.isEmpty());
    QCPAxis* x = p.rect->axis(QCPAxis::atBottom);
    QCPAxis* y = p.rect->axis(QCPAxis::atLeft);
    x->setLabel(figure.colTitle);
    y->setLabel(figure.rowTitle);
    d_->xTicker->setTokens(axisLabels(figure.colLabels, cols));
    d_->yTicker->setTokens(axisLabels(figure.rowLabels, rows));
    // Short index labels read better horizontally; they still fit the thinning's one-line spacing.
    x->setTickLabelRotation(figure.colLabels.isEmpty() && cols <= 100 ? 0 : -90);

    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            if (const double v = figure.values(r, c); std::isfinite(v)) {
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
    switch (figure.scale) {
    case MatrixFigure::Scale::Probability:
        d_->range = QCPRange(0, 1);
        break;
    case MatrixFigure::Scale::Signed:
        d_->range = symmetricRange(std::isfinite(lo) ? std::max(std::abs(lo), std::abs(hi)) : 0.0);
        break;
    case MatrixFigure::Scale::Sequential:
        d_->range = std::isfinite(lo) ? QCPRange(lo, hi > lo ? hi : lo + 1e-9) : QCPRange(0, 1);
        break;
    }
    const QCPColorGradient gradient =
        figure.scale == MatrixFigure::Scale::Signed ? divergingGradient() : viridisGradient();
    p.map->setGradient(gradient);
    p.scale->setGradient(gradient);
    p.map->setDataRange(d_->range);
    p.scale->setDataRange(d_->range);
    p.scale->axis()->setLabel(figure.valueTitle);
    fillCells();
    resetView();
}

void MatrixHeatmap::fillCells() {
    const Matrix& v = figure_.values;
    fillHeatmapCells(d_->parts.map, int(v.rows()), int(v.cols()), d_->oversampling,
                     [&v](int r, int c) { return double(v(r, c)); });
}

QCPRange MatrixHeatmap::colorRange() const { return d_->range; }

bool MatrixHeatmap::squareCells() const {
    const double rows = std::max<double>(1, figure_.values.rows()), cols = std::max<double>(1, figure_.values.cols());
    return std::max(rows / cols, cols / rows) <= kMaxSquareAspect;
}

void MatrixHeatmap::setCellOversampling(int k) {
    k = std::clamp(k, 1, 64);
    if (k == d_->oversampling) return;
    d_->oversampling = k;
    fillCells();
    d_->plot->replot(QCustomPlot::rpQueuedReplot);
}

void MatrixHeatmap::fitCells() { fitHeatmapCells(d_->plot, d_->parts.rect, squareCells()); }

void MatrixHeatmap::resetView() {
    d_->parts.rect->axis(QCPAxis::atBottom)->setRange(-0.5, std::max<Eigen::Index>(1, figure_.values.cols()) - 0.5);
    d_->parts.rect->axis(QCPAxis::atLeft)->setRange(-0.5, std::max<Eigen::Index>(1, figure_.values.rows()) - 0.5);
    fitCells();
    d_->plot->replot();
}

QString MatrixHeatmap::describeCell(int row, int col) const {
    const Matrix& v = figure_.values;
    if (row < 0 || col < 0 || row >= v.rows() || col >= v.cols()) return {};
    const QString where = cellAxisText(figure_.rowLabels, figure_.rowTitle, row) + QStringLiteral(", ") +
                          cellAxisText(figure_.colLabels, figure_.colTitle, col);
    const double x = v(row, col);
    return std::isnan(x) ? where + tr(": masked") : where + QStringLiteral(": ") + QString::number(x, 'g', 5);
}

QPointF MatrixHeatmap::cellCentre(int row, int col) const {
    return {d_->parts.rect->axis(QCPAxis::atBottom)->coordToPixel(col),
            d_->parts.rect->axis(QCPAxis::atLeft)->coordToPixel(row)};
}

QString MatrixHeatmap::tooltipAt(const QPoint& plotPos) const {
    const QPoint cell = heatmapCellAt(d_->parts.rect, plotPos);
    return describeCell(cell.x(), cell.y());
}

void MatrixHeatmap::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // Refit after the plot has taken its new size (its own resize event comes after this one).
    if (d_->fitQueued) return;
    d_->fitQueued = true;
    QMetaObject::invokeMethod(this, [this] {
        d_->fitQueued = false;
        fitCells();
        d_->plot->replot();
    }, Qt::QueuedConnection);
}

bool exportMatrixHeatmap(MatrixHeatmap& view, const QString& filePath, ImageFormat format, QSize size,
                         double scale, QString* error) {
    if (!validateFigureArgs(filePath, size, scale, error)) return false;
    QCustomPlot* plot = view.plot();
    const QRect oldViewport = plot->viewport();
    plot->setViewport(QRect(QPoint(0, 0), size));
    view.fitCells();
    const Matrix& v = view.figure().values;
    if (format != ImageFormat::Png)
        view.setCellOversampling(std::clamp(1200 / int(std::max<Eigen::Index>(1, std::max(v.rows(), v.cols()))), 1, 64));
    const bool ok = renderPlot(plot, filePath, format, size, scale, view.figure().title,
                               QStringLiteral("Matrix exported by AttnScope"), error);
    view.setCellOversampling(1);
    plot->setViewport(oldViewport);
    view.fitCells();
    plot->replot(QCustomPlot::rpQueuedReplot);
    return ok;
}

bool exportMatrixFigure(const MatrixFigure& figure, const QString& filePath, ImageFormat format, QSize size,
                        double scale, QString* error) {
    MatrixHeatmap view; // never shown
    try {
        view.setFigure(figure);
    } catch (const InputError& e) {
        return failWith(error, filePath, e.message());
    }
    return exportMatrixHeatmap(view, filePath, format, size, scale, error);
}

bool exportPlot(QCustomPlot* plot, const QString& filePath, ImageFormat format, QSize size, double scale,
                QString* error) {
    if (!plot) return failWith(error, filePath, QObject::tr("no plot to export"));
    if (!validateFigureArgs(filePath, size, scale, error)) return false;
    QString title;
    for (int i = 0; i < plot->plotLayout()->elementCount() && title.isEmpty(); ++i)
        if (auto* text = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(i))) title = text->text();
    const QRect oldViewport = plot->viewport();
    const bool ok = renderPlot(plot, filePath, format, size, scale, title,
                               QStringLiteral("Plot exported by AttnScope"), error);
    plot->setViewport(oldViewport);
    plot->replot(QCustomPlot::rpQueuedReplot);
    return ok;
}

} // namespace attnscope
