#pragma once
// Head loadings (circuit-tracer PR #114 "head loadings", for its issue #53): one edge of an attribution graph split
// across the heads of ONE chosen attention layer L. In the frozen replacement model (replacement_model.h) an edge
// A[t, s] is v_s · (the target's gradient carried down to where s writes), a sum over linear paths; every path from a
// write below layer L up to a target above L's attention crosses L's attention block exactly once, through the
// residual stream (the bypass) or through exactly one head h, and the heads add up (Elhage et al. 2021, "A
// Mathematical Framework for Transformer Circuits": an attention layer's output is the sum of its heads'). So
//   A[t, s] = bypass + Σ_h loading_h
//   G_L       = the target's gradient above layer L's attention (resid_mid of L) [pos, d_model]
//   loading_h = v_s · carry(ln_1ᵀ(W_V^h (P_hᵀ (G_L' W_O^hᵀ))))   (GraphBackward::attentionBackByHead: head h's part of
//               attentionBack, G_L' = G_L before a post-attention norm), v_s the source's writes below L
//   bypass    = v_s · carry(G_L)  +  the source's writes at L and above, taken with the target's full gradient
// where carry takes a gradient at resid_pre of L down to where each write sits (every lower layer in full: its heads,
// a skip transcoder's W_skip, frozen norms). A cross-layer transcoder's feature writes at several layers
// (sourceWrites): its writes below L are split, its writes at L and above go to the bypass. With the source written
// only at L or above, or a target whose gradient never crosses L's attention (a feature of a layer below L), the edge
// is all bypass and every loading is 0.
//
// This differs from edge_routes.h, which groups the same paths by their FIRST hop away from the source (over every
// layer); here they are grouped by which way they cross one given layer L, later hops included in each part.
// Cost: one backward of the target to L, then one batch of n_heads + 1 gradients [(H+1)·pos, d_model] down the rest.

#include "model/analysis/graphs/attribution_graph.h"

#include <vector>

namespace attnscope {

struct HeadLoadings {
    int target = -1, source = -1, layer = -1;
    double edge = 0;            ///< A[t, s] as the graph has it (float)
    double bypass = 0;          ///< the paths that do not go through a head of `layer`
    std::vector<double> heads;  ///< [n_heads] head h's loading (0 for every head when the edge cannot cross `layer`)

    double sum() const;         ///< bypass + Σ heads (= edge up to float rounding)
};

/// Whether the edge source → target of `graph` can cross layer L's attention: the source writes below L (a token, or a
/// feature or error node of a layer < L; a cross-layer feature of a layer < L) and the target's gradient crosses L's
/// attention (a logit, or a feature of layer ≥ L). Node indices must be valid.
bool crossesAttentionLayer(const AttributionGraph& graph, int target, int source, int layer);

/// The head loadings of edge source → target of `graph` (built from `rm`) at attention layer `layer`. Throws InputError,
/// naming the value, for a node index outside the graph, a layer outside 0 … n_layers − 1, a target that is no feature
/// or logit node, or a logit node as source.
HeadLoadings headLoadings(const ReplacementModel& rm, const AttributionGraph& graph, int target, int source, int layer);

} // namespace attnscope
