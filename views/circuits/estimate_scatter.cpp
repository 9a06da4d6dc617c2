#include "views/circuits/estimate_scatter.h"

#include "views/figures/chart_figure.h"

#include <cmath>

namespace attnscope {

double pearsonCorrelation(std::span<const double> x, std::span<const double> y) {
    double n = 0, mx = 0, my = 0;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
        if (std::isfinite(x[i]) && std::isfinite(y[i])) {
            n += 1;
            mx += x[i];
            my += y[i];
        }
    if (n < 2) return std::numeric_limits<double>::quiet_NaN();
    mx /= n;
    my /= n;
    double sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
        if (std::isfinite(x[i]) && std::isfinite(y[i])) {
            sxy += (x[i] - mx) * (y[i] - my);
            sxx += (x[i] - mx) * (x[i] - mx);
            syy += (y[i] - my) * (y[i] - my);
        }
    if (sxx <= 0 || syy <= 0) return std::numeric_limits<double>::quiet_NaN();
    return sxy / std::sqrt(sxx * syy);
}

EstimateScatter::EstimateScatter(QWidget* parent)
    : PointScatter(QStringLiteral("patching_estimate_scatter"),
                   tr("Choose attribution patching or AtP* with “compare”, then Run sweep: each cell's estimate "
                      "against its activation-patching value."),
                   parent) {
    setMinimumHeight(240);
    plotLayout()->insertRow(0);
    title_ = new QCPTextElement(this, QString(), QFont(font().family(), 10, QFont::Bold));
    plotLayout()->addElement(0, 0, title_);
    diagonal_ = addGraph();
    diagonal_->setName(tr("y = x"));
    diagonal_->setPen(QPen(QColor(128, 128, 128), 1, Qt::DashLine));
    points_ = addGraph();
    points_->setName(tr("cells"));
    points_->setLineStyle(QCPGraph::lsNone);
    points_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(31, 119, 180), QColor(31, 119, 180), 6));
    xAxis->setLabel(tr("actual: activation patching"));
    yAxis->setLabel(tr("estimate"));
    figure_->setValues([this] {
        ValueTable t;
        t.colLabels = {tr("cell"), tr("actual"), tr("estimate")};
        for (int i = 0; i < pointCount(); ++i)
            t.cells.push_back({cellName(cellInfo_[size_t(i)]), exactNumber(x_[size_t(i)]), exactNumber(y_[size_t(i)])});
        return t;
    });
}

void EstimateScatter::clear() {
    cells_.clear();
    x_.clear();
    y_.clear();
    cellInfo_.clear();
    correlation_ = std::numeric_limits<double>::quiet_NaN();
    points_->data()->clear();
    diagonal_->data()->clear();
    title_->setText({});
    figure_->setHasData(false);
    replot(QCustomPlot::rpQueuedReplot);
}

void EstimateScatter::setSweeps(const PatchingSweep& actual, const PatchingSweep& estimate, bool normalised,
                                const QStringList& positions) {
    clear();
    positions_ = positions;
    const size_t n = std::min(actual.cells.size(), estimate.cells.size());
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (size_t i = 0; i < n; ++i) {
        const PatchingCell& a = actual.cells[i];
        const PatchingCell& e = estimate.cells[i];
        const double x = normalised ? a.normalised : a.metric, y = normalised ? e.normalised : e.metric;
        if (!a.done || !e.done || !std::isfinite(x) || !std::isfinite(y)) continue;
        cells_.push_back(int(i));
        cellInfo_.push_back(a);
        x_.push_back(x);
        y_.push_back(y);
        lo = std::min({lo, x, y});
        hi = std::max({hi, x, y});
    }
    if (cells_.empty()) return;
    correlation_ = pearsonCorrelation(x_, y_);
    points_->setData(QVector<double>(x_.begin(), x_.end()), QVector<double>(y_.begin(), y_.end()), true);
    const double pad = std::max(1e-9, 0.05 * (hi - lo));
    diagonal_->setData({lo - pad, hi + pad}, {lo - pad, hi + pad}, true);
    const QString method = estimate.method == PatchingMethod::AtpStar ? tr("AtP*") : tr("attribution patching");
    title_->setText(tr("%1 estimate vs activation patching: Pearson r = %2 (%3 cells)")
                        .arg(method, std::isnan(correlation_) ? tr("undefined") : QString::number(correlation_, 'f', 3))
                        .arg(cells_.size()));
    xAxis->setLabel(normalised ? tr("actual: activation patching (normalised)") : tr("actual: activation patching (metric)"));
    yAxis->setLabel(normalised ? tr("estimate (normalised)") : tr("estimate (metric)"));
    figure_->setHasData(true);
    figure_->setHomeRanges(QCPRange(lo - pad, hi + pad), QCPRange(lo - pad, hi + pad));
    figure_->restyle();
}

QString EstimateScatter::titleText() const { return title_->text(); }

QString EstimateScatter::cellName(const PatchingCell& c) const {
    QString name = c.head >= 0 ? tr("L%1 H%2").arg(c.layer).arg(c.head) : tr("L%1").arg(c.layer);
    if (c.position < 0) return name + tr(", every position");
    return name + tr(", position %1 %2").arg(c.position).arg(positions_.value(c.position));
}

QString EstimateScatter::describePoint(int point) const {
    return tr("%1: actual %2, estimate %3")
        .arg(cellName(cellInfo_[size_t(point)]))
        .arg(x_[size_t(point)], 0, 'g', 4)
        .arg(y_[size_t(point)], 0, 'g', 4);
}

} // namespace attnscope
