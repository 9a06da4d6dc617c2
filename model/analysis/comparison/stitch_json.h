#pragma once
// JSON of the stitching analysis (model/analysis/comparison/stitching.h) for the command line's --stitch:
//   {"model_b", "inverse": "pinv"|"transpose", "final_norm_a": bool, "embedding": "W_E"|"W_U",
//    "variant" (StitchVariant::id), "variant_label", "rcond", "d_model_a", "d_model_b",
//    "rank_a", "rank_b", "full_rank_b", "identity_error" (max |M − I|, a model stitched onto itself; else null),
//    "layers": [{"k", "loss", "loss_a", "loss_b", "agree_a", "agree_b", "norm_ratio",
//                "logits_last": [d_vocab floats]}, …]}
// Losses are mean next-token cross-entropies in nats over the text's positions 0 … S − 2; agreements are
// fractions of those positions; NaN and ±inf are written as null.

#include "model/analysis/comparison/stitching.h"

#include <QJsonObject>

namespace attnscope {

/// The object of the "stitch" key; `modelB` as the user named it.
QJsonObject stitchToJson(const StitchSweep& sweep, const QString& modelB);

} // namespace attnscope
