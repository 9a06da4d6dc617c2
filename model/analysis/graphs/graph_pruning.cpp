#include "model/analysis/graphs/graph_pruning.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

namespace attnscope {

namespace {

/// v·N for v [n] (rows of N with v_i = 0 are skipped), in double. With `sums`, N is |M| with row i divided by sums(i)
/// (in float, as normalizedAdjacency divides), read on the fly; without, N = M.
std::vector<double> timesMatrix(const std::vector<double>& v, const Matrix& M, const Vector* sums = nullptr) {
    const Eigen::Index n = M.cols();
    std::vector<double> out(static_cast<size_t>(n), 0.0);
    for (Eigen::Index i = 0; i < M.rows(); ++i) {
        const double vi = v[size_t(i)];
        if (vi == 0) continue;
        const float* row = M.row(i).data();
        if (sums) {
            const float s = (*sums)(i);
            for (Eigen::Index j = 0; j < n; ++j) out[size_t(j)] += vi * double(std::abs(row[j]) / s);
        } else {
            for (Eigen::Index j = 0; j < n; ++j) out[size_t(j)] += vi * double(row[j]);
        }
    }
    return out;
}

/// Marks feature and error nodes without a kept outgoing edge, and feature nodes without a kept incoming one, as
/// dropped (graph.py prune_graph's two `node_mask &=` lines).
void requireConnected(const AttributionGraph& g, const std::vector<std::pair<int, int>>& edges, std::vector<char>& mask) {
    std::vector<char> out(mask.size(), 0), in(mask.size(), 0);
    for (const auto& [t, s] : edges) {
        out[size_t(s)] = 1;
        in[size_t(t)] = 1;
    }
    for (int i = 0; i < g.tokenOffset; ++i) mask[size_t(i)] = char(mask[size_t(i)] && out[size_t(i)]);
    for (int i = 0; i < g.nFeatures(); ++i) mask[size_t(i)] = char(mask[size_t(i)] && in[size_t(i)]);
}

/// Σ_s |A[i, s]| per row, floored at 1e-10, summed exactly as normalizedAdjacency sums its copy: Eigen's sum of a
/// stored row starts its packets at the row's first 16-byte-aligned entry, so each row's |A| is copied into a buffer
/// at the address offset the copy's row would have (row i of an aligned [n, n] matrix starts at i·n floats), and the
/// same float rounding follows without the n × n copy.
Vector rowSums(const Matrix& adjacency) {
    const Eigen::Index n = adjacency.cols();
    RowVector buffer(n + 16);
    Vector sums(adjacency.rows());
    for (Eigen::Index i = 0; i < adjacency.rows(); ++i) {
        float* at = buffer.data() + (i * n) % 4; // buffer.data() is aligned as the copy's data() would be
        Eigen::Map<RowVector> row(at, n);
        row = adjacency.row(i).cwiseAbs();
        sums(i) = std::max(row.sum(), 1e-10f);
    }
    return sums;
}

} // namespace

int PrunedGraph::keptNodes() const { return int(std::count(nodeMask.begin(), nodeMask.end(), char(1))); }

Matrix normalizedAdjacency(const Matrix& adjacency) {
    Matrix N = adjacency.cwiseAbs();
    const Vector sums = N.rowwise().sum().cwiseMax(1e-10f);
    N.array().colwise() /= sums.array();
    return N;
}

std::vector<double> influenceOf(const Matrix& normalized, const std::vector<double>& weights) {
    return influenceOf(weights, [&](const std::vector<double>& v) { return timesMatrix(v, normalized); });
}

std::vector<double> influenceOf(const std::vector<double>& weights, const std::function<std::vector<double>(const std::vector<double>&)>& times) {
    std::vector<double> current = times(weights), influence = current;
    // an acyclic graph's N is nilpotent: at most n products before the vector is exactly 0
    for (size_t k = 0; k <= influence.size(); ++k) {
        if (std::all_of(current.begin(), current.end(), [](double x) { return x == 0; })) break;
        current = times(current);
        for (size_t i = 0; i < influence.size(); ++i) influence[i] += current[i];
    }
    return influence;
}

std::vector<double> adjacencyInfluence(const Matrix& adjacency, const std::vector<double>& weights) {
    // N = |A| row-normalised, never stored: row i's sum as normalizedAdjacency sums it, each entry divided on the fly
    const Vector sums = rowSums(adjacency);
    return influenceOf(weights, [&](const std::vector<double>& v) { return timesMatrix(v, adjacency, &sums); });
}

double findThreshold(std::vector<double> scores, double threshold) {
    if (scores.empty()) return 0;
    std::sort(scores.begin(), scores.end(), std::greater<double>());
    const double total = std::accumulate(scores.begin(), scores.end(), 0.0);
    double cum = 0;
    for (size_t i = 0; i < scores.size(); ++i) {
        cum += scores[i];
        if (cum / total >= threshold) return scores[i]; // searchsorted(cumulative, threshold, side="left")
    }
    return scores.back();
}

std::vector<double> logitWeights(const AttributionGraph& graph) {
    std::vector<double> w(size_t(graph.nNodes()), 0.0);
    for (int i = graph.logitOffset; i < graph.nNodes(); ++i) w[size_t(i)] = graph.nodes[size_t(i)].activation;
    return w;
}

PrunedGraph pruneGraph(const AttributionGraph& graph, const PruneOptions& options) {
    const int n = graph.nNodes();
    const std::vector<double> w = logitWeights(graph);
    PrunedGraph r;
    r.influence = adjacencyInfluence(graph.adjacency, w);
    r.nodeThresholdValue = findThreshold(r.influence, options.nodeThreshold);
    {
        std::vector<int> order(size_t(n), 0);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return r.influence[size_t(a)] > r.influence[size_t(b)]; });
        const double total = std::accumulate(r.influence.begin(), r.influence.end(), 0.0);
        r.cumulative.assign(size_t(n), 0.0);
        double cum = 0;
        for (int i : order) r.cumulative[size_t(i)] = (cum += r.influence[size_t(i)]) / total;
    }
    r.nodeMask.assign(size_t(n), 0);
    for (int i = 0; i < n; ++i) r.nodeMask[size_t(i)] = char(i >= graph.tokenOffset || r.influence[size_t(i)] >= r.nodeThresholdValue);

    // the kept nodes' |A| row-normalised: one float32 copy of the adjacency (the only one pruning makes)
    Matrix Np = graph.adjacency.cwiseAbs();
    for (int i = 0; i < n; ++i)
        if (!r.nodeMask[size_t(i)]) {
            Np.row(i).setZero();
            Np.col(i).setZero();
        }
    {
        const Vector sums = Np.rowwise().sum().cwiseMax(1e-10f);
        Np.array().colwise() /= sums.array();
    }
    std::vector<double> outInfluence = influenceOf(Np, w);
    for (int i = 0; i < n; ++i) outInfluence[size_t(i)] += w[size_t(i)];
    std::vector<double> scores;
    for (int t = 0; t < n; ++t)
        for (int s = 0; s < n; ++s)
            if (Np(t, s) != 0.0f) scores.push_back(double(Np(t, s)) * outInfluence[size_t(t)]);
    r.edgeThresholdValue = findThreshold(scores, options.edgeThreshold);
    for (int t = 0; t < n; ++t)
        for (int s = 0; s < n; ++s)
            if (Np(t, s) != 0.0f && double(Np(t, s)) * outInfluence[size_t(t)] >= r.edgeThresholdValue) r.edges.push_back({t, s});

    std::vector<char> old = r.nodeMask;
    requireConnected(graph, r.edges, r.nodeMask);
    while (r.nodeMask != old) {
        old = r.nodeMask;
        std::erase_if(r.edges, [&](const std::pair<int, int>& e) { return !r.nodeMask[size_t(e.first)] || !r.nodeMask[size_t(e.second)]; });
        requireConnected(graph, r.edges, r.nodeMask);
    }
    return r;
}

GraphScores graphScores(const AttributionGraph& graph) {
    const Matrix& A = graph.adjacency;
    const std::vector<double> w = logitWeights(graph);
    const std::vector<double> influence = adjacencyInfluence(A, w);
    const Vector sums = rowSums(A);
    double tokens = 0, errors = 0, num = 0, den = 0;
    for (int i = graph.errorOffset; i < graph.tokenOffset; ++i) errors += influence[size_t(i)];
    for (int i = graph.tokenOffset; i < graph.logitOffset; ++i) tokens += influence[size_t(i)];
    for (int i = 0; i < graph.nNodes(); ++i) {
        double errorShare = 0;
        for (int s = graph.errorOffset; s < graph.tokenOffset; ++s) errorShare += double(std::abs(A(i, s)) / sums(i));
        const double out = influence[size_t(i)] + w[size_t(i)];
        num += (1 - errorShare) * out;
        den += out;
    }
    GraphScores s;
    s.replacement = tokens + errors > 0 ? tokens / (tokens + errors) : 0;
    s.completeness = den > 0 ? num / den : 0;
    return s;
}

} // namespace attnscope
