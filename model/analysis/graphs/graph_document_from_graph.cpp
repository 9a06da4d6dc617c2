#include "model/analysis/graphs/graph_document_from_graph.h"

#include "model/analysis/common/token_json.h"

#include <QCoreApplication>
#include <QJsonArray>

namespace attnscope {

std::vector<int> neuronpediaNodes(const AttributionGraph& graph, const PrunedGraph& pruned) {
    std::vector<char> linked(size_t(graph.nNodes()), 0);
    for (const auto& [t, s] : pruned.edges)
        if (pruned.nodeMask[size_t(t)] && pruned.nodeMask[size_t(s)]) linked[size_t(t)] = linked[size_t(s)] = 1;
    std::vector<int> order;
    for (int i = 0; i < graph.nNodes(); ++i) {
        const GraphNodeKind k = graph.nodes[size_t(i)].kind;
        if (pruned.nodeMask[size_t(i)] && (linked[size_t(i)] || k == GraphNodeKind::Token || k == GraphNodeKind::Logit)) order.push_back(i);
    }
    return order;
}

namespace {

/// circuit-tracer's process_token: newlines, tabs and carriage returns shown as ⏎ → ↵.
QString shownToken(const Tokenizer& tokenizer, int id) {
    QString t = tokenText(tokenizer, id);
    t.replace(QLatin1Char('\n'), QStringLiteral("⏎")).replace(QLatin1Char('\t'), QStringLiteral("→")).replace(QLatin1Char('\r'), QStringLiteral("↵"));
    return t;
}

} // namespace

GraphDocumentNode documentNodeOf(const AttributionGraph& g, const GraphNode& n, const Tokenizer& tokenizer) {
    GraphDocumentNode d;
    d.nodeId = neuronpediaNodeId(n, g.nLayers);
    d.kind = n.kind;
    d.layer = n.kind == GraphNodeKind::Token ? -1 : n.kind == GraphNodeKind::Logit ? g.nLayers : n.layer;
    d.ctxIdx = n.position;
    d.kept = QJsonObject{{"run_idx", 0}, {"reverse_ctx_idx", 0}};
    switch (n.kind) {
    case GraphNodeKind::Feature:
        d.feature = n.id;
        d.featureType = QStringLiteral("cross layer transcoder");
        d.jsNodeId = QStringLiteral("%1_%2-0").arg(n.layer).arg(n.id);
        d.activation = double(n.activation);
        break;
    case GraphNodeKind::Error:
        d.feature = -1;
        d.featureType = QStringLiteral("mlp reconstruction error");
        d.jsNodeId = QStringLiteral("%1_%2-0").arg(n.layer).arg(n.position);
        d.kept.insert(QStringLiteral("activation"), QJsonValue::Null); // as circuit-tracer 1.0 writes it
        break;
    case GraphNodeKind::Token:
        d.feature = n.position;
        d.featureType = QStringLiteral("embedding");
        d.jsNodeId = QStringLiteral("E_%1-%2").arg(n.id).arg(n.position);
        d.kept.insert(QStringLiteral("activation"), QJsonValue::Null);
        break;
    case GraphNodeKind::Logit: {
        const int i = int(&n - g.nodes.data()); // a logit is always one of the graph's own nodes
        d.feature = n.id;
        d.featureType = QStringLiteral("logit");
        d.jsNodeId = QStringLiteral("L_%1-%2").arg(n.id).arg(n.position);
        d.tokenProb = double(n.activation);
        d.isTargetLogit = i == g.logitOffset;
        d.clerp = n.id < g.dVocab ? QStringLiteral("Output \"%1\" (p=%2)").arg(shownToken(tokenizer, n.id)).arg(double(n.activation), 0, 'f', 3)
                                  : QStringLiteral("%1 (w=%2)").arg(targetLabel(g, tokenizer, i)).arg(double(n.activation), 0, 'f', 3);
        d.influence = 0;
        d.kept.insert(QStringLiteral("influence"), QJsonValue::Null);
        d.kept.insert(QStringLiteral("activation"), QJsonValue::Null);
        break;
    }
    }
    d.fileFeature = d.feature;
    return d;
}

namespace {

/// Node `i` of `graph` as circuit-tracer's create_graph_files writes it (graph.py / utils/create_graph_files.py).
GraphDocumentNode documentNode(const AttributionGraph& g, const PrunedGraph& p, const Tokenizer& tokenizer, int i) {
    GraphDocumentNode d = documentNodeOf(g, g.nodes[size_t(i)], tokenizer);
    if (d.kind != GraphNodeKind::Logit) d.influence = p.cumulative[size_t(i)]; // a logit's is null in the file
    d.graphIndex = i;
    return d;
}

} // namespace

GraphDocumentNode qkOnlyDocumentNode(const AttributionGraph& graph, const PrunedGraph& pruned, const Tokenizer& tokenizer,
                                     const GraphNode& column, int graphIndex) {
    GraphDocumentNode d;
    if (graphIndex >= 0) {
        d = documentNode(graph, pruned, tokenizer, graphIndex);
    } else { // a feature beyond the bound: not a node of the graph (errors and tokens always are)
        d = documentNodeOf(graph, column, tokenizer);
        d.influence = 1;
        d.kept.insert(QStringLiteral("influence"), QJsonValue::Null);
    }
    d.qkOnly = true;
    return d;
}

GraphDocument graphDocumentFromGraph(const AttributionGraph& graph, const PrunedGraph& pruned, const Tokenizer& tokenizer,
                                     const PruneOptions& pruning, const NeuronpediaGraphInfo& info) {
    GraphDocument doc;
    doc.label = QStringLiteral("attribution graph");
    doc.slug = info.slug;
    doc.scan = info.scan;
    doc.prompt = info.prompt;
    for (int t : graph.tokens) doc.promptTokens << shownToken(tokenizer, t);
    doc.nodeThreshold = pruning.nodeThreshold;
    doc.extraMetadata = QJsonObject{
        {"transcoder_list", QJsonArray()},
        {"generation_settings", QJsonObject{{"max_n_logits", graph.options.maxLogits}, {"desired_logit_prob", graph.options.desiredLogitProb},
                                            {"batch_size", graph.options.featureBatch}, {"max_feature_nodes", graph.options.maxFeatureNodes}}},
        {"pruning_settings", QJsonObject{{"node_threshold", pruning.nodeThreshold}, {"edge_threshold", pruning.edgeThreshold}}},
        {"info", QJsonObject{{"generator", QJsonObject{{"name", QStringLiteral("AttnScope")}, {"version", QCoreApplication::applicationVersion()}}}}}};
    std::vector<int> docIndex(size_t(graph.nNodes()), -1);
    for (int i : neuronpediaNodes(graph, pruned)) {
        docIndex[size_t(i)] = int(doc.nodes.size());
        doc.nodes.push_back(documentNode(graph, pruned, tokenizer, i));
    }
    // links by graph index (circuit-tracer's error ids can repeat a layer-0 feature's), in the pruned edges' order
    for (const auto& [t, s] : pruned.edges)
        if (docIndex[size_t(t)] >= 0 && docIndex[size_t(s)] >= 0)
            doc.links.push_back({docIndex[size_t(s)], docIndex[size_t(t)], double(graph.adjacency(t, s)), {}});
    for (const QString& id : info.pinnedIds)
        if (doc.indexOf(id) >= 0) doc.pinnedIds << id;
    for (const QStringList& s : info.supernodes) { // members no longer kept are left out
        QStringList group{s.value(0)};
        for (int k = 1; k < s.size(); ++k)
            if (doc.indexOf(s[k]) >= 0) group << s[k];
        doc.supernodes.push_back(group);
    }
    return doc;
}

} // namespace attnscope
