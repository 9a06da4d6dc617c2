#include "model/analysis/common/token_json.h"

namespace attnscope {

QString tokenText(const Tokenizer& tokenizer, int id) { return utf8Text(tokenizer.tokenBytes(id)); }

QJsonArray tokenIdsJson(std::span<const int> ids) {
    QJsonArray a;
    for (int id : ids) a.append(id);
    return a;
}

QJsonArray tokenTextsJson(const Tokenizer& tokenizer, std::span<const int> ids) {
    QJsonArray a;
    for (int id : ids) a.append(tokenText(tokenizer, id));
    return a;
}

} // namespace attnscope
