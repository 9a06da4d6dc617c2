#pragma once
// Every head as a point by two of HeadVis's six head metrics (model/analysis/attention/head_metrics.h), coloured by
// layer, the selected head ringed. Hover names a head and its two values; a click on a point selects that head
// (headClicked). Export and Copy through the shared figure menu (ChartFigure).

#include "model/analysis/attention/head_metrics.h"
#include "views/figures/point_scatter.h"

namespace attnscope {

class HeadScatter : public PointScatter {
    Q_OBJECT
public:
    explicit HeadScatter(QWidget* parent = nullptr);

    /// Plots every head of `metrics` by metric x across and y up (heads whose two values are both finite).
    void setMetrics(const HeadMetrics& metrics, HeadMetric x, HeadMetric y);
    /// Back to the empty state.
    void clear();
    /// Rings head (layer, head); −1 clears the ring.
    void setSelectedHead(int layer, int head);

    /// The head (layer, head) of point i.
    std::pair<int, int> pointHead(int point) const { return heads_[size_t(point)]; }
    double pointX(int point) const { return x_[size_t(point)]; }
    double pointY(int point) const { return y_[size_t(point)]; }
    /// "L1H2: prev_token_score 0.12, induction_score 0.94".
    QString describePoint(int point) const override;

signals:
    void headClicked(int layer, int head);

protected:
    void pointClickedAt(int point) override { emit headClicked(heads_[size_t(point)].first, heads_[size_t(point)].second); }

private:
    QCPGraph* addRing(); ///< the graph of the selected head's ring

    std::vector<QCPGraph*> layerGraphs_;
    QCPGraph* ring_;
    std::vector<std::pair<int, int>> heads_; ///< of each point (x_, y_)
    int ringLayer_ = -1, ringHead_ = -1;
    HeadMetric xMetric_ = HeadMetric::PrevToken, yMetric_ = HeadMetric::Induction;
};

} // namespace attnscope
