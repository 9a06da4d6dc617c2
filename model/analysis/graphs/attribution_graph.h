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
//
// Bounded feature nodes (circuit-tracer's max_feature_nodes, attribution/attribute_transformerlens.py phases 3–5):
// with more active features than maxFeatureNodes, the logit rows are computed first; then features are visited in
// queues of updateInterval × featureBatch, each queue the unvisited features of highest partial influence
// (graph.py compute_partial_influences over the rows computed so far, in double here, ties by node order), until
// maxFeatureNodes are visited. Only visited rows are stored, against every column, in float32; then the unvisited
// features' columns are dropped and the graph is the visited square. With maxFeatureNodes ≥ the active features the
// graph is built as without a bound: every feature row, in node order.
// Checked against tools/graph_reference.py (float64 PyTorch autograd and per-node knock-out) in tests/graphs.

#include "model/analysis/graphs/attribution_targets.h"
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
    int maxFeatureNodes = 7500;     ///< circuit-tracer's max_feature_nodes (its CLI's default); ≤ 0: every active feature
    int featureBatch = 256;         ///< circuit-tracer's batch_size: with updateInterval, the size of a visiting queue
    int updateInterval = 4;         ///< circuit-tracer's update_interval: batches between partial-influence rankings
    std::vector<AttributionTarget> targets; ///< what the graph explains (attribution_targets.h); empty: the salient logits
};

struct AttributionGraph {
    std::vector<int> tokens;
    int nLayers = 0;
    int nActiveFeatures = 0;        ///< the prompt's active features (more than nFeatures() when the bound dropped some)
    int dVocab = 0;                 ///< logit nodes with id ≥ dVocab are custom targets: options.targets[id − dVocab]
    AttributionOptions options;     ///< what it was built with
    std::vector<GraphNode> nodes;   ///< features, then errors, tokens, logits
    int errorOffset = 0, tokenOffset = 0, logitOffset = 0; ///< index of the first node of each kind
    Matrix adjacency;               ///< [n_nodes, n_nodes] A[target, source]; rows of error and token nodes are 0
    std::vector<double> values;     ///< [n_nodes] each target's value (above); 0 for error and token nodes

    int nFeatures() const { return errorOffset; }
    int nNodes() const { return int(nodes.size()); }
    int nPositions() const { return int(tokens.size()); }
    int errorIndex(int layer, int position) const { return errorOffset + layer * nPositions() + position; }
};

/// What a graph build allocates, by phase (bytes): the live allocations of each phase of attributeGraph and of
/// pruneGraph + graphScores, beyond the replacement model (replacementModelBytes) and the weights.
struct GraphMemory {
    qint64 sources = 0;     ///< what every active feature writes, [writes, d_model] float32
    qint64 rows = 0;        ///< the stored rows: [n, n] without a bound; [visited + logits, n] with one, in blocks of 256 rows
    qint64 square = 0;      ///< with a bound: the visited square [m, m] it is packed into (0 without)
    qint64 packingOverlap = 0; ///< with a bound: the square's rows written while their block is not yet freed (256 rows)
    qint64 batch = 0;       ///< one backward batch's gradients and temporaries
    qint64 vectors = 0;     ///< per-node vectors (influences, masks, row sums)
    qint64 pruning = 0;     ///< pruning's edge scores (double, at most one per possible edge) beside the adjacency
    qint64 unembedding = 0; ///< W_U, read whole for its mean column: resident again if its mapped pages had been dropped
    /// The largest phase: attribution (sources + rows + batch + vectors), packing (the larger of rows + packingOverlap
    /// and the square), pruning (the final adjacency + pruning + vectors); each with the unembedding.
    qint64 peak() const;
};

/// The graph's allocations for `nActiveFeatures` active features writing `writes` [d_model] vectors in all (one per
/// feature for per-layer transcoders; one per layer reached for a cross-layer set) and `nLogits` logit targets.
GraphMemory estimateGraphMemory(const ModelConfig& cfg, int nPositions, qint64 nActiveFeatures, qint64 writes, int nLogits,
                                const AttributionOptions& options);

/// Refuses a build whose largest phase exceeds the memory budget (cache_budget.h requireWithinBudget) with both sizes
/// and what to change: InputError "The attribution graph of P positions (F active features, N of them as nodes) needs X
/// (rows R, pruning Q), but the memory budget is Y (ORIGIN). Use fewer feature nodes (--max-feature-nodes) or a
/// shorter prompt."
void requireGraphFits(const ModelConfig& cfg, int nPositions, qint64 nActiveFeatures, qint64 writes, int nLogits,
                      const AttributionOptions& options);

/// The logits a graph explains: with options.targets, one node per target (a token: its id and probability; a
/// custom direction: id d_vocab + i and its weight); else circuit-tracer's salient logits: from the last position's
/// probabilities (after the final soft-cap), the top maxLogits by probability (ties: lower id) until their sum reaches
/// desiredLogitProb.
std::vector<GraphNode> selectLogitNodes(const ReplacementModel& rm, const AttributionOptions& options);

/// A logit node's direction u [d_model], its value being u·ln_final(x)[last]: W_U[:, t] − meanU for a token (meanU: W_U's
/// mean column, graph_backward.h meanUnembedding), a custom target's own direction.
RowVector targetDirection(const ReplacementModel& rm, const AttributionGraph& graph, int node, const RowVector& meanU);

/// A logit node's name: the token's text, or a custom target's label.
QString targetLabel(const AttributionGraph& graph, const Tokenizer& tokenizer, int node);

/// Builds the graph. Throws InputError with both sizes when it would not fit the memory budget
/// (requireGraphFits, counting the replacement model as held), before allocating; Cancelled between batches when
/// `progress` says so. Progress units: rows done out of feature nodes + logits; the text names the phase ("logit
/// rows", "feature rows n/N", "packing").
AttributionGraph attributeGraph(const ReplacementModel& rm, const AttributionOptions& options = {}, const Progress& progress = {});

} // namespace attnscope
