#include "model/analysis/graphs/graph_json.h"

#include "model/analysis/common/json_number.h"
#include "model/analysis/common/token_json.h"

#include <QCoreApplication>
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

/// circuit-tracer's process_token: newlines, tabs and carriage returns shown as ⏎ → ↵.
QString shownToken(const Tokenizer& tokenizer, int id) {
    QString t = tokenText(tokenizer, id);
    t.replace(QLatin1Char('\n'), QStringLiteral("⏎")).replace(QLatin1Char('\t'), QStringLiteral("→")).replace(QLatin1Char('\r'), QStringLiteral("↵"));
    return t;
}

} // namespace

QString neuronpediaNodeId(const AttributionGraph& g, int node) {
    const GraphNode& n = g.nodes[size_t(node)];
    switch (n.kind) {
    case GraphNodeKind::Feature: return QStringLiteral("%1_%2_%3").arg(n.layer).arg(n.id).arg(n.position);
    case GraphNodeKind::Error: return QStringLiteral("0_%1_%2").arg(n.layer).arg(n.position);
    case GraphNodeKind::Token: return QStringLiteral("E_%1_%2").arg(n.id).arg(n.position);
    case GraphNodeKind::Logit: return QStringLiteral("%1_%2_%3").arg(g.nLayers + 1).arg(n.id).arg(n.position);
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
    QJsonArray nodes, links;
    std::vector<char> linked(size_t(g.nNodes()), 0);
    for (const auto& [t, s] : p.edges) {
        if (!p.nodeMask[size_t(t)] || !p.nodeMask[size_t(s)]) continue;
        links.append(QJsonObject{{"source", neuronpediaNodeId(g, s)}, {"target", neuronpediaNodeId(g, t)}, {"weight", double(g.adjacency(t, s))}});
        linked[size_t(t)] = linked[size_t(s)] = 1;
    }
    for (int i = 0; i < g.nNodes(); ++i) {
        const GraphNode& n = g.nodes[size_t(i)];
        // create_used_nodes_and_edges: kept nodes with a kept edge, and every embedding and logit node
        if (!p.nodeMask[size_t(i)] || (!linked[size_t(i)] && n.kind != GraphNodeKind::Token && n.kind != GraphNodeKind::Logit)) continue;
        const QString id = neuronpediaNodeId(g, i);
        QJsonObject o{{"node_id", id}, {"ctx_idx", n.position}, {"run_idx", 0}, {"reverse_ctx_idx", 0}, {"clerp", QString()},
                      {"token_prob", 0.0}, {"is_target_logit", false}};
        switch (n.kind) {
        case GraphNodeKind::Feature:
            o.insert(QStringLiteral("feature"), n.id);
            o.insert(QStringLiteral("layer"), QString::number(n.layer));
            o.insert(QStringLiteral("feature_type"), QStringLiteral("cross layer transcoder"));
            o.insert(QStringLiteral("jsNodeId"), QStringLiteral("%1_%2-0").arg(n.layer).arg(n.id));
            o.insert(QStringLiteral("influence"), p.cumulative[size_t(i)]);
            o.insert(QStringLiteral("activation"), double(n.activation));
            break;
        case GraphNodeKind::Error:
            o.insert(QStringLiteral("feature"), -1);
            o.insert(QStringLiteral("layer"), QString::number(n.layer));
            o.insert(QStringLiteral("feature_type"), QStringLiteral("mlp reconstruction error"));
            o.insert(QStringLiteral("jsNodeId"), QStringLiteral("%1_%2-0").arg(n.layer).arg(n.position));
            o.insert(QStringLiteral("influence"), p.cumulative[size_t(i)]);
            o.insert(QStringLiteral("activation"), QJsonValue::Null); // as circuit-tracer 1.0 writes it
            break;
        case GraphNodeKind::Token:
            o.insert(QStringLiteral("feature"), n.position);
            o.insert(QStringLiteral("layer"), QStringLiteral("E"));
            o.insert(QStringLiteral("feature_type"), QStringLiteral("embedding"));
            o.insert(QStringLiteral("jsNodeId"), QStringLiteral("E_%1-%2").arg(n.id).arg(n.position));
            o.insert(QStringLiteral("influence"), p.cumulative[size_t(i)]);
            o.insert(QStringLiteral("activation"), QJsonValue::Null);
            break;
        case GraphNodeKind::Logit:
            o.insert(QStringLiteral("feature"), n.id);
            o.insert(QStringLiteral("layer"), QString::number(g.nLayers + 1));
            o.insert(QStringLiteral("feature_type"), QStringLiteral("logit"));
            o.insert(QStringLiteral("jsNodeId"), QStringLiteral("L_%1-%2").arg(n.id).arg(n.position));
            o.insert(QStringLiteral("token_prob"), double(n.activation));
            o.insert(QStringLiteral("influence"), QJsonValue::Null);
            o.insert(QStringLiteral("activation"), QJsonValue::Null);
            o.insert(QStringLiteral("is_target_logit"), i == g.logitOffset);
            o.insert(QStringLiteral("clerp"), n.id < g.dVocab ? QStringLiteral("Output \"%1\" (p=%2)").arg(shownToken(tokenizer, n.id)).arg(double(n.activation), 0, 'f', 3)
                                                              : QStringLiteral("%1 (w=%2)").arg(targetLabel(g, tokenizer, i)).arg(double(n.activation), 0, 'f', 3));
            break;
        }
        nodes.append(o);
    }
    QJsonArray promptTokens, supernodes;
    for (int t : g.tokens) promptTokens.append(shownToken(tokenizer, t));
    for (const QStringList& s : info.supernodes) supernodes.append(QJsonArray::fromStringList(s));
    return QJsonObject{
        {"metadata", QJsonObject{{"slug", info.slug}, {"scan", info.scan}, {"transcoder_list", QJsonArray()}, {"prompt_tokens", promptTokens},
                                 {"prompt", info.prompt}, {"node_threshold", pruning.nodeThreshold},
                                 {"generation_settings", QJsonObject{{"max_n_logits", g.options.maxLogits},
                                                                     {"desired_logit_prob", g.options.desiredLogitProb},
                                                                     {"batch_size", g.options.featureBatch},
                                                                     {"max_feature_nodes", g.options.maxFeatureNodes}}},
                                 {"pruning_settings", QJsonObject{{"node_threshold", pruning.nodeThreshold}, {"edge_threshold", pruning.edgeThreshold}}},
                                 {"info", QJsonObject{{"generator", QJsonObject{{"name", QStringLiteral("AttnScope")},
                                                                               {"version", QCoreApplication::applicationVersion()}}}}}}},
        {"qParams", QJsonObject{{"pinnedIds", QJsonArray::fromStringList(info.pinnedIds)}, {"supernodes", supernodes}, {"linkType", QStringLiteral("both")},
                                {"clickedId", QString()}, {"sg_pos", QString()}}},
        {"nodes", nodes},
        {"links", links}};
}

} // namespace attnscope
