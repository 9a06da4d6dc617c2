#include "model/analysis/comparison/stitch_json.h"

#include "model/analysis/common/json_number.h"

#include <QJsonArray>

namespace attnscope {

namespace {
} // namespace

QJsonObject stitchToJson(const StitchSweep& s, const QString& modelB) {
    const StitchVariant& v = s.variant;
    const StitchMap& m = *s.map;
    QJsonArray layers;
    for (const StitchPoint& p : s.points) {
        QJsonArray logits;
        const RowVector& last = p.predictions.lastLogits;
        for (Eigen::Index i = 0; i < last.size(); ++i) logits.append(jsonNumber(double(last(i))));
        layers.append(QJsonObject{{"k", p.k}, {"loss", jsonNumber(p.loss)}, {"loss_a", jsonNumber(p.lossA)},
                                  {"loss_b", jsonNumber(p.lossB)}, {"agree_a", jsonNumber(p.agreeA)}, {"agree_b", jsonNumber(p.agreeB)},
                                  {"norm_ratio", jsonNumber(p.normRatio)}, {"logits_last", logits}});
    }
    return {{"model_b", modelB},
            {"inverse", v.map.inverse == StitchInverse::PseudoInverse ? QStringLiteral("pinv") : QStringLiteral("transpose")},
            {"final_norm_a", v.finalNormA},
            {"embedding", v.map.side == EmbeddingSide::Input ? QStringLiteral("W_E") : QStringLiteral("W_U")},
            {"variant", v.id()},
            {"variant_label", v.label()},
            {"rcond", v.map.rcond},
            {"d_model_a", int(m.M.rows())},
            {"d_model_b", int(m.M.cols())},
            {"rank_a", m.spectrumA.rank},
            {"rank_b", m.spectrumB.rank},
            {"full_rank_b", m.spectrumB.fullRank()},
            {"identity_error", jsonNumber(m.identityError)},
            {"layers", layers}};
}

} // namespace attnscope
