#pragma once
// Stable names of the main window's tabs, used by session files, the help topics
// (resources/help/<id>.md) and `--screenshot <id>`: "attention", "logit-attribution",
// "attention-steps", "attention-by-hand", "logit-lens", "embedding-space", "compare-models", "circuits", "features", "graphs".

#include <QString>

namespace attnscope {

class AnalysisPanel;

/// The id of the Attention tab (heatmap and head grid; not an AnalysisPanel).
inline const QString kAttentionViewId = QStringLiteral("attention");

/// The id of an analysis tab; a panel not listed in view_ids.cpp gets its class name in lower case.
QString viewIdOf(const AnalysisPanel* panel);

} // namespace attnscope
