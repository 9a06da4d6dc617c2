#pragma once
// One attention pattern as a heatmap: key positions across, query positions down (row 0 at the
// top), token labels on both axes, fixed 0–1 sequential colour scale (viridis, or cividis when
// colour-blind safe maps are chosen) with a colour bar, masked (future) cells in grey, hover tooltip,
// wheel zoom / drag pan, double-click to reset, and the shared figure menu (views/figures/heatmap_view.h).

#include "model/core/tensor.h"
#include "views/figures/heatmap_view.h"

#include <QStringList>

namespace attnscope {

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

/// Heatmap widget around a QCustomPlot. Owns a copy of the pattern it shows (for tooltips and Copy
/// values) and nothing else.
class AttentionHeatmap : public HeatmapView {
    Q_OBJECT
public:
    explicit AttentionHeatmap(QWidget* parent = nullptr);

    /// Shows `data`: lays the plot out now and draws it on the next event-loop pass (queued replot;
    /// exports render themselves). Throws InputError if the pattern is not square or tokens.size()
    /// differs from its size. An empty pattern shows the empty-state sentence.
    void setData(const AttentionHeatmapData& data);
    /// Size S of the pattern shown (0 if none).
    int positions() const { return int(pattern_.rows()); }
    /// Title shown above the heatmap.
    QString title() const { return titleText_; }
    /// The pattern shown ([query_pos, key_pos]; empty if none).
    const Matrix& pattern() const { return pattern_; }
    /// True when cell (query, key) is drawn masked (future key, or NaN).
    bool isMasked(int query, int key) const;

    /// Tooltip text of cell (query, key): "query 5 ␣sat → key 2 ␣cat: 0.734", or "… : masked".
    /// Empty when out of range.
    QString describeCell(int query, int key) const override;

    /// Lays the plot out for its current viewport so that cells are square (fitCells()).
    void fitSquareCells() { fitCells(); }

    // Figure
    QString figureTitle() const override { return titleText_; }
    /// Rows = query tokens, columns = key tokens, the weights exactly; masked cells empty.
    ValueTable figureValues() const override;

protected:
    int dataRows() const override { return positions(); }
    int dataCols() const override { return positions(); }
    double cellValue(int query, int key) const override;
    bool wantsSquareCells() const override { return true; }
    QCPColorGradient gradient(bool dark) const override;

private:
    Matrix pattern_;
    QStringList tokens_;
    QString titleText_;
    bool causal_ = true;
};

} // namespace attnscope
