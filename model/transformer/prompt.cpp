#include "model/transformer/prompt.h"

namespace attnscope {

std::vector<int> tokenizePrompt(const Tokenizer& tokenizer, const QString& text, bool prependBos) {
    std::vector<int> ids;
    const std::vector<int> body = tokenizer.encode(text);
    if (prependBos) {
        const auto bos = tokenizer.bosId();
        if (bos && (body.empty() || body.front() != *bos)) ids.push_back(*bos);
    }
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
}

QStringList tokenLabels(const Tokenizer& tokenizer, const std::vector<int>& ids) {
    QStringList labels;
    labels.reserve(qsizetype(ids.size()));
    for (int id : ids) labels << tokenizer.displayToken(id);
    return labels;
}

} // namespace attnscope
