#pragma once
// An attribution graph built here as a GraphDocument (graph_document.h): the nodes and links a graph file lists, as
// circuit-tracer's create_graph_files writes them (utils/create_graph_files.py), straight from the graph's structs.
// graphDocumentToJson then writes it: one node model and one writer for a graph built here and a file read.

#include "model/analysis/graphs/graph_document.h"
#include "model/analysis/graphs/graph_json.h"

namespace attnscope {

/// The nodes of `graph` a graph file lists, in graph order: kept nodes with a kept edge, and every embedding and logit
/// node (circuit-tracer's create_used_nodes_and_edges). The one place of that rule.
std::vector<int> neuronpediaNodes(const AttributionGraph& graph, const PrunedGraph& pruned);

/// The kept nodes (neuronpediaNodes) and edges of `graph` (pruned by `pruned`) as circuit-tracer's create_graph_files
/// writes them, each node's graphIndex set, built from the graph (no JSON in between); graphDocumentToJson is the one
/// writer of both this and a file read. Metadata: slug, scan, prompt, prompt_tokens (newlines, tabs and carriage
/// returns shown as ⏎ → ↵), node_threshold, transcoder_list, generation_settings {max_n_logits, desired_logit_prob,
/// batch_size, max_feature_nodes}, pruning_settings, info.generator. info's pins and supernode members that are not
/// kept nodes are left out. Links come from the pruned edges (circuit-tracer's error ids can repeat a layer-0 feature's).
/// `node` as circuit-tracer's create_graph_files writes a node of `graph` (node_id, feature, layer, ctx_idx, feature_type,
/// jsNodeId, clerp; run_idx and reverse_ctx_idx 0; no influence, graphIndex −1): a node of graph.nodes, or a feature,
/// error or token node the graph does not hold (a QK trace's contributor its feature-node bound left out).
GraphDocumentNode documentNodeOf(const AttributionGraph& graph, const GraphNode& node, const Tokenizer& tokenizer);

GraphDocument graphDocumentFromGraph(const AttributionGraph& graph, const PrunedGraph& pruned, const Tokenizer& tokenizer,
                                     const PruneOptions& pruning, const NeuronpediaGraphInfo& info);

/// A QK trace's contributor (qk_trace.h: `column` = QkTracer::columns()[c], `graphIndex` = QkTracer::graphNode(graph, c))
/// as a node of `graph`'s document, marked qkOnly: the graph's own node as documentNode writes it (its cumulative
/// influence) when the graph has one, else a feature the feature-node bound left out (its activation; influence 1, the
/// least, and null in the file).
GraphDocumentNode qkOnlyDocumentNode(const AttributionGraph& graph, const PrunedGraph& pruned, const Tokenizer& tokenizer,
                                     const GraphNode& column, int graphIndex);

} // namespace attnscope
