#include "views/figures/matrix_heatmap.h"

#include "model/core/errors.h"
#include "views/figures/palettes.h"
#include "views/figures/plot_render.h"
#include "views/figures/token_axis.h"

#include <qcustomplot.h>

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

MatrixHeatmap::MatrixHeatmap(QWidget* parent) : HeatmapView(QString(), QString(), QString(), parent) {
    xTicker_->setMaxLabelChars(12);
    yTicker_->setMaxLabelChars(12);
    setImmediateReplot(true);
    setEmptyText(tr("Nothing to show yet."));
    setMinimumSize(240, 160);
    dataChanged();
}

void MatrixHeatmap::setFigure(const MatrixFigure& figure) {
    const int rows = int(figure.values.rows()), cols = int(figure.values.cols());
    if (!figure.rowLabels.isEmpty() && figure.rowLabels.size() != rows)
        throw InputError(tr("%1 row labels for a matrix with %2 rows").arg(figure.rowLabels.size()).arg(rows));
    if (!figure.colLabels.isEmpty() && figure.colLabels.size() != cols)
        throw InputError(tr("%1 column labels for a matrix with %2 columns").arg(figure.colLabels.size()).arg(cols));
    figure_ = figure;
    setTitle(figure.title);
    QCPAxis* x = parts_.rect->axis(QCPAxis::atBottom);
    QCPAxis* y = parts_.rect->axis(QCPAxis::atLeft);
    x->setLabel(figure.colTitle);
    y->setLabel(figure.rowTitle);
    xTicker_->setTokens(axisLabels(figure.colLabels, cols));
    yTicker_->setTokens(axisLabels(figure.rowLabels, rows));
    // A few short labels (indices, "H3", "MLP") read better horizontally (the thinning spaces labels by one line height).
    bool shortLabels = cols <= 20;
    for (const QString& l : figure.colLabels) shortLabels = shortLabels && l.size() <= 3;
    x->setTickLabelRotation(shortLabels ? 0 : -90);

    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            if (const double v = figure.values(r, c); std::isfinite(v)) {
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
    switch (figure.scale) {
    case MatrixFigure::Scale::Probability:
        range_ = QCPRange(0, 1);
        break;
    case MatrixFigure::Scale::Signed:
        range_ = symmetricRange(figure.signedLimit > 0 ? figure.signedLimit
                                : std::isfinite(lo)     ? std::max(std::abs(lo), std::abs(hi))
                                                        : 0.0);
        break;
    case MatrixFigure::Scale::Sequential:
        range_ = std::isfinite(lo) ? QCPRange(lo, hi > lo ? hi : lo + 1e-9) : QCPRange(0, 1);
        break;
    }
    parts_.map->setDataRange(range_);
    parts_.scale->setDataRange(range_);
    parts_.scale->axis()->setLabel(figure.valueTitle);
    dataChanged();
}

QCPColorGradient MatrixHeatmap::gradient(bool dark) const {
    return figure_.scale == MatrixFigure::Scale::Signed ? divergingGradient(dark) : sequentialGradient(dark);
}

QCPRange MatrixHeatmap::colorRange() const { return range_; }

bool MatrixHeatmap::squareCells() const {
    const double rows = std::max<double>(1, figure_.values.rows()), cols = std::max<double>(1, figure_.values.cols());
    return std::max(rows / cols, cols / rows) <= kMaxSquareAspect;
}

QString MatrixHeatmap::describeCell(int row, int col) const {
    const Matrix& v = figure_.values;
    if (row < 0 || col < 0 || row >= v.rows() || col >= v.cols()) return {};
    const QString where = cellAxisText(figure_.rowLabels, figure_.rowTitle, row) + QStringLiteral(", ") +
                          cellAxisText(figure_.colLabels, figure_.colTitle, col);
    const double x = v(row, col);
    return std::isnan(x) ? where + tr(": masked") : where + QStringLiteral(": ") + QString::number(x, 'g', 5);
}

ValueTable MatrixHeatmap::figureValues() const {
    const QString corner = figure_.rowTitle.isEmpty() && figure_.colTitle.isEmpty()
                               ? QString()
                               : QStringLiteral("%1 \\ %2").arg(figure_.rowTitle, figure_.colTitle);
    return valueTableOf(figure_.values, figure_.rowLabels, figure_.colLabels, corner);
}

// exportMatrixHeatmap and exportMatrixFigure: figure_export.cpp, next to the other heatmap exports

bool exportPlot(QCustomPlot* plot, const QString& filePath, ImageFormat format, QSize size, double scale,
                QString* error) {
    if (!plot) return failWith(error, filePath, QObject::tr("no plot to export"));
    QString title;
    for (int i = 0; i < plot->plotLayout()->elementCount() && title.isEmpty(); ++i)
        if (auto* text = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(i))) title = text->text();
    const QRect oldViewport = plot->viewport();
    const bool ok = renderFigure(filePath, format, size, scale, title, QStringLiteral("Plot exported by AttnScope"),
                                 [&](QCPPainter& painter) { plot->toPainter(&painter, size.width(), size.height()); },
                                 error);
    plot->setViewport(oldViewport);
    plot->replot(QCustomPlot::rpQueuedReplot);
    return ok;
}

} // namespace attnscope
