#include "model/analysis/embedding_space/embedding_space_json.h"

#include "model/analysis/common/token_json.h"

namespace attnscope {

namespace {
QJsonArray tokensToJson(const std::vector<ScoredToken>& tokens, const Tokenizer& tok) {
    QJsonArray a;
    for (const ScoredToken& t : tokens)
        a.append(QJsonObject{{"token_id", t.id}, {"token", tokenText(tok, t.id)}, {"score", double(t.score)}});
    return a;
}
} // namespace

QString pairProjectionName(PairProjectionKind kind) {
    return kind == PairProjectionKind::OV ? QStringLiteral("ov") : QStringLiteral("qk");
}

QString neuronVectorName(NeuronVectorKind kind) {
    return kind == NeuronVectorKind::FFKey ? QStringLiteral("ffkey") : QStringLiteral("ffvalue");
}

QJsonObject toJson(const PairProjection& p, const Tokenizer& tok) {
    QJsonArray top;
    for (const ScoredPair& s : p.top)
        top.append(QJsonObject{{"row_token_id", s.row}, {"row_token", tokenText(tok, s.row)}, {"col_token_id", s.col},
                               {"col_token", tokenText(tok, s.col)}, {"score", double(s.score)}});
    return {{"projection", pairProjectionName(p.kind)}, {"layer", p.layer}, {"head", p.head}, {"top", top}};
}

QJsonObject toJson(const NeuronProjection& p, const Tokenizer& tok) {
    return {{"projection", neuronVectorName(p.kind)}, {"layer", p.layer}, {"neuron", p.neuron},
            {"top", tokensToJson(p.top, tok)}, {"bottom", tokensToJson(p.bottom, tok)}};
}

QJsonArray logitLensToJson(const ModelConfig& cfg, const Tokenizer& tok, const std::vector<LensCell>& cells) {
    QJsonArray out;
    for (const LensCell& c : cells) {
        QJsonArray top;
        for (const TokenScore& t : c.top)
            top.append(QJsonObject{{"token_id", t.id}, {"token", tokenText(tok, t.id)}, {"prob", double(t.prob)}});
        out.append(QJsonObject{{"layer", lensBoundaryName(cfg, c.boundary)}, {"position", c.position}, {"top", top}});
    }
    return out;
}

} // namespace attnscope
