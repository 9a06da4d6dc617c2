#pragma once
// The facts a graph node's card starts with (the Graph tab's card and the tooltips of a QK trace's contributors): its
// kind and node id, layer, position and token, feature id and activation (a logit's probability, a custom target's
// weight), cumulative influence, the file's label, and for a QK-only node why it is drawn although pruned.

#include "model/analysis/graphs/graph_document.h"

#include <QString>
#include <QStringList>

namespace attnscope {

/// "Feature", "Error node", "Token embedding", "Logit".
QString graphNodeKindName(GraphNodeKind kind);

/// The card's first lines for `node` (HTML, each ending in <br>). `promptTokens` name the positions; `customTarget`
/// says a logit node is a custom target (its weight shown instead of a probability).
QString nodeCardFacts(const GraphDocumentNode& node, const QStringList& promptTokens, bool customTarget = false);

} // namespace attnscope
