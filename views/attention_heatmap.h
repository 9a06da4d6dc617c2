#pragma once
// One attention pattern as a heatmap: key positions across, query positions down (row 0 at the
// top), token labels on both axes, fixed 0–1 viridis colour scale with a colour bar, masked
// (future) cells in light grey, hover tooltip, mouse zoom/pan, double-click to reset.

#include "model/core/tensor.h"

#include <QStringList>
#include <QWidget>

class QCustomPlot;
class QCPAxisRect;
class QCPColorMap;
class QCPColorScale;
class QCPTextElement;

namespace attnscope {

class TokenAxisTicker;

/// One attention pattern to draw.
struct AttentionHeatmapData {
    /// [query_pos, key_pos], square; rows sum to 1. NaN entries are drawn as masked.
    Matrix pattern;
    /// Display strings of the tokens, one per position ("␣the", "↵"); empty = label by position.
    QStringList tokens;
    /// Figure title, e.g. "demo — layer 1, head 2".
    QString title;
    /// Draw cells with key_pos > query_pos as masked (autoregressive models), whatever their value.
    bool causal = true;
};

/// Heatmap widget around a QCustomPlot (QCPColorMap + QCPColorScale + title). Owns a copy of the
/// pattern it shows (for tooltips) and nothing else.
class AttentionHeatmap : public QWidget {
    Q_OBJECT
public:
    explicit AttentionHeatmap(QWidget* parent = nullptr);

    /// Shows `data`: lays the plot out now and draws it on the next event-loop pass (queued replot;
    /// toPixmap/exports render themselves). Throws InputError if the pattern is not square or
    /// tokens.size() differs from its size. An empty pattern clears the plot.
    void setData(const AttentionHeatmapData& data);
    /// The plot, for export and tests. Its layout is laid out by fitSquareCells().
    QCustomPlot* plot();
    /// Size S of the pattern shown (0 if none).
    int positions() const { return int(pattern_.rows()); }
    /// Title shown above the heatmap.
    QString title() const { return titleText_; }
    /// The pattern shown ([query_pos, key_pos]; empty if none).
    const Matrix& pattern() const { return pattern_; }

    /// Tooltip text of cell (query, key): "query 5 ␣sat → key 2 ␣cat: 0.734", or "… : masked".
    /// Empty when out of range.
    QString describeCell(int query, int key) const;
    /// describeCell() for a point in plot() coordinates; empty outside the cells.
    QString tooltipAt(const QPoint& plotPos) const;
    /// Centre of cell (query, key) in plot() pixel coordinates (after a layout).
    QPointF cellCentre(int query, int key) const;

    /// Each cell becomes k×k samples of the colour map image, so that vector exports (SVG/PDF, where
    /// viewers resample embedded images smoothly) keep sharp cell edges. Default 1.
    void setCellOversampling(int k);

    /// Lays the plot out for its current viewport so that cells are square: the spare width or
    /// height becomes equal margins around the figure. Called on resize, reset and setData.
    void fitSquareCells();

public slots:
    /// Shows all positions again after zoom/pan.
    void resetView();

private:
    void fillColorMap();
    void onMouseMove(QMouseEvent* event);
    bool eventFilter(QObject* watched, QEvent* event) override;

    QCustomPlot* plot_;
    QCPTextElement* title_;
    QCPAxisRect* rect_;
    QCPColorMap* map_;
    QCPColorScale* scale_;
    QSharedPointer<TokenAxisTicker> xTicker_, yTicker_;
    Matrix pattern_;
    QStringList tokens_;
    QString titleText_;
    bool causal_ = true;
    int oversampling_ = 1;
    bool fitQueued_ = false;
};

} // namespace attnscope
