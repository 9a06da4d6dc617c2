#include "model/transformer/prompt.h"

namespace attnscope {

std::vector<int> tokenizePrompt(const Tokenizer& tokenizer, const QString& text, bool prependBos) {
    std::vector<int> ids;
    if (prependBos) {
        if (const auto bos = tokenizer.bosId()) ids.push_back(*bos);
    }
    const std::vector<int> body = tokenizer.encode(text);
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
