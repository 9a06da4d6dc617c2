#pragma once
// Attribution patching against activation patching, cell by cell: a scatter of the estimate (y) against the
// actual patched metric (x) for every cell both sweeps have, the diagonal y = x where a perfect linear estimate
// would sit, and the Pearson correlation in the title. Hover names a point's cell (layer, head, position) and
// both values; a click selects it (pointClicked). Export and Copy through the shared figure menu (ChartFigure).

#include "model/analysis/circuits/activation_patching.h"
#include "views/figures/point_scatter.h"

#include <span>

namespace attnscope {

/// The Pearson correlation of x and y (same length) over the pairs where both are finite; NaN with fewer than
/// two such pairs or when either side is constant.
double pearsonCorrelation(std::span<const double> x, std::span<const double> y);

class EstimateScatter : public PointScatter {
    Q_OBJECT
public:
    explicit EstimateScatter(QWidget* parent = nullptr);

    /// Plots every cell done in both sweeps (same options, so the same cells in the same order): the actual
    /// value (activation patching) on x, the estimate (attribution patching, AtP*) on y; `normalised` picks
    /// the normalised value or the raw metric. `positions` labels the prompt's positions.
    void setSweeps(const PatchingSweep& actual, const PatchingSweep& estimate, bool normalised, const QStringList& positions);
    /// Back to the empty state.
    void clear();

    /// The Pearson correlation shown in the title (NaN before two points).
    double correlation() const { return correlation_; }
    /// The title as drawn: "AtP* estimate vs activation patching: Pearson r = 0.912 (8 cells)".
    QString titleText() const;
    /// The point's cell index in the sweeps.
    int pointCell(int point) const { return cells_[size_t(point)]; }
    double pointActual(int point) const { return x_[size_t(point)]; }
    double pointEstimate(int point) const { return y_[size_t(point)]; }
    /// "L1 H2, position 3 ␣Mary: actual 0.81, estimate 0.74".
    QString describePoint(int point) const override;

signals:
    /// A point was clicked: its index and describePoint's text.
    void pointClicked(int point, const QString& text);

protected:
    void pointClickedAt(int point) override { emit pointClicked(point, describePoint(point)); } // a click selects it

private:
    QString cellName(const PatchingCell& cell) const;

    QCPTextElement* title_;
    QCPGraph* diagonal_;
    QCPGraph* points_;
    std::vector<int> cells_; ///< x_: the actual values, y_: the estimates
    std::vector<PatchingCell> cellInfo_;
    QStringList positions_;
    double correlation_ = std::numeric_limits<double>::quiet_NaN();
};

} // namespace attnscope
