#pragma once
// Attribution graphs as JSON: AttnScope's --dump-json member "graph", and the layout Neuronpedia's graph frontend
// reads (neuronpedia apps/webapp/app/api/graph/graph-schema.json, written as circuit-tracer's
// utils/create_graph_files.py and frontend/graph_models.py write it), so a graph made here can be shared there.

#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/graph_pruning.h"
#include "model/tokenizers/tokenizer.h"

#include <QJsonObject>
#include <QStringList>
#include <vector>

namespace attnscope {

/// circuit-tracer's node_id: feature "L_F_P", error "0_L_P" (sic: it can equal a layer-0 feature's), token
/// "E_TOKEN_P", logit "(n_layers + 1)_TOKEN_P".
QString neuronpediaNodeId(const AttributionGraph& graph, int node);
/// The same for a node of a graph with `nLayers` layers given by its fields (a QK trace's contributor that is no node).
QString neuronpediaNodeId(const GraphNode& node, int nLayers);

/// {"conventions", "tokens", "token_ids", "settings", "scores", "nodes": [{index, kind, layer, position, feature |
/// token_id, token, activation | probability, value, influence, cumulative_influence, kept, node_id}],
/// "edges": [{target, source, weight}] (the kept ones)}.
QJsonObject attributionGraphToJson(const AttributionGraph& graph, const PrunedGraph& pruned, const GraphScores& scores,
                                   const Tokenizer& tokenizer, const AttributionOptions& attribution, const PruneOptions& pruning);

struct NeuronpediaGraphInfo {
    QString slug;            ///< metadata.slug
    QString scan;            ///< metadata.scan: the model and transcoders (circuit-tracer's config.yaml scan)
    QString prompt;          ///< metadata.prompt
    QStringList pinnedIds;   ///< qParams.pinnedIds
    std::vector<QStringList> supernodes; ///< qParams.supernodes: [name, node_id, …]
};

/// The kept nodes and edges in Neuronpedia's layout: graphDocumentToJson(graphDocumentFromGraph(…)) (graph_document.h),
/// the one writer of graph files. Metadata {slug, scan, transcoder_list, prompt_tokens, prompt, node_threshold,
/// generation_settings, pruning_settings, info.generator}, qParams (pins and supernodes naming kept nodes), nodes (node_id,
/// feature, layer, ctx_idx, feature_type, jsNodeId, clerp, influence = cumulative influence, activation, token_prob,
/// is_target_logit, run_idx, reverse_ctx_idx), links {source, target, weight}.
QJsonObject neuronpediaGraphJson(const AttributionGraph& graph, const PrunedGraph& pruned, const Tokenizer& tokenizer,
                                 const PruneOptions& pruning, const NeuronpediaGraphInfo& info);

} // namespace attnscope
