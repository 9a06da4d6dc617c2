#pragma once
// Colour maps shared by all views. QCustomPlot 2.1 ships no perceptually uniform gradient, so the
// sequential map is matplotlib's viridis (van der Walt & Smith, 2015) rebuilt from 9 stops of its
// published table; the diverging map is ColorBrewer's RdBu (reversed: blue < 0 < red).

#include <qcustomplot.h>

#include <QColor>

namespace attnscope {

/// Colour of cells that carry no value (causally masked attention, key > query). A light grey that
/// cannot be confused with viridis' zero (dark purple) or one (yellow).
QColor maskedCellColor();

/// Viridis for values in [0, 1] (attention weights, probabilities). NaN cells are drawn in
/// maskedCellColor(). Stops: matplotlib `viridis` at t = 0, 1/8, …, 1 (_cm_listed.py), RGB-interpolated.
QCPColorGradient viridisGradient();

/// Blue–white–red for signed values (logit attributions, differences). White sits at the gradient's
/// midpoint, so pair it with symmetricRange() to centre white on 0. NaN cells use maskedCellColor().
/// Stops: ColorBrewer RdBu, 9 classes, reversed.
QCPColorGradient divergingGradient();

/// [-m, m] with m = max |value| (at least `minimum`, so an all-zero map still has a valid range).
/// Use as the data range of divergingGradient() so that 0 maps to white.
QCPRange symmetricRange(double maxAbs, double minimum = 1e-9);

} // namespace attnscope
