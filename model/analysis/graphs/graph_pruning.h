#pragma once
// Pruning and scoring an attribution graph as circuit-tracer's graph.py does (prune_graph, compute_graph_scores;
// Ameisen et al. 2025 §2.4 and Appendix "Graph pruning"):
//   N = |A| with each row divided by its sum (max(sum, 1e-10));  w = the logit probabilities on the logit nodes
//   influence = Σ_{k≥1} w·N^k (the graph is acyclic, so the series ends: iterate until the vector is exactly 0)
//   nodes: keep influence ≥ the value where the sorted influences' cumulative share reaches nodeThreshold
//   (tokens and logits always); edges: on the kept nodes, score N'[t, s]·(influence'(t) + w_t), keep those ≥ the
//   value where the sorted scores' cumulative share reaches edgeThreshold; then repeatedly drop feature and error
//   nodes without an outgoing kept edge and feature nodes without an incoming one.
//   replacement score = Σ influence(tokens) / Σ influence(tokens and errors)
//   completeness score = Σ_i (1 − Σ_{s error} N[i, s])·(influence_i + w_i) / Σ_i (influence_i + w_i)
// Checked against an independent implementation in tools/graph_reference.py (tests/graphs).

#include "model/analysis/graphs/attribution_graph.h"

#include <functional>
#include <vector>

namespace attnscope {

struct PruneOptions {
    double nodeThreshold = 0.8;
    double edgeThreshold = 0.98;
};

struct PrunedGraph {
    std::vector<double> influence;  ///< [n_nodes] node influence on the logits (unpruned graph)
    std::vector<double> cumulative; ///< [n_nodes] the share of all influence held by the nodes at least as influential
                                    ///< (graph.py's cumulative_scores; Neuronpedia's node "influence")
    std::vector<char> nodeMask;     ///< [n_nodes] kept nodes
    std::vector<std::pair<int, int>> edges; ///< kept edges (target, source), by target then source
    double nodeThresholdValue = 0;  ///< the influence a kept node reaches
    double edgeThresholdValue = 0;  ///< the score a kept edge reaches
    int keptNodes() const;
};

struct GraphScores {
    double replacement = 0;
    double completeness = 0;
};

/// |A| row-normalised (graph.py normalize_matrix) [n, n].
Matrix normalizedAdjacency(const Matrix& adjacency);

/// Σ_{k≥1} w·N^k for w [n] (graph.py compute_influence), accumulated in double.
std::vector<double> influenceOf(const Matrix& normalized, const std::vector<double>& weights);
/// The same series with v ↦ v·N given as a function (N need not be stored).
std::vector<double> influenceOf(const std::vector<double>& weights, const std::function<std::vector<double>(const std::vector<double>&)>& times);
/// influenceOf(normalizedAdjacency(adjacency), weights), bit for bit, without the normalised copy.
std::vector<double> adjacencyInfluence(const Matrix& adjacency, const std::vector<double>& weights);

/// The value at which the descending cumulative share of `scores` (non-negative) reaches `threshold`
/// (graph.py find_threshold).
double findThreshold(std::vector<double> scores, double threshold);

/// w: the logit nodes' probabilities, 0 elsewhere [n_nodes].
std::vector<double> logitWeights(const AttributionGraph& graph);

PrunedGraph pruneGraph(const AttributionGraph& graph, const PruneOptions& options = {});

GraphScores graphScores(const AttributionGraph& graph);

} // namespace attnscope
