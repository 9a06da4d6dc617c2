#pragma once
// JSON for the command line (and exports) of the embedding-space analyses. Formats:
//   pair projection:   {"projection": "ov"|"qk", "layer": L, "head": H,
//                       "top": [{"row_token_id": r, "row_token": TEXT, "col_token_id": c, "col_token": TEXT,
//                                "score": s}, ...]}                                          highest first
//   neuron projection: {"projection": "ffkey"|"ffvalue", "layer": L, "neuron": N,
//                       "top": [{"token_id": t, "token": TEXT, "score": s}, ...],
//                       "bottom": [{"token_id": t, "token": TEXT, "score": s}, ...]}      bottom: lowest first
//   logit lens:        [{"layer": "embed"|"L{l}attn"|"L{l}mlp", "position": p,
//                        "top": [{"token_id": t, "token": TEXT, "prob": q}, ...]}, ...]   (the value of a "logit_lens" key)
// TEXT is the token's bytes as UTF-8, as "tokens" and "top_next_tokens" of --dump-json spell it.

#include "model/analysis/embedding_space/embedding_projection.h"
#include "model/analysis/embedding_space/logit_lens.h"

#include <QJsonArray>
#include <QJsonObject>

namespace attnscope {

/// "ov" / "qk".
QString pairProjectionName(PairProjectionKind kind);
/// "ffkey" / "ffvalue".
QString neuronVectorName(NeuronVectorKind kind);

QJsonObject toJson(const PairProjection& p, const Tokenizer& tokenizer);
QJsonObject toJson(const NeuronProjection& p, const Tokenizer& tokenizer);
/// The array for a "logit_lens" key; boundary names from the model config.
QJsonArray logitLensToJson(const ModelConfig& cfg, const Tokenizer& tokenizer, const std::vector<LensCell>& cells);

} // namespace attnscope
