#pragma once
// Fast tick labels for axes with many distinct text labels (token axes). QCustomPlot lays every
// tick label out with QFontMetrics::boundingRect on each layout pass and each draw, and its label
// pixmap cache holds only 16 labels per axis, so an axis showing 30–60 token labels re-shapes all
// of them (HarfBuzz) two to three times per replot: ~80% of a 512-token heatmap's render time.

#include <QStringList>

class QCPAxis;

namespace attnscope {

/// Replaces `axis`' tick-label painter with one that keeps, per label text, the measured label
/// layout and a prepared QStaticText (drawn on raster devices; SVG/PDF keep QPainter::drawText so
/// exported text stays text), and whose label pixmap cache holds enough labels for n_ctx = 2048
/// positions. Rendering is unchanged otherwise. Idempotent; call before or after styling the axis.
void installCachedTickLabels(QCPAxis* axis);

/// Reserves room on `axis` (which must have installCachedTickLabels) for the largest of `labels`
/// as drawn with the axis' tick-label font and rotation: the axis margin and the axis title keep
/// that distance whatever subset of labels zoom/pan shows, so the plot does not jump or lose its
/// square cells while zooming. Measures each label once (cached); empty `labels` reserves nothing.
void reserveTickLabelSpace(QCPAxis* axis, const QStringList& labels);

} // namespace attnscope
