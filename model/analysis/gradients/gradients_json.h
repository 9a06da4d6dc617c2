#pragma once
// JSON of --gradients for the command line's --dump-json (docs/cli.md):
//   "gradients": {"metric": {"kind", "tokens", "token_ids", "description"}, "position", "value", "run": "prompt"|"corrupted",
//                 "token_ids", "tokens", "stop_gradients": ["norm", "pattern", "mlp"], "first_non_finite": null | hook,
//                 "hooks": {"hook_embed": [[…]], "blocks.0.hook_resid_pre": [[…]], …, "blocks.0.attn.hook_pattern": [[[…]]]},
//                 "conventions"}
// Each hook holds ∂metric/∂(that activation) in the layout of the cache: [pos][d_model], [pos][n_heads·d_head],
// [pos][d_mlp], the pattern [head][query][key]. NaN is written as null.
//   "saliency":  {"method": "ig"|"grad-x-input", "steps", "baseline": "zero"|{"token", "token_id"}, "metric", "position",
//                 "token_ids", "tokens", "attributions": [per token], "metric_input", "metric_baseline", "sum",
//                 "completeness_error", "conventions"}
//   "edge_attribution": {"method": "eap"|"eap-ig", "steps", "metric", "position", "clean", "corrupt", "n_edges",
//                 "edges": [{"source", "target", "name", "score", "in_circuit"}] (EAP-IG's names, graph order),
//                 "circuit": {"top", "edges", "metric", "recovered"}, "conventions"}

#include "model/analysis/gradients/edge_attribution.h"
#include "model/analysis/gradients/input_attribution.h"
#include "model/analysis/gradients/metric_gradients.h"
#include "model/tokenizers/tokenizer.h"

#include <QJsonObject>

namespace attnscope {

/// "norm", "pattern", "mlp" for the switches that are on.
QStringList stopGradientNames(const StopGradients& stops);
/// Parses --stop-gradient's comma-separated list (norm, pattern, mlp; "" = none). Throws InputError naming an
/// unknown entry.
StopGradients parseStopGradients(const QString& list);

/// The object above; `corrupted`: the gradient was taken on the corrupted run.
QJsonObject gradientsToJson(const MetricGradients& g, const Tokenizer& tokenizer, bool corrupted);

/// The "saliency" object above.
QJsonObject inputAttributionToJson(const InputAttribution& a, const Tokenizer& tokenizer, std::span<const int> tokens);

/// The "edge_attribution" object above: every edge of `a` with its score, the circuit `circuit` (indices into
/// a.graph.edges, the top `top` by |score|) and its faithfulness `f`.
QJsonObject edgeAttributionToJson(const EdgeAttribution& a, const Tokenizer& tokenizer, std::span<const int> circuit, int top,
                                  const CircuitFaithfulness& f);

} // namespace attnscope
