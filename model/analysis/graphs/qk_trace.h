#pragma once
// Why a head attends there, in the graph's own nodes (QK tracing: circuit-tracer issue #53; Neuronpedia's
// qk_tracing_results). An attribution graph freezes every pattern; this explains one cell of one.
//
// In the frozen replacement model (replacement_model.h: patterns, norm divisors and Qwen 3 / Gemma q/k-norm divisors
// held, MLPs replaced by transcoders plus error nodes) resid_pre of layer L is a sum over the graph's sources — every
// active feature, each error node, each token embedding — of their writes carried up through frozen attention and
// skip paths, plus a constant (biases, positional embeddings, the BOS position's MLP outputs). Head h's rotated
// query at position q is affine in it: ln_1 with σ frozen, W_Q^h + b_Q, the q-norm with its divisor frozen, RoPE at q.
// So, with c_q(s) [d_head] what source s adds to the query and q0 the constant (likewise c_k, k0 at key position k):
//   q = Σ_s c_q(s) + q0,   k = Σ_s' c_k(s') + k0
//   score = scale · q·k = Σ_{s,s'} scale c_q(s)·c_k(s')  +  scale q0·Σc_k  +  scale Σc_q·k0  +  scale q0·k0
// the pre-softmax score before any soft-cap (Gemma 2), scale = 1/√d_head or query_pre_attn_scalar^−½. The c vectors
// come from the graph's backward (graph_backward.h): W_Q^h's d_head directions (and W_K^h's) injected behind the
// frozen ln_1 at (L, q) and (L, k) and contracted with every source: 2·d_head rows. The constants come from a forward
// of the frozen model with every source removed (replacementResidPre), so the sum against the clean run's score
// (checkError) checks the backward against a forward.
// Marginals, as Neuronpedia's: a q-side source's scale c_q(s)·k (the k side whole), a k-side source's scale q·c_k(s').

#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/graph_backward.h"

#include <map>
#include <tuple>
#include <vector>

namespace attnscope {

/// One contributor's part of the score: `column` indexes QkTracer::columns().
struct QkContributor {
    int column = -1;
    double attribution = 0;
};

/// One (q-side source, k-side source) term: scale · c_q(q)·c_k(k).
struct QkPair {
    int q = -1, k = -1; ///< QkTracer::columns() indices
    double attribution = 0;
};

/// The c vectors of one cell (QkTracer::sides): what each column adds to the head's rotated query and key.
struct QkSides {
    int layer = 0, head = 0, query = 0, key = 0;
    double scale = 0;       ///< the score's scale (ModelConfig::attnScale)
    Matrix cq, ck;          ///< [d_head, columns]: c_q(s), c_k(s) of every column
    Eigen::VectorXd q0, k0; ///< [d_head] the constant parts (the forward with no source)
    Eigen::VectorXd q, k;   ///< [d_head] the clean run's rotated query and key of the head
};

struct QkTrace {
    int layer = 0, head = 0, query = 0, key = 0;
    double score = 0;      ///< scale·q·k of the clean run: pre-softmax, before any soft-cap
    double constant = 0;   ///< scale q0·k0
    double qConstant = 0;  ///< scale q0·Σ_s' c_k(s'): the query's constant part against the key's sources
    double kConstant = 0;  ///< scale Σ_s c_q(s)·k0: the query's sources against the key's constant part
    double pairsTotal = 0; ///< Σ over every pair (listed or not)
    double checkError = 0; ///< |pairsTotal + qConstant + kConstant + constant − score|
    float pattern = 0;     ///< the clean pattern cell P_h[query, key]
    std::vector<QkPair> pairs;                         ///< the largest |attribution| first, at most `top`
    std::vector<QkContributor> qMarginals, kMarginals; ///< scale c_q(s)·k and scale q·c_k(s'), largest |·| first, at most `top`
};

/// Traces cells of one prompt's replacement model. Holds every active feature's writes ([writes, d_model] float32, as
/// attributeGraph's sources) and the column space they and the error and token nodes make.
class QkTracer {
public:
    /// Reads what every active feature writes. Throws InputError when that and one trace's rows would exceed the memory
    /// budget (with both sizes).
    explicit QkTracer(const ReplacementModel& rm);

    /// The columns: every active feature (by layer, position, feature id), then an error node per (layer, position),
    /// then a token per position, as GraphNodes (an attribution graph's order before any bound on its feature nodes).
    const std::vector<GraphNode>& columns() const { return columns_; }
    int errorOffset() const { return errorOffset_; }
    int tokenOffset() const { return tokenOffset_; }

    /// c_q and c_k of head `head` of `layer` at (query, key) for every column, and the constants. Throws InputError for a
    /// layer, head or position out of range, a key after the query or outside the layer's sliding window (masked).
    /// Cancelled between backward batches when `progress` says so.
    QkSides sides(int layer, int head, int query, int key, const Progress& progress = {}) const;

    /// The trace: the `top` largest pairs and marginals (exact top-`top` by |attribution|; ties by column), the constants
    /// and the check. Errors as sides().
    QkTrace trace(int layer, int head, int query, int key, int top = 50, const Progress& progress = {}) const;

    /// The cell with some sources removed (columns(): a feature's activation, an error node's vector or a token's
    /// embedding set to zero) in the frozen replacement model: resid_pre of `layer` run forward without them, then the
    /// head's scores over the query's keys by hand (ln_1, q/k norms with the clean divisors; the soft-cap and the mask
    /// applied) and the softmax, so the pattern cell moves as the other keys' scores move too. Errors as sides(), and an
    /// InputError for a column out of range.
    struct Ablation {
        double scoreBefore = 0, scoreAfter = 0;     ///< the pre-softmax score (before any soft-cap) of (query, key)
        double patternBefore = 0, patternAfter = 0; ///< P_h[query, key]
    };
    Ablation ablate(int layer, int head, int query, int key, const std::vector<int>& columns) const;

    /// The index in `graph`'s nodes of column `column` (a feature by layer, position and id; an error by layer and
    /// position; a token by position), or −1 when the graph has no such node (a feature its bound left out). `graph`
    /// must be built from the same replacement model.
    int graphNode(const AttributionGraph& graph, int column) const;

private:
    const ReplacementModel& rm_;
    std::vector<GraphNode> columns_;
    int errorOffset_ = 0, tokenOffset_ = 0;
    std::vector<LayerSources> sources_;
};

/// Bytes a QkTracer holds and one trace allocates beyond the replacement model: the features' writes (`writes` vectors
/// of d_model floats), the c vectors [2·d_head, columns] and one backward batch.
qint64 qkTraceBytes(const ModelConfig& cfg, int nPositions, qint64 writes, qint64 columns);

/// Scale · c_q(s)·c_k(s') for every pair, the largest `top` by |·| (ties: lower q column, then lower k column), without
/// forming all of them: pairs are visited by decreasing ‖c_q‖·‖c_k‖ and the search stops when that bound is below the
/// top-th |attribution| found. cq, ck [d_head, columns].
std::vector<QkPair> topQkPairs(const Matrix& cq, const Matrix& ck, double scale, int top);

} // namespace attnscope
