#pragma once
// Feature labels (model/features/feature_labels.h) put on a graph's feature nodes as their clerp, the member
// Neuronpedia's graph files label a node with (graph-schema.json: nodes[].clerp).

#include "model/analysis/graphs/graph_document.h"
#include "model/features/feature_labels.h"

namespace attnscope {

/// Sets the clerp of each feature node (QK-only ones too) that `labels` knows at the node's (layer, feature index).
/// A node that already has a clerp (a file made elsewhere, a label the user typed) keeps it unless `overwrite`.
/// Returns how many nodes got a label.
int applyFeatureLabels(GraphDocument& doc, const FeatureLabels& labels, bool overwrite = false);

} // namespace attnscope
