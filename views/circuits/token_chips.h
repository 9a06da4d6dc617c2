#pragma once
// The prompt's tokens as coloured chips, one number per token (input attribution: saliency): left to right,
// wrapped to the width, each chip filled on the red–blue diverging map (red positive, blue negative, white 0) with
// intensity |value| / max|value|, the token above its value. Hover names the position, token and value; the
// figure menu copies or exports the chips (PNG/SVG/PDF) and their numbers (CSV).

#include "views/figures/painted_figure.h"

#include <QStringList>
#include <vector>

namespace attnscope {

class TokenChips : public PaintedFigure {
    Q_OBJECT
public:
    explicit TokenChips(QWidget* parent = nullptr);

    /// Shows one chip per token: `tokens` (display strings) and `values` (same length). Empty = the empty state.
    void setChips(const QString& title, const QStringList& tokens, const std::vector<double>& values);
    void setEmptyText(const QString& text);
    QString emptyText() const { return empty_; }
    const std::vector<double>& values() const { return values_; }
    const QStringList& tokens() const { return tokens_; }
    /// max|value|, the value of full intensity (0 when there are none).
    double maxAbs() const { return maxAbs_; }
    /// The fill of a chip of `value` with full intensity at `maxAbs`: white at 0, red above, blue below.
    static QColor chipColor(double value, double maxAbs);
    /// Chip `index`'s rectangle in widget coordinates.
    QRectF chipRect(int index) const;
    /// The chip at a widget position, or −1.
    int chipAt(const QPointF& pos) const;
    /// "position 3 ␣Mary: 0.123".
    QString describeChip(int index) const;

    // Figure
    bool hasFigureData() const override { return !values_.empty(); }
    QString figureTitle() const override { return title_; }
    /// At least the height the chips need at the widget's width.
    QSize figureSize() const override;
    /// position, token, value (exact).
    ValueTable figureValues() const override;

    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;

protected:
    void paintContent(QPainter& p, QSizeF size, const QPalette& palette) const override;
    /// describeChip of the chip there.
    QString toolTipAt(const QPointF& pos) const override;

private:
    /// The chips' rectangles for a drawing `width` wide (below the title), and the height used.
    std::vector<QRectF> layoutChips(double width, double* height) const;

    QString title_, empty_;
    QStringList tokens_;
    std::vector<double> values_;
    double maxAbs_ = 0;
};

} // namespace attnscope
