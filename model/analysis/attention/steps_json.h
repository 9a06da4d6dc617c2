#pragma once
// JSON form of the attention steps, for export and for the command line:
// {"layer": l, "head": h, "steps": [{"name", "formula", "axes", "meaning", "note", "kind",
//   "shape": [rows, cols], "values": [[…], …], "token_ids": […] (embed only)}]}
// Masked cells (NaN in AttentionStep::values) are written as null.

#include "model/analysis/attention/attention_steps.h"

#include <QJsonArray>
#include <QJsonObject>

namespace attnscope {

/// values [rows, cols] -> [[row 0], [row 1], …]; NaN entries become QJsonValue::Null.
QJsonArray matrixToJson(const Matrix& values);

/// One step as a JSON object (keys listed in the file comment; "note" only when non-empty).
QJsonObject attentionStepToJson(const AttentionStep& step);

/// All steps of one head: {"layer", "head", "steps": [...]}.
QJsonObject attentionStepsToJson(const std::vector<AttentionStep>& steps, int layer, int head);

} // namespace attnscope
