#pragma once
// The JSON the CLI's --dump-json writes for a prompt (schema in docs/cli.md).

#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"

#include <QJsonObject>

namespace attnscope {

/// {"token_ids", "tokens" (decoded text of each token), "top_next_tokens" (10 × {id, token, logit}),
///  "logits_last" [d_vocab], and "attention": {layer, head, pattern [S][S]} when layer/head ≥ 0}.
/// Requires the logits of the last position in `cache`.
QJsonObject promptDump(const Model& model, const ActivationCache& cache, int layer = -1, int head = -1);

/// Writes a JSON object to `path` (compact). Returns false and sets error on failure.
bool writeJsonFile(const QJsonObject& object, const QString& path, QString* error);

} // namespace attnscope
