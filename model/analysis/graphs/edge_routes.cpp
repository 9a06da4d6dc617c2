#include "model/analysis/graphs/edge_routes.h"

#include "model/analysis/graphs/graph_backward.h"
#include "model/core/errors.h"
#include "model/core/weight_gemm.h"
#include "model/transformer/backward.h"

#include <algorithm>
#include <cmath>

namespace attnscope {

double EdgeRoutes::sum() const {
    double s = residual + skip;
    for (const HeadRoute& h : heads) s += h.value;
    return s;
}

EdgeRoutes edgeRoutes(const ReplacementModel& rm, const AttributionGraph& graph, int target, int source) {
    if (target < 0 || target >= graph.nNodes() || source < 0 || source >= graph.nNodes())
        throw InputError(QStringLiteral("edge %1 ← %2: the graph has nodes 0 … %3").arg(target).arg(source).arg(graph.nNodes() - 1));
    const ModelConfig& cfg = rm.model->config();
    const int H = cfg.n_heads, dh = cfg.d_head, group = cfg.groupSize();
    const GraphNode& s = graph.nodes[size_t(source)];
    const int sourceLayer = s.kind == GraphNodeKind::Token ? -1 : s.layer, ps = s.position;
    const TargetGradient tg = targetGradient(rm, graph, target);
    // what the source writes below the target's input (a cross-layer feature: at several layers)
    std::vector<std::pair<int, RowVector>> writes = sourceWrites(rm, graph, source);
    std::erase_if(writes, [&](const auto& w) { return !(w.first < tg.at.layer || (w.first == tg.at.layer && tg.at.first == BackwardHop::Mlp)); });
    // the part of it written below layer L, which L's heads and skip can carry
    auto writtenBelow = [&](int layer) {
        RowVector v = RowVector::Zero(cfg.d_model);
        for (const auto& [l, w] : writes)
            if (l < layer) v += w;
        return v;
    };

    EdgeRoutes r;
    r.target = target;
    r.source = source;
    r.edge = graph.adjacency(target, source);
    if (writes.empty()) return r; // the source is written above the target's input: no path
    r.residual = writtenBelow(cfg.n_layers).cast<double>().dot(tg.G.row(ps).cast<double>());

    const GraphBackward backward(rm);
    backward.carry(tg.G, tg.at, [&](int layer, BackwardHop hop, const Matrix& G) {
        if (layer <= sourceLayer) return; // below the source: no path starts there
        const RowVector v = writtenBelow(layer);
        if (hop == BackwardHop::Mlp) {
            if (const Matrix back = backward.skipBack(layer, G); back.size()) r.skip += v.cast<double>().dot(back.row(ps).cast<double>());
            return;
        }
        // r_s = w_1 ⊙ C(v_s)/σ_1[p_s], so that v_s · ln_1ᵀ(y)[p_s] = r_s · y; then a = r_s·W_V per KV head
        RowVector rs = v;
        if (cfg.norm == NormKind::LayerNorm) rs.array() -= rs.mean();
        rs = rs.cwiseProduct(backward.ln1Gain(layer)) / rm.ln1Scale[size_t(layer)](ps);
        Matrix a, Y;
        weightGemm(Matrix(rs), rm.model->layer(layer).W_V, Weight{}, a); // [1, n_kv_heads·d_head]
        timesTransposed(backward.beforeAttnPostNorm(layer, G), rm.model->layer(layer).W_O, Y); // [pos, n_heads·d_head]
        const std::shared_ptr<const LayerCache> c = rm.clean.layer(layer);
        for (int h = 0; h < H; ++h) {
            HeadRoute hr{layer, h};
            const Matrix& P = c->pattern[size_t(h)];
            const auto ah = a.row(0).segment(Eigen::Index(h / group) * dh, dh);
            for (Eigen::Index q = ps; q < P.rows(); ++q) {
                const double part = double(P(q, ps)) * double(ah.dot(Y.row(q).segment(Eigen::Index(h) * dh, dh)));
                hr.value += part;
                if (hr.query < 0 || std::abs(part) > std::abs(hr.queryValue)) {
                    hr.query = int(q);
                    hr.queryValue = part;
                    hr.pattern = P(q, ps);
                }
            }
            r.heads.push_back(hr);
        }
    });
    std::stable_sort(r.heads.begin(), r.heads.end(), [](const HeadRoute& x, const HeadRoute& y) { return std::abs(x.value) > std::abs(y.value); });
    return r;
}

std::vector<std::pair<int, int>> strongestKeptEdges(const AttributionGraph& graph, const PrunedGraph& pruned, int n,
                                                    const std::function<bool(int target, int source)>& keep) {
    std::vector<std::pair<int, int>> edges;
    for (const auto& [t, s] : pruned.edges)
        if (keep(t, s)) edges.push_back({t, s});
    std::stable_sort(edges.begin(), edges.end(), [&](const auto& a, const auto& b) {
        return std::abs(graph.adjacency(a.first, a.second)) > std::abs(graph.adjacency(b.first, b.second));
    });
    if (int(edges.size()) > n) edges.resize(size_t(std::max(n, 0)));
    return edges;
}

std::vector<std::pair<int, int>> strongestCrossPositionEdges(const AttributionGraph& graph, const PrunedGraph& pruned, int n) {
    return strongestKeptEdges(graph, pruned, n, [&](int t, int s) { return graph.nodes[size_t(t)].position != graph.nodes[size_t(s)].position; });
}

} // namespace attnscope
