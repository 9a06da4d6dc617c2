#include "model/analysis/graphs/qk_trace_json.h"

#include "model/analysis/graphs/edge_routes.h"
#include "model/analysis/graphs/graph_document_from_graph.h"
#include "model/analysis/graphs/graph_json.h"

#include <map>

namespace attnscope {

std::vector<TracedCell> traceStrongestEdges(const QkTracer& tracer, const ReplacementModel& rm, const AttributionGraph& graph,
                                            const PrunedGraph& pruned, int n, int top) {
    std::vector<TracedCell> out;
    for (const auto& [t, s] : strongestCrossPositionEdges(graph, pruned, n)) {
        const EdgeRoutes r = edgeRoutes(rm, graph, t, s);
        if (r.heads.empty() || r.heads.front().query < 0) continue; // no head between them (cannot happen across positions)
        const HeadRoute& h = r.heads.front();
        out.push_back({tracer.trace(h.layer, h.head, h.query, graph.nodes[size_t(s)].position, top), t, s});
    }
    return out;
}

QJsonArray qkTracesToJson(const std::vector<TracedCell>& cells, const QkTracer& tracer, const AttributionGraph& graph,
                          QJsonArray& qkOnlyNodes) {
    std::map<int, int> extra; // column → its index past the graph's nodes
    auto index = [&](int column) {
        if (const int node = tracer.graphNode(graph, column); node >= 0) return node;
        if (const auto it = extra.find(column); it != extra.end()) return it->second;
        const int i = graph.nNodes() + int(extra.size());
        extra[column] = i;
        const GraphNode& c = tracer.columns()[size_t(column)];
        qkOnlyNodes.append(QJsonObject{{"index", i}, {"kind", QStringLiteral("feature")}, {"layer", c.layer}, {"position", c.position},
                                       {"feature", c.id}, {"activation", double(c.activation)}, {"node_id", neuronpediaNodeId(c, graph.nLayers)}});
        return i;
    };
    QJsonArray out;
    for (const TracedCell& cell : cells) {
        const QkTrace& t = cell.trace;
        QJsonArray pairs, qm, km;
        for (const QkPair& p : t.pairs) pairs.append(QJsonObject{{"q", index(p.q)}, {"k", index(p.k)}, {"attribution", p.attribution}});
        for (const QkContributor& c : t.qMarginals) qm.append(QJsonObject{{"node", index(c.column)}, {"attribution", c.attribution}});
        for (const QkContributor& c : t.kMarginals) km.append(QJsonObject{{"node", index(c.column)}, {"attribution", c.attribution}});
        QJsonObject o{{"layer", t.layer}, {"head", t.head}, {"query", t.query}, {"key", t.key}, {"score", t.score}, {"constant", t.constant},
                      {"q_constant", t.qConstant}, {"k_constant", t.kConstant}, {"pairs_total", t.pairsTotal}, {"check_error", t.checkError},
                      {"pattern", double(t.pattern)}, {"pairs", pairs}, {"q_marginals", qm}, {"k_marginals", km}};
        if (cell.target >= 0) {
            o.insert(QStringLiteral("target"), cell.target);
            o.insert(QStringLiteral("source"), cell.source);
        }
        out.append(o);
    }
    return out;
}

int addQkTracingResults(GraphDocument& doc, const std::vector<TracedCell>& cells, const QkTracer& tracer, const AttributionGraph& graph,
                        const Tokenizer& tokenizer) {
    std::map<int, int> docOf; // graph index → doc node
    for (size_t i = 0; i < doc.nodes.size(); ++i)
        if (doc.nodes[i].graphIndex >= 0) docOf[doc.nodes[i].graphIndex] = int(i);
    std::map<QString, bool> added; // contributors appended as QK-only nodes (graphDocumentToJson writes them to qk_only_nodes)
    auto id = [&](int column) {
        const int node = tracer.graphNode(graph, column);
        if (node >= 0 && docOf.count(node)) return doc.nodes[size_t(docOf[node])].nodeId;
        const GraphNode& c = tracer.columns()[size_t(column)];
        GraphDocumentNode d = documentNodeOf(graph, c, tokenizer);
        if (!added.count(d.nodeId)) {
            added[d.nodeId] = true;
            d.graphIndex = node;
            d.qkOnly = true;
            doc.nodes.push_back(d);
        }
        return d.nodeId;
    };
    int written = 0;
    for (const TracedCell& cell : cells) {
        if (cell.target < 0 || !docOf.count(cell.target)) continue;
        const int targetIndex = docOf[cell.target]; // doc.nodes grows below: index it again after
        if (doc.nodes[size_t(targetIndex)].kept.contains(QStringLiteral("qk_tracing_results"))) continue; // the strongest traced edge's
        QJsonArray pairs, qm, km;
        for (const QkPair& p : cell.trace.pairs) pairs.append(QJsonArray{id(p.q), id(p.k), p.attribution});
        for (const QkContributor& c : cell.trace.qMarginals) qm.append(QJsonArray{id(c.column), c.attribution});
        for (const QkContributor& c : cell.trace.kMarginals) km.append(QJsonArray{id(c.column), c.attribution});
        doc.nodes[size_t(targetIndex)].kept.insert(QStringLiteral("qk_tracing_results"),
                           QJsonObject{{"pair_wise_contributors", pairs}, {"top_q_marginal_contributors", qm}, {"top_k_marginal_contributors", km}});
        ++written;
    }
    return written;
}

} // namespace attnscope
