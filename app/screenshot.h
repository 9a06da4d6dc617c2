#pragma once
// attnscope --screenshot VIEW --out FILE.png: the window rendered offscreen (QWidget::grab on a window
// of a fixed size under the offscreen platform, so no display is needed) after the model is open, the
// prompt has run and every view's background work is done. The README's and docs/guide.md's pictures
// are made this way (tools/screenshots.sh).

#include "app/command_line.h"

#include <QSize>
#include <QStringList>
#include <QTextStream>

class QMainWindow;

namespace attnscope {

/// The views --screenshot accepts: the tabs' view ids (app/view_ids.h), two sub-tabs of
/// logit-attribution, "head-detectors" and "ablation" (which runs the session's ablation), and two of
/// compare-models, "stitch" (sweeps k) and "finetune-directions" (ranks), which need the session's second model.
QStringList screenshotViews();

/// Resizes `window` to `size` as far as the shown view lets it: the pages of every tab widget but the current
/// one stop counting toward the window's minimum size (they are not in the picture). Returns the size it got (larger than `size` in a
/// dimension the current view cannot shrink to).
QSize fitWindow(QMainWindow& window, QSize size);

/// Opens the model (or restores --session-file), selects the view and writes the PNG. Returns the exit
/// code: 0, 1 on an error (message on `err`), as runHeadless.
int runScreenshot(const CommandLine& cmd, QTextStream& out, QTextStream& err);

} // namespace attnscope
