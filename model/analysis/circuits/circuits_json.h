#pragma once
// JSON of the circuit tools for the command line's --dump-json (README "Circuits on the command line").
// Every object carries "conventions": what each number means (units, normalisation, index origins).
//   "patching":    {"activation", "direction", "ablation", "by_position", "position", "metric": {"kind", "tokens",
//                   "token_ids"}, "clean_token_ids", "clean_tokens", "corrupt_token_ids", "corrupt_tokens", "clean", "corrupt",
//                   "cells": [{"layer", "head" (z/q/k/v/pattern), "position" (resid_pre/attn_out/mlp_out and by
//                   position), "metric", "normalised"}, …], "conventions"}
//   "path_patching": {"direction", "position", "metric", "clean", "corrupt", "senders", "receivers",
//                   "cells": [{"sender", "receiver", "metric", "normalised"}, …], "conventions"}
//   "flow":        {"threshold", "norm": "l1"|"l2", "position", "renormalised", "boundaries",
//                   "edges": [{"from": [boundary, pos], "to": [boundary, pos], "kind": "attn"|"mlp"|"resid",
//                   "weight", "heads": […]}, …], "conventions"}
//   "attend":      {"layer", "head", "query", "key", "score", "sum", "check_error", "pattern",
//                   "terms": [{"query_component", "key_component", "value"}, …], "conventions"}
//   "composition": {"mode", "baseline", "baseline_sd", "baseline_samples",
//                   "pairs": [{"from": "L0H0", "to": "L1H2", "score", "baseline"}, …], "conventions"}
// NaN (a normalisation without endpoints, a receiver without a path) is written as null.

#include "model/analysis/circuits/activation_patching.h"
#include "model/analysis/circuits/attention_score_split.h"
#include "model/analysis/circuits/composition_scores.h"
#include "model/analysis/circuits/information_flow.h"
#include "model/analysis/circuits/path_patching.h"

#include <QJsonObject>

namespace attnscope {

/// {"kind", "tokens", "token_ids", "description"} of a patching metric.
QJsonObject metricJson(const PatchingMetric& metric, const Tokenizer& tokenizer);
/// What the metric's number means, for "conventions" ("logit[tokens[0]] − logit[tokens[1]] at position 7 …").
QString metricConvention(const PatchingMetric& metric, int position);

QJsonObject patchingToJson(const PatchingSweep& sweep, const Tokenizer& tokenizer, std::span<const int> clean,
                           std::span<const int> corrupt);
QJsonObject pathPatchingToJson(const PathPatchingResult& result, const Tokenizer& tokenizer);
QJsonObject flowGraphToJson(const FlowGraph& graph, const ModelConfig& cfg);
QJsonObject attentionScoreSplitToJson(const AttentionScoreSplit& split);
QJsonObject compositionToJson(const CompositionScores& scores);

} // namespace attnscope
