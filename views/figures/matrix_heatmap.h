#pragma once
// A general matrix heatmap (any [rows, cols] matrix with labelled axes): the building block of the
// attention-steps view, the DLA head grid and the model-comparison matrices. Signed values use the
// diverging map centred on 0; probabilities a fixed 0–1 sequential map; other values the sequential map
// over their range. Hover shows "row label, col label: value"; NaN cells are drawn as masked. Zoom,
// the figure menu and the empty state come from HeatmapView.

#include "model/core/tensor.h"
#include "views/figures/figure_export.h"
#include "views/figures/heatmap_view.h"

#include <QStringList>

class QCustomPlot;
class QCPRange;

namespace attnscope {

struct MatrixFigure {
    enum class Scale {
        Probability, ///< fixed 0–1, sequential map
        Signed,      ///< symmetric [-max|v|, +max|v|], diverging map, its centre = 0
        Sequential   ///< [min, max] of the finite values, sequential map
    };
    Matrix values;              ///< [rows, cols]; NaN = masked
    QStringList rowLabels;      ///< one per row, or empty = row indices
    QStringList colLabels;      ///< one per column, or empty = column indices
    QString title;
    QString rowTitle;           ///< e.g. "query position", "layer"
    QString colTitle;           ///< e.g. "d_head", "head"
    QString valueTitle;         ///< colour-bar label, e.g. "attention weight", "logit"
    Scale scale = Scale::Signed;
    /// Signed: the colour range's half-width when > 0 (heatmaps shown side by side share one scale); 0 = max|v|.
    double signedLimit = 0;
};

class MatrixHeatmap : public HeatmapView {
    Q_OBJECT
public:
    explicit MatrixHeatmap(QWidget* parent = nullptr);
    /// Shows the figure (an empty matrix shows the empty-state sentence). Throws InputError if label
    /// counts mismatch.
    void setFigure(const MatrixFigure& figure);
    const MatrixFigure& figure() const { return figure_; }
    /// "row label, col label: value" (or ": masked"); empty when out of range.
    QString describeCell(int row, int col) const override;
    /// Colour range in use: [0, 1] (Probability), [-m, m] (Signed), [min, max] (Sequential).
    QCPRange colorRange() const;
    /// True when cells are drawn square (the matrix is at most 8 times wider than tall or vice
    /// versa); very elongated matrices (S×d_model) fill the area instead.
    bool squareCells() const;

    // Figure
    QString figureTitle() const override { return figure_.title; }
    /// The matrix exactly, with its row and column labels (NaN cells empty).
    ValueTable figureValues() const override;

protected:
    int dataRows() const override { return int(figure_.values.rows()); }
    int dataCols() const override { return int(figure_.values.cols()); }
    double cellValue(int row, int col) const override { return double(figure_.values(row, col)); }
    bool wantsSquareCells() const override { return squareCells(); }
    QCPColorGradient gradient(bool dark) const override;

private:
    MatrixFigure figure_;
    QCPRange range_{0, 1};
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
