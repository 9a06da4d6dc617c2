#pragma once
// The attribution graph of one prediction (Ameisen et al. 2025, "Circuit Tracing", §2.3; circuit-tracer's
// attribution/attribute.py): nodes are the active transcoder features, an error node per (layer, position), the
// token embeddings and the top output logits; an edge s → t is the direct effect of s on t through the frozen
// replacement model (replacement_model.h), which is linear, so the edges into a node plus its constant sum to it.
//
// Edges, A[t, s] (row = target, column = source; circuit-tracer's adjacency_matrix):
//   A[t, s] = v_s · ∂value_t/∂x at the place s writes, with attention patterns, norm divisors and MLPs frozen
//   v_s: a·W_dec[f] at hook_mlp_out (feature), err[L, p] there (error), W_E[token] at hook_embed (token).
//   value_t: a feature's pre-activation x_in·W_enc[f] + b_enc (its activation), injected as W_enc[f] at its input hook;
//            a logit's u_t·ln_final[last], u_t = W_U[:, t] − mean_v W_U[:, v] (the logit minus the mean logit).
// A target's gradient is carried down the residual stream: at each layer below it, first contracted with the
// sources written there, then through the layer's attention (V and W_O only, with the clean pattern; the MLP is a
// stop-gradient, bar a skip transcoder's linear W_skip) and its frozen ln_1. Node order: features by (layer,
// position, feature id), errors by (layer, position), tokens by position, logits by probability.
// Checked against tools/graph_reference.py (float64 PyTorch autograd and per-node knock-out) in tests/graphs.

#include "model/analysis/graphs/replacement_model.h"

#include <QString>
#include <vector>

namespace attnscope {

enum class GraphNodeKind { Feature, Error, Token, Logit };

struct GraphNode {
    GraphNodeKind kind = GraphNodeKind::Feature;
    int layer = -1;       ///< feature and error nodes; n_layers for logits; −1 for tokens
    int position = 0;
    int id = -1;          ///< feature id; the token id for token and logit nodes; −1 for errors
    float activation = 0; ///< a feature's activation; a logit node's probability
};

struct AttributionOptions {
    int maxLogits = 10;             ///< circuit-tracer's max_n_logits
    double desiredLogitProb = 0.95; ///< … and desired_logit_prob: logits until their probabilities sum to this
    int batchRows = 2048;           ///< targets per backward batch × positions ≈ this many residual rows
};

struct AttributionGraph {
    std::vector<int> tokens;
    int nLayers = 0;
    std::vector<GraphNode> nodes;   ///< features, then errors, tokens, logits
    int errorOffset = 0, tokenOffset = 0, logitOffset = 0; ///< index of the first node of each kind
    Matrix adjacency;               ///< [n_nodes, n_nodes] A[target, source]; rows of error and token nodes are 0
    std::vector<double> values;     ///< [n_nodes] each target's value (above); 0 for error and token nodes

    int nFeatures() const { return errorOffset; }
    int nNodes() const { return int(nodes.size()); }
    int nPositions() const { return int(tokens.size()); }
    int errorIndex(int layer, int position) const { return errorOffset + layer * nPositions() + position; }
};

/// Bytes the graph's adjacency and the backward batches need for nFeatures active features (float32).
/// `writesPerFeature`: the layers a feature writes at, on average (1 for per-layer transcoders; (n_layers + 1)/2 for
/// a cross-layer transcoder whose features are spread evenly over the layers).
qint64 estimateGraphBytes(const ModelConfig& cfg, int nPositions, qint64 nFeatures, const AttributionOptions& options,
                          double writesPerFeature = 1);

/// The logits a graph explains: circuit-tracer's selection from the last position's probabilities (after the
/// final soft-cap), the top maxLogits by probability (ties: lower id) until their sum reaches desiredLogitProb.
std::vector<GraphNode> selectLogitNodes(const ReplacementModel& rm, const AttributionOptions& options);

/// Builds the graph. Throws InputError with both sizes when it would not fit the memory budget
/// (cache_budget.h cacheBudget), before allocating; Cancelled between batches when `progress` says so.
/// Progress units: targets done out of features + logits.
AttributionGraph attributeGraph(const ReplacementModel& rm, const AttributionOptions& options = {}, const Progress& progress = {});

} // namespace attnscope
