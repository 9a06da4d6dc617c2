#pragma once
// Information-flow routes (Ferrando & Voita 2024, "Information Flow Routes: Automatically Interpreting
// Language Models at Scale", §2–3; the graph of Meta's LLM Transparency Tool, routes/contributions.py and
// routes/graph.py): how much each block's parts contribute to each residual representation, as a graph whose
// important edges are kept.
//
// Nodes are (layer boundary b, position): b = 0 embed (resid_pre of layer 0), 2l+1 resid_mid of layer l,
// 2l+2 resid_post of layer l (the logit lens's boundaries: lensBoundaryName). Edges into a representation y:
//   attention of layer l into (2l+1, i): one part per key position j ≤ i and head h,
//       z_{i,j,h} = A_h[i,j]·v_{j,h}·W_O^h, and the residual part resid_pre[i]  (y = resid_mid[i]; b_O is in y
//       but in no part, as in the tool);
//   MLP of layer l into (2l+2, i): the part mlp_out[i] and the residual part resid_mid[i]  (y = resid_post[i]).
// Edge weight: proximity, c_k = max(0, ‖y‖ − ‖y − z_k‖) normalised over the parts of y (residual included), with
// ‖·‖ = L1 (the paper's) or L2. An attention edge j → i sums its heads' contributions.
// Pruning (the tool's apply_threshold_and_renormalize, then build_paths_to_predictions): with renormalisation,
// each part below τ is zeroed and the rest of y's parts rescaled to sum to 1; then only edges above τ that
// lead, backwards, to the chosen output node (2·n_layers, P) are kept. τ = 0 keeps every edge of every position,
// unpruned and not renormalised.
//
// Cost: per layer the per-head value outputs v_h·W_O^h [pos, d_model] (never [pos, pos, head, d_model]) and
// one distance per (query, key, head): S²/2·H·D operations per layer, on the OpenMP threads.

#include "model/core/progress.h"
#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"

#include <QString>
#include <vector>

namespace attnscope {

enum class FlowNorm { L1, L2 };
/// "l1", "l2".
QString flowNormName(FlowNorm norm);

/// Proximity contributions of `parts` and `residual` to `whole` (all [d]): {c_parts…, c_residual}, summing
/// to 1 unless every proximity is 0 (then all 0). The tool's get_contributions_with_one_off_part, with
/// max(0, ·) where the tool clips at 10⁻⁵.
std::vector<double> proximityContributions(const std::vector<Vector>& parts, const Vector& residual, const Vector& whole,
                                           FlowNorm norm);

/// The tool's apply_threshold_and_renormalize for one representation: parts ≤ τ (and a residual ≤ τ) become
/// 0 and the rest are divided by their sum. In place.
void thresholdAndRenormalise(double tau, std::vector<double>& blocks, double& residual);

/// Every contribution of one forward pass, before thresholds: computed once, pruned many times.
struct FlowContributions {
    FlowNorm norm = FlowNorm::L1;
    int nLayers = 0, nHeads = 0, nPositions = 0;
    /// [layer][(i·(i+1)/2 + j)·n_heads + h]: head h's part from key j into resid_mid[i]
    std::vector<std::vector<float>> attention;
    Matrix attentionResidual; ///< [layer, pos] the residual part of resid_mid
    Matrix mlp, mlpResidual;  ///< [layer, pos] the MLP's and the residual's parts of resid_post

    float attentionPart(int layer, int query, int key, int head) const {
        return attention[size_t(layer)][(size_t(query) * size_t(query + 1) / 2 + size_t(key)) * size_t(nHeads) + size_t(head)];
    }
};

/// All contributions of `cache`'s prompt. Reads each layer's v, pattern, resid_pre, resid_mid, mlp_out
/// (cache.layer(l): residuals-only caches recompute). Progress units: layers; throws Cancelled.
FlowContributions flowContributions(const Model& model, const ActivationCache& cache, FlowNorm norm = FlowNorm::L1,
                                    const Progress& progress = {});

struct FlowEdge {
    enum class Kind { Attention, Mlp, Residual };
    Kind kind = Kind::Attention;
    int fromBoundary = 0, fromPosition = 0, toBoundary = 0, toPosition = 0;
    double weight = 0;
    std::vector<double> heads; ///< attention edges: each head's part (the weight is their sum)
};

struct FlowOptions {
    double threshold = 0.04; ///< τ; 0 = the whole graph
    bool renormalise = true;
    int position = -1;       ///< output position P the graph is pruned from; -1 = the last
};

struct FlowGraph {
    FlowNorm norm = FlowNorm::L1;
    FlowOptions options;      ///< position resolved
    int nLayers = 0, nPositions = 0;
    std::vector<FlowEdge> edges; ///< by layer, attention edges before the MLP's, each in (to, from) order
};

/// The graph for `options` (see the file comment). Throws InputError for a position outside the prompt or a
/// negative threshold.
FlowGraph flowGraph(const FlowContributions& contributions, const FlowOptions& options);

/// "attn", "mlp", "resid".
QString flowEdgeKindName(FlowEdge::Kind kind);

/// One neuron's part of an MLP edge: its output mlp_post[i, n]·W_out[n].
struct NeuronContribution {
    int neuron = 0;
    double weight = 0;
};

/// The MLP edge of (layer, position) split by neuron: the proximity contributions of every neuron's output
/// and of the residual resid_mid to resid_post (the tool's get_decomposed_mlp_contributions), the top `k`
/// neurons highest first; *residual receives the residual's. Throws InputError for a layer or position out of
/// range.
std::vector<NeuronContribution> mlpNeuronContributions(const Model& model, const ActivationCache& cache, int layer,
                                                       int position, FlowNorm norm, int k, double* residual = nullptr);

} // namespace attnscope
