#include "model/analysis/comparison/finetune_json.h"

#include "model/analysis/common/json_number.h"

#include <QJsonArray>

namespace attnscope {

namespace {


QJsonArray componentsToJson(const std::vector<ComponentChange>& list, int max) {
    QJsonArray out;
    const int n = max < 0 ? int(list.size()) : std::min(max, int(list.size()));
    for (int i = 0; i < n; ++i) {
        const ComponentChange& c = list[size_t(i)];
        const auto names = ComponentChange::partNames(c.kind);
        QJsonObject parts;
        for (size_t p = 0; p < names.size(); ++p)
            if (*names[p]) parts.insert(QLatin1String(names[p]), QJsonObject{{"delta", c.partDelta[p]}, {"norm", c.partNorm[p]}});
        const bool head = c.kind == ComponentChange::Kind::Head;
        out.append(QJsonObject{{"layer", c.layer}, {head ? "head" : "neuron", c.index}, {"delta", c.delta},
                               {"norm", c.norm}, {"relative", jsonNumber(c.relative)}, {"parts", parts}});
    }
    return out;
}

} // namespace

QJsonObject finetuneRankingToJson(const FinetuneRanking& r, const QString& modelA, const QString& modelB, int max) {
    QJsonArray tensors;
    for (const TensorChange& t : r.tensors)
        tensors.append(QJsonObject{{"name", t.name}, {"layer", t.layer}, {"delta", t.delta}, {"norm", t.norm},
                                   {"relative", jsonNumber(t.relative)}});
    return {{"model_a", modelA}, {"model_b", modelB}, {"heads", componentsToJson(r.heads, max)},
            {"neurons", componentsToJson(r.neurons, max)}, {"tensors", tensors}};
}

} // namespace attnscope
