#pragma once
// A QCustomPlot of points that can be hovered and clicked: the base of the scatters (the patching estimate, the
// head metrics). It keeps each point's (x, y) and finds the point under the mouse; a subclass draws the points,
// names them (describePoint, the hover text) and says what a click does (pointClickedAt). Export and Copy through
// the shared figure menu (ChartFigure).

#include <qcustomplot.h>

#include <vector>

namespace attnscope {

class ChartFigure;

class PointScatter : public QCustomPlot {
    Q_OBJECT
public:
    /// `figureName`: the export's file name stem; `emptyText`: what the empty plot says.
    PointScatter(const QString& figureName, const QString& emptyText, QWidget* parent = nullptr);

    int pointCount() const { return int(x_.size()); }
    /// The pixel point i is drawn at.
    QPointF pointPixel(int point) const;
    /// The point within 8 pixels of `pixel` nearest to it, or −1.
    int pointAt(const QPointF& pixel) const;
    /// The hover text of point i.
    virtual QString describePoint(int point) const = 0;
    /// What a left click at `pixel` does: pointClickedAt for the point there, if any.
    void clickAt(const QPointF& pixel);
    ChartFigure* figure() const { return figure_; }

protected:
    /// Point i was clicked.
    virtual void pointClickedAt(int point) = 0;

    ChartFigure* figure_;
    std::vector<double> x_, y_; ///< the points' coordinates
};

} // namespace attnscope
