#pragma once
// The prompt's active features as graph sources (Ameisen et al. 2025, §2.3; circuit-tracer's attribute phases 1–2):
// every nonzero activation of the replacement model as a feature node, and what each writes at every layer's MLP
// output, grouped by layer and position for the backward's contraction (GraphBackward::attribute). Shared by the
// attribution graph (attribution_graph.h) and the QK trace (qk_trace.h), whose column spaces both start with these.

#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/graph_backward.h"

#include <vector>

namespace attnscope {

/// Appends every active feature of `rm` to `nodes` as a Feature node, ordered by (layer, position, feature id), with
/// its activation. Returns firstAt [layer][pos + 1]: the index in `nodes` of the first feature of (layer, pos); the
/// entry [layer][n_pos] is the end of that layer's.
std::vector<std::vector<int>> addFeatureNodes(const ReplacementModel& rm, std::vector<GraphNode>& nodes);

/// What those features write [layer]: at each layer's MLP output, a per-layer transcoder's features of that layer, a
/// cross-layer transcoder's features of every layer at or below it (a·W_dec_i[f, layer − i]); LayerSources::node holds
/// indices into `nodes`. A memory-mapped set's decoder pages are handed back after each layer (releaseDecoderPages).
std::vector<LayerSources> featureSources(const ReplacementModel& rm, const std::vector<GraphNode>& nodes,
                                         const std::vector<std::vector<int>>& firstAt);

} // namespace attnscope
