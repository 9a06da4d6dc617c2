#pragma once
// Finding NaN/Inf weights, so the UI can say which tensors broke a forward pass. Such a model still
// loads and runs (its results are NaN); this only names the culprits.

#include "model/transformer/model.h"

#include <QStringList>

namespace attnscope {

/// Canonical names (TransformerLens style: "W_E", "blocks.0.attn.W_Q", "blocks.1.mlp.b_out", ...)
/// of the weights that hold a NaN or ±Inf, in model order; empty for a healthy model. Resolves
/// every layer (as a forward pass does). At most `maxNames` names are returned.
QStringList nonFiniteWeights(const Model& model, int maxNames = 20);

} // namespace attnscope
