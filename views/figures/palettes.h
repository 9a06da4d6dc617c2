#pragma once
// Colour maps shared by all views. QCustomPlot 2.1 ships no perceptually uniform gradient, so the
// sequential maps are rebuilt from stops of their published tables: matplotlib's viridis (van der
// Walt & Smith, 2015) and cividis (Nuñez, Anderton & Renslow, 2018, optimised for colour-vision
// deficiency). The diverging maps: ColorBrewer's RdBu (reversed: blue < 0 < red) and a blue–orange
// map (ColorBrewer Blues and Oranges around a near-white centre), safe for red–green deficiency.
// Which pair the views use is Appearance::colorMaps(); the masked-cell colour follows the theme.

#include <qcustomplot.h>

#include <QColor>

namespace attnscope {

/// Colour of cells that carry no value (causally masked attention, key > query): a grey that none of
/// the maps contains at that lightness — light grey on the light theme, dark grey on the dark one.
QColor maskedCellColor(bool dark);
/// maskedCellColor() of the current theme (Appearance::isDark()).
QColor maskedCellColor();

/// The fixed maps, for values in [0, 1] (sequential) or centred on their midpoint (diverging). NaN
/// cells are drawn in the light theme's maskedCellColor().
QCPColorGradient viridisGradient();  ///< matplotlib viridis at t = 0, 1/8, …, 1, RGB-interpolated
QCPColorGradient cividisGradient();  ///< matplotlib cividis at t = 0, 1/5, …, 1
QCPColorGradient redBlueGradient();  ///< ColorBrewer RdBu, 9 classes, reversed; white at 0.5
QCPColorGradient blueOrangeGradient(); ///< Blues 8,6,4,2 · #f7f7f7 · Oranges 2,4,6,8

/// The chosen sequential map (viridis or cividis) for attention weights and probabilities, NaN cells in
/// maskedCellColor(dark).
QCPColorGradient sequentialGradient(bool dark);
QCPColorGradient sequentialGradient();
/// The chosen diverging map (red–blue or blue–orange) for signed values; its midpoint sits at 0 when
/// paired with symmetricRange(). NaN cells in maskedCellColor(dark).
QCPColorGradient divergingGradient(bool dark);
QCPColorGradient divergingGradient();
/// Names of the chosen maps, for legends: "viridis" / "cividis", "red–blue" / "blue–orange".
QString sequentialMapName();
QString divergingMapName();
/// The colour of `t` in [0, 1] on the chosen sequential map (GUI thread only).
QColor sequentialColor(double t);

/// [-m, m] with m = max |value| (at least `minimum`, so an all-zero map still has a valid range).
/// Use as the data range of divergingGradient() so that 0 maps to its centre.
QCPRange symmetricRange(double maxAbs, double minimum = 1e-9);

} // namespace attnscope
