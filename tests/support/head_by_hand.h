#pragma once
// One head's part of a one-hop attribution-graph edge, by hand in double (no graph code): for the tests of edge
// routes (edge_routes.h) and head loadings (head_loadings.h).

#include "model/analysis/graphs/attribution_graph.h"
#include "model/features/dictionary_set.h"

#include <utility>

namespace attnscope::test {

/// The part of the edge from `source`, a feature of layer L − 1, into `target`, a feature of layer L at a later position,
/// that goes through head `head` of layer L, in a pre-norm LayerNorm model whose transcoders read ln2.hook_normalized (the
/// demo): v = a·W_dec[f] pushed forward through ln_1 (centred, gain, the clean σ of resid_pre at the source's position),
/// W_V^h, the clean pattern P_h[target pos, source pos], W_O^h and ln_2 (the clean σ of resid_mid at the target's
/// position), read by the target's W_enc row.
double headPartByHand(const Model& model, const ActivationCache& clean, const DictionarySet& set, const GraphNode& target,
                      const GraphNode& source, int head);

/// The strongest edge (|A[t, s]|) from a feature of layer 0 into a feature of layer 1 at a later position: (target,
/// source), or (−1, −1) when the graph has none.
std::pair<int, int> strongestOneHopEdge(const AttributionGraph& graph);

} // namespace attnscope::test
