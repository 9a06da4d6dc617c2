#include "app/json_dump.h"

#include "model/analysis/common/token_json.h"
#include "model/analysis/common/top_tokens.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

namespace attnscope {

namespace {
QJsonArray rowToJson(const Eigen::Ref<const RowVector>& row) {
    QJsonArray a;
    for (Eigen::Index i = 0; i < row.size(); ++i) a.append(double(row(i)));
    return a;
}
} // namespace

QJsonObject promptDump(const Model& model, const ActivationCache& cache, int layer, int head) {
    const Tokenizer& tok = model.tokenizer();
    QJsonObject out;
    out["token_ids"] = tokenIdsJson(cache.tokens);
    out["tokens"] = tokenTextsJson(tok, cache.tokens);
    const int lastRow = cache.logitRow(cache.nPositions() - 1);
    if (lastRow >= 0) {
        const RowVector last = cache.logits.row(lastRow);
        QJsonArray top;
        for (const TokenScore& t : topTokens(last, 10)) {
            const int id = t.id;
            top.append(QJsonObject{{"id", id}, {"token", tokenText(tok, id)},
                                   {"logit", double(t.logit)}});
        }
        out["top_next_tokens"] = top;
        out["logits_last"] = rowToJson(last);
    }
    if (layer >= 0 && head >= 0) {
        const std::shared_ptr<const LayerCache> lc = cache.layer(layer); // recomputed in a residuals-only cache
        const Matrix& p = lc->pattern.at(size_t(head));
        QJsonArray rows;
        for (Eigen::Index i = 0; i < p.rows(); ++i) rows.append(rowToJson(p.row(i)));
        out["attention"] = QJsonObject{{"layer", layer}, {"head", head}, {"pattern", rows}};
    }
    return out;
}

bool writeJsonFile(const QJsonObject& object, const QString& path, QString* error) {
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(QJsonDocument(object).toJson(QJsonDocument::Compact)) < 0 ||
        !f.commit()) {
        if (error) *error = QStringLiteral("%1: cannot write: %2").arg(path, f.errorString());
        return false;
    }
    return true;
}

} // namespace attnscope
