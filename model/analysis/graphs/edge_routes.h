#pragma once
// Why an edge goes through a head (issue 35 ★; circuit-tracer issue #53, PR #114): every edge between positions
// crosses frozen attention. In the frozen replacement model an edge A[t, s] is a sum over paths from the source up
// to the target, each path a product of hops (a head's value path W_V·pattern·W_O behind ln_1, or a skip
// transcoder's W_skip behind ln_2). Grouping the paths by their first hop away from the source splits the edge
// exactly:
//   A[t, s] = residual + Σ_L skip_L + Σ_{L,h} head_{L,h}
//   residual       = the paths with no hop (source and target at the same position: v_s · g_t there)
//   head_{L,h}     = v_s · ln_1ᵀ(W_V^h (P_hᵀ (G_L W_O^hᵀ)))[p_s]: the signal's first step is head h of layer L, reading the
//                    source's position as a key; G_L is the target's gradient at layer L's attention output, every
//                    later path included. Per query position q it is P_h[q, p_s]·(r·W_V^h)·(W_O^h·G_L[q]) with
//                    r = w_1 ⊙ C(v_s)/σ_1[p_s], so the query the head moves the signal to is known too.
// A cross-layer transcoder's feature writes at several layers: v_s in head_{L,h} is then the sum of its writes below L.
// The head's pattern cell P_h[q, p_s] is then explained by the QK split (model/analysis/circuits/attention_score_split.h).

#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/graph_pruning.h"

#include <functional>
#include <vector>

namespace attnscope {

struct HeadRoute {
    int layer = 0, head = 0;
    double value = 0;     ///< the part of the edge whose first hop is this head
    int query = -1;       ///< the query position that carries the largest |part| of it (the key is the source's position)
    double queryValue = 0;
    float pattern = 0;    ///< P_h[query, source position]
};

struct EdgeRoutes {
    int target = -1, source = -1;
    double edge = 0;      ///< A[t, s] as the graph has it
    double residual = 0;  ///< no hop
    double skip = 0;      ///< first hop through a skip transcoder (0 without W_skip)
    std::vector<HeadRoute> heads; ///< every head of the layers between source and target, largest |value| first

    double sum() const;   ///< residual + skip + Σ heads (= edge up to float rounding)
};

/// The routes of edge source → target of `graph` (built from `rm`). Throws InputError when target is not a feature
/// or logit node or source is a logit node.
EdgeRoutes edgeRoutes(const ReplacementModel& rm, const AttributionGraph& graph, int target, int source);

/// The `n` strongest kept edges (target, source) of `graph` for which keep(target, source) holds, largest |A[t, s]|
/// first (ties: the pruned edges' order).
std::vector<std::pair<int, int>> strongestKeptEdges(const AttributionGraph& graph, const PrunedGraph& pruned, int n,
                                                    const std::function<bool(int target, int source)>& keep);
/// strongestKeptEdges whose ends sit at different positions (the ones a head carries).
std::vector<std::pair<int, int>> strongestCrossPositionEdges(const AttributionGraph& graph, const PrunedGraph& pruned, int n);

} // namespace attnscope
