#pragma once
// A general matrix heatmap (any [rows, cols] matrix with labelled axes): the building block of the
// attention-steps view, the DLA head grid, the logit-lens table colouring and the model-comparison
// matrices. Signed values use a diverging palette centred on 0; probabilities a fixed 0–1 viridis.
// Hover shows "row label, col label: value"; NaN cells are drawn as masked.

#include "model/core/tensor.h"
#include "views/figure_export.h"

#include <QStringList>
#include <QWidget>

class QCustomPlot;
class QCPRange;

namespace attnscope {

struct MatrixFigure {
    enum class Scale {
        Probability, ///< fixed 0–1, viridis
        Signed,      ///< symmetric [-max|v|, +max|v|], diverging blue–white–red, white = 0
        Sequential   ///< [min, max] of the finite values, viridis
    };
    Matrix values;              ///< [rows, cols]; NaN = masked
    QStringList rowLabels;      ///< one per row, or empty = row indices
    QStringList colLabels;      ///< one per column, or empty = column indices
    QString title;
    QString rowTitle;           ///< e.g. "query position", "layer"
    QString colTitle;           ///< e.g. "d_head", "head"
    QString valueTitle;         ///< colour-bar label, e.g. "attention weight", "logit"
    Scale scale = Scale::Signed;
};

class MatrixHeatmap : public QWidget {
    Q_OBJECT
public:
    explicit MatrixHeatmap(QWidget* parent = nullptr);
    ~MatrixHeatmap() override;
    /// Shows the figure (an empty matrix clears). Throws InputError if label counts mismatch.
    void setFigure(const MatrixFigure& figure);
    const MatrixFigure& figure() const { return figure_; }
    QCustomPlot* plot();
    /// "row label, col label: value" (or ": masked"); empty when out of range.
    QString describeCell(int row, int col) const;
    /// Centre of cell (row, col) in plot() pixel coordinates (after a layout).
    QPointF cellCentre(int row, int col) const;
    /// describeCell() for a point in plot() coordinates; empty outside the cells.
    QString tooltipAt(const QPoint& plotPos) const;
    /// Colour range in use: [0, 1] (Probability), [-m, m] (Signed), [min, max] (Sequential).
    QCPRange colorRange() const;
    /// True when cells are drawn square (the matrix is at most 8 times wider than tall or vice
    /// versa); very elongated matrices (S×d_model) fill the area instead.
    bool squareCells() const;
    /// Each cell becomes k×k colour-map samples (sharp edges in SVG/PDF). Default 1.
    void setCellOversampling(int k);
    /// Lays the plot out for its current viewport (square cells when squareCells()).
    void fitCells();

public slots:
    /// Shows all cells again after zoom/pan.
    void resetView();

signals:
    void cellClicked(int row, int col);

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void fillCells();

    struct Impl;
    MatrixFigure figure_;
    Impl* d_;
};

/// Renders what `view` shows (including its zoom) at `size`, like exportHeatmap(AttentionHeatmap&, ...).
bool exportMatrixHeatmap(MatrixHeatmap& view, const QString& filePath, ImageFormat format, QSize size,
                         double scale, QString* error);

/// Renders a MatrixFigure to PNG (size×scale pixels), SVG or PDF, like exportHeatmap.
/// Returns false and sets *error ("<file>: <problem>") on failure. GUI thread only.
bool exportMatrixFigure(const MatrixFigure& figure, const QString& filePath, ImageFormat format, QSize size,
                        double scale, QString* error);

/// Exports any QCustomPlot (line/bar charts, ...) to PNG (size×scale pixels), SVG or PDF. The SVG/PDF
/// title is the text of the plot's first QCPTextElement (if any). The plot's viewport is restored.
bool exportPlot(QCustomPlot* plot, const QString& filePath, ImageFormat format, QSize size, double scale,
                QString* error);

} // namespace attnscope
