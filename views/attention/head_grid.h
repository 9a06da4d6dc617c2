#pragma once
// Overview of every head: a layers × heads grid of small attention-pattern thumbnails, rows
// labelled L0.., columns H0... Click a thumbnail to pick that head. Thumbnails are QImages drawn
// with QPainter (fast, crisp; high-DPI screens draw them at device resolution); the widget keeps them
// and the box-averaged values behind them (≤ 128 × 128 per head, to recolour them when the colour map
// or theme changes), not the patterns. The figure menu copies or exports the whole grid.

#include "model/core/tensor.h"
#include "views/figures/figure.h"

#include <QImage>
#include <qcustomplot.h>
#include <QWidget>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace attnscope {

class FigureActions;

class HeadGrid : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit HeadGrid(QWidget* parent = nullptr);

    /// Renders one thumbnail per head from patternFor(layer, head) = [query_pos, key_pos] (values
    /// 0–1, viridis; key_pos > query_pos drawn masked when `causal`). Patterns larger than
    /// maxThumbnailSide() are box-averaged down. Clears scores and keeps the selection if valid.
    void setPatterns(int nLayers, int nHeads, const std::function<Matrix(int layer, int head)>& patternFor,
                     bool causal = true);
    /// Convenience: perLayerPerHead[layer][head]; all layers must have the same number of heads.
    void setPatterns(const std::vector<std::vector<Matrix>>& perLayerPerHead, bool causal = true);
    void clear();
    int layers() const { return nLayers_; }

    /// Progressive filling (patterns computed in the background, layer by layer): an nLayers × nHeads grid
    /// whose layers are all pending — drawn hatched grey with "…" — until setLayerPatterns fills them.
    /// Clears scores; keeps the selection if valid.
    void beginPatterns(int nLayers, int nHeads, bool causal = true);
    /// Thumbnails of one layer: patterns[head] = [query_pos, key_pos] as in setPatterns. The layer is no longer
    /// pending. Throws InputError if layer is outside the grid or patterns.size() != heads().
    void setLayerPatterns(int layer, const std::vector<Matrix>& patterns);
    /// True while layer's thumbnails are still to come (beginPatterns without setLayerPatterns).
    bool isLayerPending(int layer) const;
    /// Number of pending layers.
    int pendingLayers() const;
    int heads() const { return nHeads_; }

    /// Optional per-head score in [0, 1] (e.g. a head detector's), shape [layer, head]: drawn as an
    /// orange bar under each thumbnail (length ∝ score) and shown in the tooltip as
    /// "<name>: 0.83". An empty matrix removes it. Throws InputError on a shape mismatch.
    void setHeadScores(const Matrix& scores, const QString& name);

    /// Outlines (layer, head); (-1, -1) clears the selection. Does not emit headClicked.
    void setSelectedHead(int layer, int head);
    std::optional<std::pair<int, int>> selectedHead() const;

    /// Thumbnail rectangle of (layer, head) in widget coordinates for the current size.
    QRect cellRect(int layer, int head) const;
    /// Head under a widget point, if any.
    std::optional<std::pair<int, int>> headAt(const QPoint& pos) const;

    /// The shared context-menu actions (copy / export the grid).
    FigureActions* figureActions() const { return actions_; }

    // Figure: the grid as drawn; values = the score overlay per layer and head (empty without one).
    bool hasFigureData() const override { return nLayers_ > 0 && nHeads_ > 0; }
    QString figureTitle() const override;
    QSize figureSize() const override;
    void paintFigure(QCPPainter& painter, QSize size, bool vector) override;
    ValueTable figureValues() const override;

    static constexpr int maxThumbnailSide() { return 128; }
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

signals:
    /// The user clicked the thumbnail of (layer, head); it is now selected.
    void headClicked(int layer, int head);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    bool event(QEvent* event) override;

private:
    struct Geometry {
        int left, top, cell, gap;
        int bar; ///< height of the score bar under each cell (0 without scores)
        int pitchX() const { return cell + gap; }
        int pitchY() const { return cell + bar + gap; }
    };
    Geometry geometry() const { return geometry(size()); }
    Geometry geometry(QSize size) const;
    QRect cellRect(const Geometry& g, int layer, int head) const;
    /// Box average of a pattern down to at most maxThumbnailSide() per side; NaN = no unmasked cell.
    struct Thumbnail {
        int side = 0;
        std::vector<double> values; ///< [side * side], row-major (double: the colours match colorize() of the exact mean)
    };
    static Thumbnail downsample(const Matrix& pattern, bool causal);
    static QImage colourise(const Thumbnail& t, const QCPColorGradient& gradient);
    void recolour();
    void paintGrid(QPainter& p, QSize size, const QPalette& palette, bool dark, const std::vector<QImage>& images) const;

    int nLayers_ = 0;
    int nHeads_ = 0;
    std::vector<Thumbnail> values_; ///< layer-major
    std::vector<QImage> thumbs_;    ///< values_ in the current colour map
    std::vector<bool> pending_;  ///< [layer] thumbnails still to come (progressive filling)
    bool causal_ = true;         ///< of the progressive filling
    Matrix scores_;
    QString scoreName_;
    int selLayer_ = -1, selHead_ = -1;
    FigureActions* actions_ = nullptr;
};

} // namespace attnscope
