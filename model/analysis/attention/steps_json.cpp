#include "model/analysis/attention/steps_json.h"

#include <cmath>

namespace attnscope {

namespace {

QString kindName(AttentionStep::ValueKind kind) {
    switch (kind) {
    case AttentionStep::ValueKind::Signed: return QStringLiteral("signed");
    case AttentionStep::ValueKind::Probability: return QStringLiteral("probability");
    case AttentionStep::ValueKind::TokenIds: return QStringLiteral("token_ids");
    }
    return {};
}

} // namespace

QJsonArray matrixToJson(const Matrix& values) {
    QJsonArray rows;
    for (Eigen::Index i = 0; i < values.rows(); ++i) {
        QJsonArray row;
        for (Eigen::Index j = 0; j < values.cols(); ++j) {
            const float v = values(i, j);
            row.append(std::isnan(v) ? QJsonValue(QJsonValue::Null) : QJsonValue(double(v)));
        }
        rows.append(row);
    }
    return rows;
}

QJsonObject attentionStepToJson(const AttentionStep& step) {
    QJsonObject o;
    o["name"] = step.name;
    o["formula"] = step.formula;
    o["axes"] = step.shape;
    o["meaning"] = step.meaning;
    if (!step.note.isEmpty()) o["note"] = step.note;
    o["kind"] = kindName(step.kind);
    o["shape"] = QJsonArray{step.rows, step.cols};
    o["values"] = matrixToJson(step.values);
    if (!step.tokenIds.empty()) {
        QJsonArray ids;
        for (int id : step.tokenIds) ids.append(id);
        o["token_ids"] = ids;
    }
    return o;
}

QJsonObject attentionStepsToJson(const std::vector<AttentionStep>& steps, int layer, int head) {
    QJsonArray list;
    for (const AttentionStep& s : steps) list.append(attentionStepToJson(s));
    return QJsonObject{{"layer", layer}, {"head", head}, {"steps", list}};
}

} // namespace attnscope
