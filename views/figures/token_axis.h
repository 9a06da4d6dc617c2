#pragma once
// Token labels on a QCustomPlot axis: one tick per sequence position, labelled with the token's
// display string ("␣the", "↵"). When the positions do not fit, labels are thinned to every k-th
// position (k in 1, 2, 5, 10, 20, 50, …) so they never overlap; position 0 is always among them.
// Thinning follows zoom and resize because the ticker measures the axis each time it is asked.

#include <qcustomplot.h>

#include <QPointer>
#include <QStringList>

namespace attnscope {

/// QCPAxisTicker that places ticks at integer positions 0..n-1 and labels them with tokens.
/// Position p is the centre of cell p (a colour map with range [0, n-1]).
class TokenAxisTicker : public QCPAxisTicker {
public:
    /// axis: the axis this ticker serves (read for its pixel length and tick-label font).
    explicit TokenAxisTicker(QCPAxis* axis);

    /// Sets the tokens and reserves room on the axis for the widest label (reserveTickLabelSpace),
    /// so zoom/pan never changes the layout; a list equal to the current one costs one comparison.
    void setTokens(const QStringList& tokens);
    const QStringList& tokens() const { return tokens_; }
    /// Prefix labels with the position: "3 ␣cat". Default off.
    void setShowIndex(bool on) { showIndex_ = on; }
    /// Tokens longer than this many characters are cut and end in "…". Default 14.
    void setMaxLabelChars(int n) { maxLabelChars_ = n; }
    /// The label drawn for position p ("" when p is out of range).
    QString labelFor(int position) const;
    /// Step between labelled positions for the axis' current range and pixel length.
    int labelStep(const QCPRange& range) const;

protected:
    double getTickStep(const QCPRange& range) override;
    int getSubTickCount(double tickStep) override;
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override;
    QVector<double> createTickVector(double tickStep, const QCPRange& range) override;

private:
    QPointer<QCPAxis> axis_;
    QStringList tokens_;
    bool showIndex_ = false;
    int maxLabelChars_ = 14;
};

/// Installs a TokenAxisTicker with `tokens` on `axis`: no sub-ticks, no grid, labels rotated
/// 90° on horizontal axes (read bottom-to-top, like matplotlib's rotation=90). Returns the ticker.
QSharedPointer<TokenAxisTicker> setTokenAxis(QCPAxis* axis, const QStringList& tokens, bool showIndex = false);

/// Smallest of 1, 2, 5, 10, 20, 50, … that is >= x (x <= 1 gives 1).
int niceLabelStep(double x);

} // namespace attnscope
