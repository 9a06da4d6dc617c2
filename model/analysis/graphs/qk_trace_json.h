#pragma once
// QK traces (qk_trace.h) as JSON: AttnScope's --dump-json member "qk_traces", and Neuronpedia's graph-file layout
// (neuronpedia apps/webapp/app/api/graph/graph-schema.json, 2026-04): `nodes[].qk_tracing_results` {pair_wise_contributors
// [[q_id, k_id, attribution]], top_q_marginal_contributors [[id, attribution]], top_k_marginal_contributors} on a traced
// edge's target node, and the top-level `qk_only_nodes` {node_id: descriptor} for contributors the file's nodes lack.

#include "model/analysis/graphs/graph_document.h"
#include "model/analysis/graphs/graph_pruning.h"
#include "model/analysis/graphs/qk_trace.h"
#include "model/tokenizers/tokenizer.h"

#include <QJsonArray>
#include <QJsonObject>
#include <vector>

namespace attnscope {

/// A traced cell and, when it explains an edge of the graph, that edge (node indices; −1 for a cell asked by position).
struct TracedCell {
    QkTrace trace;
    int target = -1, source = -1;
};

/// The cells --qk-trace-edges N traces: the N strongest kept cross-position edges (strongestCrossPositionEdges), each
/// through its strongest head (edgeRoutes): that head's layer and head, the query position carrying most of its part,
/// and the source's position as the key. `top`: pairs and marginals listed per trace.
std::vector<TracedCell> traceStrongestEdges(const QkTracer& tracer, const ReplacementModel& rm, const AttributionGraph& graph,
                                            const PrunedGraph& pruned, int n, int top);

/// "qk_traces" [{layer, head, query, key, score, constant, q_constant, k_constant, pairs_total, check_error, pattern,
/// (target, source: a traced edge), pairs [{q, k, attribution}], q_marginals [{node, attribution}], k_marginals}] with q,
/// k and node indices into the dump's graph nodes; a contributor the graph has no node for (its feature-node bound left it
/// out) gets index n_nodes + i and is described in `qkOnlyNodes`[i] {index, kind, layer, position, feature, activation,
/// node_id}.
QJsonArray qkTracesToJson(const std::vector<TracedCell>& cells, const QkTracer& tracer, const AttributionGraph& graph,
                          QJsonArray& qkOnlyNodes);

/// Writes the traced edges' results into `doc` (made from `graph` by graphDocumentFromGraph): each traced edge's target
/// node gets `qk_tracing_results` (its strongest traced edge's, the first in `cells`; cells with no edge, or whose
/// target is not among the file's nodes, are left out), and every contributor that is not one of doc's nodes is appended
/// as a QK-only node (GraphDocumentNode::qkOnly), which graphDocumentToJson writes to `qk_only_nodes` {node_id, feature,
/// layer, ctx_idx, feature_type, jsNodeId, clerp, activation}. Returns how many nodes got results.
int addQkTracingResults(GraphDocument& doc, const std::vector<TracedCell>& cells, const QkTracer& tracer, const AttributionGraph& graph,
                        const Tokenizer& tokenizer);

} // namespace attnscope
