#pragma once
// JSON of the fine-tuning ranking (model/analysis/comparison/finetune_directions.h) for the command line's
// --finetune-diff:
//   {"model_a", "model_b",
//    "heads":   [{"layer", "head", "delta", "norm", "relative", "parts": {"Q": {"delta", "norm"}, "K", "V", "O"}}, …],
//    "neurons": [{"layer", "neuron", "delta", "norm", "relative", "parts": {"key", "gate", "value"}}, …],
//    "tensors": [{"name", "layer", "delta", "norm", "relative"}, …]}
// heads and neurons most changed first (relative = ‖Δθ‖ / ‖θ_A‖, Frobenius norms); tensors in model order
// (layer −1: outside the layers). A relative change of +inf (a zero parameter that changed) is null.

#include "model/analysis/comparison/finetune_directions.h"

#include <QJsonObject>

namespace attnscope {

/// The ranking; at most `maxComponents` heads and as many neurons (-1: all).
QJsonObject finetuneRankingToJson(const FinetuneRanking& ranking, const QString& modelA, const QString& modelB,
                                  int maxComponents = -1);

} // namespace attnscope
