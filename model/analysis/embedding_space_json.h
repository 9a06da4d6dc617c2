#pragma once
// JSON for the command line (and exports) of the embedding-space analyses. Formats:
//   pair projection:   {"projection": "ov"|"qk", "layer": L, "head": H,
//                       "top": [{"row_token_id": r, "col_token_id": c, "score": s}, ...]}   highest first
//   neuron projection: {"projection": "ffkey"|"ffvalue", "layer": L, "neuron": N,
//                       "top": [{"token_id": t, "score": s}, ...],
//                       "bottom": [{"token_id": t, "score": s}, ...]}                       bottom: lowest first
//   logit lens:        [{"layer": "embed"|"L{l}attn"|"L{l}mlp", "position": p,
//                        "top": [{"token_id": t, "prob": q}, ...]}, ...]   (the value of a "logit_lens" key)

#include "model/analysis/embedding_projection.h"
#include "model/analysis/logit_lens.h"

#include <QJsonArray>
#include <QJsonObject>

namespace attnscope {

/// "ov" / "qk".
QString pairProjectionName(PairProjectionKind kind);
/// "ffkey" / "ffvalue".
QString neuronVectorName(NeuronVectorKind kind);

QJsonObject toJson(const PairProjection& p);
QJsonObject toJson(const NeuronProjection& p);
/// The array for a "logit_lens" key; boundary names from the model config.
QJsonArray logitLensToJson(const ModelConfig& cfg, const std::vector<LensCell>& cells);

} // namespace attnscope
