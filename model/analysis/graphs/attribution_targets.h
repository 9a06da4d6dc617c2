#pragma once
// What an attribution graph explains (circuit-tracer's AttributionTargets, attribution/targets.py): by default the
// salient logits (attribution_graph.h selectLogitNodes); or chosen tokens; a logit difference; or a custom direction
// in the residual stream, read at the last position through the frozen ln_final (a transcoder feature's decoder row,
// or a d_model vector from a .npy file). Target t has a direction u_t [d_model] and a weight w_t; its value is
// u_t·ln_final(x)[last] and w_t weighs it in the influence (graph_pruning.h). A token's direction is W_U[:, t] minus
// W_U's mean column (the logit minus the mean logit) and its weight its probability; a custom target's direction and
// weight are used as given (circuit-tracer's CustomTarget), its logit node numbered d_vocab + i (its virtual index).

#include "model/analysis/graphs/replacement_model.h"

#include <QString>
#include <vector>

namespace attnscope {

struct AttributionTarget {
    QString label;        ///< what it is called in cards and files: the token, "logit( Paris) − logit( London)", …
    int tokenId = -1;     ///< a vocabulary token; −1 for a custom direction
    RowVector direction;  ///< a custom direction u [d_model]
    double weight = 1;    ///< a custom target's weight (a token's is its probability)
};

/// Parses a --graph-targets specification against the model (and, for "feature:", the transcoder set):
///   " Paris, London"            single-token strings, comma-separated (leading spaces kept: GPT-2 tokens start with one)
///   "ids: 464, 1234"            token ids
///   "diff: Paris, London"       one custom target, W_U[:, x] − W_U[:, y]: logit(x) − logit(y)
///   "feature: L:F"              transcoder L's feature F's decoder row (its direct write) as the direction
///   "vector: FILE.npy"          a float32 or float64 .npy of shape [d_model] (or [1, d_model])
/// A custom target may end in "@W" for its weight (default 1): "diff: Paris, London @0.5".
/// Throws InputError naming the specification and what is wrong (a string of several tokens, an id outside the
/// vocabulary, a vector of another width, an unreadable file, a feature outside the set).
std::vector<AttributionTarget> parseAttributionTargets(const QString& spec, const ReplacementModel& rm);

} // namespace attnscope
