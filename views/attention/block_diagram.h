#pragma once
// A small diagram of one attention block, drawn with QPainter as a chain of boxes
//   embed → +pos → ln_1 → Q/K/V → scores → scale → mask → softmax → ·V → concat → W_O → + resid
// (rotary models: embed → RMSNorm → Q/K/V → RoPE → scores → …, no position embedding)
// with the box of the current step filled. Clicking a box emits boxClicked (jump to that step). The
// figure menu copies or exports the diagram (values: the boxes in order, the current one marked).

#include "views/figures/figure.h"

#include <QStringList>
#include <QWidget>

namespace attnscope {

class BlockDiagram : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit BlockDiagram(QWidget* parent = nullptr);

    /// The box captions, left to right, of a learned-position model (rotary = false: GPT-2) or of a rotary
    /// one with RMSNorm (Llama).
    static QStringList boxLabels(bool rotary = false);
    /// The box an attentionSteps() step belongs to ("q" → "Q/K/V", "head_result_2" → "W_O", …);
    /// -1 for an unknown name.
    static int boxForStep(const QString& stepName, bool rotary = false);
    /// Shows the boxes of a rotary model (or not).
    void setRotary(bool rotary);
    bool rotary() const { return rotary_; }

    /// Highlights box `index` (-1 = none).
    void setCurrentBox(int index);
    int currentBox() const { return current_; }
    /// Rectangle of box `index` in widget coordinates (for tests and hit testing).
    QRectF boxRect(int index) const;

    // Figure
    bool hasFigureData() const override { return true; }
    QString figureTitle() const override { return tr("Attention block"); }
    QSize figureSize() const override;
    void paintFigure(QCPPainter& painter, QSize size, bool vector) override;
    ValueTable figureValues() const override;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

signals:
    void boxClicked(int index);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    QRectF boxRect(int index, QSizeF size) const;
    void paintDiagram(QPainter& p, QSizeF size, const QPalette& palette) const;
    int current_ = -1;
    bool rotary_ = false;
};

} // namespace attnscope
