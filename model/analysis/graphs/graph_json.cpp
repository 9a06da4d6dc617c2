#include "model/analysis/graphs/graph_json.h"

#include "model/analysis/common/json_number.h"
#include "model/analysis/common/token_json.h"
#include "model/analysis/graphs/graph_document_from_graph.h"

#include <QJsonArray>

namespace attnscope {

namespace {

QString kindName(GraphNodeKind k) {
    switch (k) {
    case GraphNodeKind::Feature: return QStringLiteral("feature");
    case GraphNodeKind::Error: return QStringLiteral("error");
    case GraphNodeKind::Token: return QStringLiteral("token");
    case GraphNodeKind::Logit: return QStringLiteral("logit");
    }
    return {};
}

} // namespace

QString neuronpediaNodeId(const AttributionGraph& g, int node) { return neuronpediaNodeId(g.nodes[size_t(node)], g.nLayers); }

QString neuronpediaNodeId(const GraphNode& n, int nLayers) {
    switch (n.kind) {
    case GraphNodeKind::Feature: return QStringLiteral("%1_%2_%3").arg(n.layer).arg(n.id).arg(n.position);
    case GraphNodeKind::Error: return QStringLiteral("0_%1_%2").arg(n.layer).arg(n.position);
    case GraphNodeKind::Token: return QStringLiteral("E_%1_%2").arg(n.id).arg(n.position);
    case GraphNodeKind::Logit: return QStringLiteral("%1_%2_%3").arg(nLayers + 1).arg(n.id).arg(n.position);
    }
    return {};
}

QJsonObject attributionGraphToJson(const AttributionGraph& g, const PrunedGraph& p, const GraphScores& scores,
                                   const Tokenizer& tokenizer, const AttributionOptions& attribution, const PruneOptions& pruning) {
    QJsonArray nodes, edges;
    for (int i = 0; i < g.nNodes(); ++i) {
        const GraphNode& n = g.nodes[size_t(i)];
        QJsonObject o{{"index", i}, {"kind", kindName(n.kind)}, {"position", n.position}, {"node_id", neuronpediaNodeId(g, i)},
                      {"influence", jsonNumber(p.influence[size_t(i)])}, {"cumulative_influence", jsonNumber(p.cumulative[size_t(i)])},
                      {"kept", bool(p.nodeMask[size_t(i)])}};
        if (n.kind == GraphNodeKind::Feature || n.kind == GraphNodeKind::Error) o.insert(QStringLiteral("layer"), n.layer);
        if (n.kind == GraphNodeKind::Feature) {
            o.insert(QStringLiteral("feature"), n.id);
            o.insert(QStringLiteral("activation"), jsonNumber(n.activation));
        }
        if (n.kind == GraphNodeKind::Token || (n.kind == GraphNodeKind::Logit && n.id < g.dVocab)) {
            o.insert(QStringLiteral("token_id"), n.id);
            o.insert(QStringLiteral("token"), tokenText(tokenizer, n.id));
        } else if (n.kind == GraphNodeKind::Logit) { // a custom target (virtual index d_vocab + i)
            o.insert(QStringLiteral("target_id"), n.id);
            o.insert(QStringLiteral("target"), targetLabel(g, tokenizer, i));
        }
        if (n.kind == GraphNodeKind::Logit) o.insert(n.id < g.dVocab ? QStringLiteral("probability") : QStringLiteral("weight"), jsonNumber(n.activation));
        if (n.kind == GraphNodeKind::Feature || n.kind == GraphNodeKind::Logit) o.insert(QStringLiteral("value"), jsonNumber(g.values[size_t(i)]));
        nodes.append(o);
    }
    for (const auto& [t, s] : p.edges) edges.append(QJsonObject{{"target", t}, {"source", s}, {"weight", jsonNumber(g.adjacency(t, s))}});
    return QJsonObject{
        {"conventions",
         QStringLiteral("circuit-tracer's attribution graph (Ameisen et al. 2025): attention patterns and norm divisors frozen at the clean "
                        "run, each MLP replaced by its transcoder plus an error node, BOS position zeroed. Nodes: features by (layer, "
                        "position, feature), errors by (layer, position), tokens, logits; an edge's weight is the source's direct effect "
                        "on the target's value (a feature's pre-activation; a logit minus the mean logit), so a target's incoming edges plus "
                        "its constant sum to its value. influence = Σ_k w·N^k with N = |A| row-normalised and w the logit probabilities; "
                        "nodes kept up to node_threshold of cumulative influence, edges up to edge_threshold of edge score, then nodes "
                        "without edges dropped (graph.py prune_graph). Only kept edges are listed")},
        {"tokens", tokenTextsJson(tokenizer, g.tokens)},
        {"token_ids", tokenIdsJson(g.tokens)},
        {"settings", QJsonObject{{"max_n_logits", attribution.maxLogits}, {"desired_logit_prob", attribution.desiredLogitProb},
                                 {"max_feature_nodes", attribution.maxFeatureNodes}, {"node_threshold", pruning.nodeThreshold},
                                 {"edge_threshold", pruning.edgeThreshold}}},
        {"scores", QJsonObject{{"replacement", jsonNumber(scores.replacement)}, {"completeness", jsonNumber(scores.completeness)}}},
        {"counts", QJsonObject{{"active_features", g.nActiveFeatures}, {"features", g.nFeatures()}, {"nodes", g.nNodes()}, {"kept_nodes", p.keptNodes()},
                               {"kept_edges", int(p.edges.size())}}},
        {"nodes", nodes},
        {"edges", edges}};
}

QJsonObject neuronpediaGraphJson(const AttributionGraph& g, const PrunedGraph& p, const Tokenizer& tokenizer, const PruneOptions& pruning,
                                 const NeuronpediaGraphInfo& info) {
    return graphDocumentToJson(graphDocumentFromGraph(g, p, tokenizer, pruning, info));
}

} // namespace attnscope
