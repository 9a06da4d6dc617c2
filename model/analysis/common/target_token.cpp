#include "model/analysis/common/target_token.h"

#include "model/core/errors.h"

#include <QStringList>

namespace attnscope {

namespace {
QString quoted(const QString& s) { return QLatin1Char('\'') + s + QLatin1Char('\''); }
} // namespace

int tokenForText(const Tokenizer& tokenizer, const QString& text) {
    if (text.isEmpty()) throw InputError(QStringLiteral("the target token is empty"));
    const std::vector<int> ids = tokenizer.encode(text);
    if (ids.size() == 1 && tokenizer.decode(ids) == text) return ids[0];
    std::vector<int> exact;
    for (int id = 0; id < tokenizer.vocabSize() && exact.size() < 2; ++id)
        if (tokenizer.tokenBytes(id) == text.toUtf8()) exact.push_back(id); // the token's own text (SPM: ▁ as a space)
    if (exact.size() == 1) return exact[0];
    if (exact.size() > 1)
        throw InputError(QStringLiteral("%1 is ambiguous: tokens %2 and %3 both decode to it")
                             .arg(quoted(text)).arg(exact[0]).arg(exact[1]));
    QStringList pieces;
    for (int id : ids) pieces << quoted(tokenizer.decode(std::span<const int>(&id, 1)));
    throw InputError(QStringLiteral("%1 is not a single token: it encodes to %2 tokens [%3]")
                         .arg(quoted(text)).arg(ids.size()).arg(pieces.join(QStringLiteral(", "))));
}

std::pair<int, int> parseTokenPair(const Tokenizer& tokenizer, const QString& value) {
    try {
        return {tokenForText(tokenizer, value), -1};
    } catch (const InputError& whole) {
        for (int i = value.indexOf(QLatin1Char(',')); i >= 0; i = value.indexOf(QLatin1Char(','), i + 1)) {
            try {
                return {tokenForText(tokenizer, value.left(i)), tokenForText(tokenizer, value.mid(i + 1))};
            } catch (const InputError&) {
            }
        }
        if (const int i = value.indexOf(QLatin1Char(',')); i >= 0) {
            tokenForText(tokenizer, value.left(i)); // report the first half that fails
            tokenForText(tokenizer, value.mid(i + 1));
        }
        throw;
    }
}

QHash<QString, int> displayTokenIndex(const Tokenizer& tokenizer) {
    QHash<QString, int> index;
    index.reserve(tokenizer.vocabSize());
    // from the last id down, so that the first id wins on a clash
    for (int id = tokenizer.vocabSize() - 1; id >= 0; --id) index[tokenizer.displayToken(id)] = id;
    return index;
}

std::optional<int> lookupToken(const Tokenizer& tokenizer, const QHash<QString, int>& displayIndex,
                               const QString& text, QString* problem) {
    if (text.isEmpty()) {
        if (problem) *problem = QStringLiteral("no token");
        return std::nullopt;
    }
    if (auto it = displayIndex.constFind(text); it != displayIndex.constEnd()) return *it;
    if (auto id = tokenizer.tokenId(text)) return id;
    if (text.startsWith(QLatin1Char('#'))) {
        bool ok = false;
        const int id = text.mid(1).toInt(&ok);
        if (ok && id >= 0 && id < tokenizer.vocabSize()) return id;
    }
    try {
        return tokenForText(tokenizer, text);
    } catch (const InputError& e) {
        if (problem) *problem = e.message();
    }
    return std::nullopt;
}

} // namespace attnscope
