#pragma once
// The backward pass of the frozen replacement model (replacement_model.h) for attribution-graph targets: a target's
// value injected at its input (a feature's W_enc[f] at its transcoder's input, a logit's u_t at ln_final of the last
// position) and carried down the residual stream, through each layer's skip transcoder (if any; the rest of the
// MLP is a stop-gradient) and its attention (only V and W_O, with the clean pattern) behind ln_1's frozen divisor.
// Targets run in batches: G [targets·pos, d_model], row b·T + p the gradient of target b at position p.

#include "model/analysis/graphs/attribution_graph.h"

#include <functional>
#include <vector>

namespace attnscope {

/// Where the backward is when it calls its observer: at resid_post of `layer` before that layer's MLP (skip)
/// is crossed, or at resid_mid before its attention.
enum class BackwardHop { Mlp, Attention };

/// Where a gradient enters the backward: above `layer`'s hop `first` (resid_post of the last layer, first hop Mlp,
/// for a logit; resid_mid of a feature's layer, first hop Attention, for a feature).
struct InjectionPoint {
    int layer = 0;
    BackwardHop first = BackwardHop::Mlp;
    bool operator==(const InjectionPoint&) const = default;
};

/// The gradient of one target where it is injected [pos, d_model], and where that is.
struct TargetGradient {
    Matrix G;
    InjectionPoint at;
};

/// W_U's mean column, Σ_v W_U[:, v] / d_vocab [d_model] (summed in double).
RowVector meanUnembedding(const Model& model);

/// A target node's injected gradient (a feature or logit node of `graph`; InputError for another). `meanU`: the
/// model's meanUnembedding, computed here when null.
TargetGradient targetGradient(const ReplacementModel& rm, const AttributionGraph& graph, int node, const RowVector* meanU = nullptr);

/// What a source node writes [d_model]: a feature a·∂x̂/∂f (a·W_dec[f]) at its layer's MLP output, an error node its
/// error vector there, a token its embedding row at hook_embed (a cross-layer feature: what it writes at its own layer).
RowVector sourceVector(const ReplacementModel& rm, const AttributionGraph& graph, int node);

/// Where a source node writes and what: (layer, vector) pairs, the layer −1 for a token (hook_embed). One pair but for
/// a cross-layer transcoder's feature, which writes a·W_dec_i[f, j − i] at every layer j ≥ its layer i.
std::vector<std::pair<int, RowVector>> sourceWrites(const ReplacementModel& rm, const AttributionGraph& graph, int node);

/// The feature sources written at one layer, grouped by position: rows [begin[p], begin[p + 1]) are position p's.
struct LayerSources {
    Matrix vectors;        ///< [n, d_model] sourceVector of each
    std::vector<int> node; ///< [n] their node indices
    std::vector<int> begin;
};

/// Where a batch's edges go: target b's edges into the row rows[b] (a float array over the graph's column space:
/// every active feature, then errors, tokens and logits, AttributionGraph's order before any bound on the feature
/// nodes). Written: the feature columns (added: a cross-layer feature writes at several layers), the error columns
/// errorOffset + layer·T + pos and the token columns tokenOffset + pos.
struct EdgeRows {
    std::vector<float*> rows;                           ///< [batch]
    const std::vector<LayerSources>* sources = nullptr; ///< [layer] the feature sources (LayerSources::node: columns)
    int errorOffset = 0, tokenOffset = 0;
};

class GraphBackward {
public:
    /// observer(layer, hop, G): called before each hop is crossed, with the gradient above it.
    using Observer = std::function<void(int layer, BackwardHop hop, const Matrix& G)>;

    explicit GraphBackward(const ReplacementModel& rm);

    /// Carries G [batch·pos, d_model], injected at `at`, down to the embeddings, calling `observer` before each hop.
    /// Returns the gradient at the embeddings [batch·pos, d_model].
    Matrix carry(Matrix G, InjectionPoint at, const Observer& observer = {}) const;
    /// The same walk, writing the edges from every source into `out` (EdgeRows): at each layer, the sources
    /// written at its MLP output and its error nodes, then at the bottom the token embeddings.
    void attribute(Matrix G, InjectionPoint at, const EdgeRows& out) const;

    /// Layer l's attention alone: ln_1ᵀ(W_V (Pᵀ (G' W_Oᵀ))) per head summed, σ of ln_1 frozen ([rows, d_model]); G' is G
    /// carried back through the post-attention norm with its σ frozen (Gemma 2), else G itself.
    Matrix attentionBack(int l, const Matrix& G) const;
    /// attentionBack split by head: [n_heads·rows, d_model], block h (rows h·rows … (h+1)·rows − 1) head h's part alone,
    /// ln_1ᵀ(W_V^h (P_hᵀ (G' W_O^hᵀ))); the blocks sum to attentionBack(l, G) (up to float rounding). rows: a multiple of
    /// the prompt's positions.
    Matrix attentionBackByHead(int l, const Matrix& G) const;
    /// G' above: the gradient at z·W_O + b_O, before a post-attention norm [rows, d_model] (G itself without one).
    Matrix beforeAttnPostNorm(int l, const Matrix& G) const;
    /// A skip transcoder's linear path back to resid_mid (empty matrix when layer l's transcoder has no W_skip).
    Matrix skipBack(int l, const Matrix& G) const;

    const RowVector& ln1Gain(int l) const { return w1_[size_t(l)]; }
    const RowVector& ln2Gain(int l) const { return w2_[size_t(l)]; }

private:
    Matrix walk(Matrix G, InjectionPoint at, const EdgeRows* out, const Observer& observer) const;
    Matrix valuePathBack(int l, const Matrix& G, bool byHead) const;
    void contract(int l, const Matrix& G, const EdgeRows& out) const;

    const ReplacementModel& rm_;
    const ModelConfig& cfg_;
    const int T_;
    std::vector<RowVector> w1_, w2_, w1post_;
};

/// The backward of a norm whose divisor σ [pos] is frozen, added into G: G.row(r) += C(dy.row(r) ⊙ w) / σ[r mod T]
/// (C centres a row for LayerNorm; RMSNorm has no centring).
void addFrozenNormBackward(const ModelConfig& cfg, const Matrix& dy, const RowVector& w, const Vector& sigma, int T, Matrix& G);

} // namespace attnscope
