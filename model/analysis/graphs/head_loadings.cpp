#include "model/analysis/graphs/head_loadings.h"

#include "model/analysis/graphs/graph_backward.h"
#include "model/core/errors.h"

#include <numeric>

namespace attnscope {

double HeadLoadings::sum() const {
    return std::accumulate(heads.begin(), heads.end(), bypass);
}

bool crossesAttentionLayer(const AttributionGraph& graph, int target, int source, int layer) {
    const GraphNode &t = graph.nodes[size_t(target)], &s = graph.nodes[size_t(source)];
    const bool targetAbove = (t.kind == GraphNodeKind::Feature || t.kind == GraphNodeKind::Logit) && t.layer >= layer;
    return targetAbove && s.kind != GraphNodeKind::Logit && s.layer < layer; // a token's layer is −1, a logit's n_layers
}

HeadLoadings headLoadings(const ReplacementModel& rm, const AttributionGraph& graph, int target, int source, int layer) {
    const int n = graph.nNodes();
    for (const auto& [what, node] : {std::pair{"target", target}, std::pair{"source", source}})
        if (node < 0 || node >= n)
            throw InputError(QStringLiteral("head loadings: %1 node %2 is outside the graph (nodes 0 … %3)").arg(QLatin1String(what)).arg(node).arg(n - 1));
    const ModelConfig& cfg = rm.model->config();
    if (layer < 0 || layer >= cfg.n_layers)
        throw InputError(QStringLiteral("head loadings: layer %1 is out of range: the model has %2 layers (0 … %3)").arg(layer).arg(cfg.n_layers).arg(cfg.n_layers - 1));
    const int H = cfg.n_heads, T = rm.nPositions(), ps = graph.nodes[size_t(source)].position;
    const TargetGradient tg = targetGradient(rm, graph, target);                 // InputError: not a feature or logit node
    std::vector<std::pair<int, RowVector>> writes = sourceWrites(rm, graph, source); // InputError: a logit
    // only what is written below the target's input has an edge (edge_routes.cpp does the same)
    std::erase_if(writes, [&](const auto& w) { return !(w.first < tg.at.layer || (w.first == tg.at.layer && tg.at.first == BackwardHop::Mlp)); });
    const bool crosses = crossesAttentionLayer(graph, target, source, layer);
    auto split = [&](int writeLayer) { return crosses && writeLayer < layer; }; // written below L, read above L's attention
    auto dot = [&](const RowVector& v, const Matrix& G, Eigen::Index row) { return v.cast<double>().dot(G.row(row).cast<double>()); };

    HeadLoadings r;
    r.target = target;
    r.source = source;
    r.layer = layer;
    r.edge = graph.adjacency(target, source);
    r.heads.assign(size_t(H), 0.0);
    if (writes.empty()) return r; // the source is written above the target's input: no path

    // the target's gradient down the whole model: the writes that are not split take their part of the bypass from it,
    // and G_L is kept where it reaches layer L's attention
    const GraphBackward backward(rm);
    Matrix GL;
    const Matrix atEmbed = backward.carry(tg.G, tg.at, [&](int l, BackwardHop hop, const Matrix& G) {
        if (hop == BackwardHop::Attention) {
            if (l == layer) GL = G;
            return;
        }
        for (const auto& [wl, v] : writes)
            if (wl == l && !split(wl)) r.bypass += dot(v, G, ps);
    });
    for (const auto& [wl, v] : writes)
        if (wl < 0 && !split(wl)) r.bypass += dot(v, atEmbed, ps);
    if (!crosses || GL.size() == 0) return r;

    // the batch [(H + 1)·T, d_model]: block h is head h's part of layer L's attention backward, block H is G_L itself
    // (the residual past L's attention); carried down together, contracted with the writes below L at each layer
    Matrix batch((H + 1) * Eigen::Index(T), cfg.d_model);
    batch.topRows(Eigen::Index(H) * T) = backward.attentionBackByHead(layer, GL);
    batch.bottomRows(T) = GL;
    std::vector<double> parts(size_t(H) + 1, 0.0);
    auto contract = [&](int l, const Matrix& G) {
        for (const auto& [wl, v] : writes)
            if (wl == l && split(wl))
                for (int b = 0; b <= H; ++b) parts[size_t(b)] += dot(v, G, Eigen::Index(b) * T + ps);
    };
    const Matrix batchAtEmbed = backward.carry(std::move(batch), {layer - 1, BackwardHop::Mlp}, [&](int l, BackwardHop hop, const Matrix& G) {
        if (hop == BackwardHop::Mlp) contract(l, G);
    });
    contract(-1, batchAtEmbed);
    std::copy(parts.begin(), parts.begin() + H, r.heads.begin());
    r.bypass += parts[size_t(H)];
    return r;
}

} // namespace attnscope
