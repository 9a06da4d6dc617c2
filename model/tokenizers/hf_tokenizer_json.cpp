#include "model/tokenizers/hf_tokenizer_json.h"

#include "model/core/errors.h"
#include "model/tokenizers/gpt2_bpe_tokenizer.h"
#include "model/tokenizers/hf_json_parts.h"

#include <QJsonArray>

namespace attnscope {

namespace {

const QString kSpace = QStringLiteral("\u2581"); // "▁"

QString typeOf(const QJsonObject& o) { return o.value(QStringLiteral("type")).toString(); }

/// The steps of a normalizer or pre_tokenizer, with Sequences flattened.
QList<QJsonObject> steps(const QJsonValue& v, const QString& listKey) {
    QList<QJsonObject> out;
    const QJsonObject o = v.toObject();
    if (o.isEmpty()) return out;
    if (typeOf(o) == QStringLiteral("Sequence")) {
        for (const QJsonValue& s : o.value(listKey).toArray()) out += steps(s, listKey);
    } else {
        out << o;
    }
    return out;
}

QList<QJsonObject> normalizerSteps(const QJsonObject& root) { return steps(root.value(QStringLiteral("normalizer")), QStringLiteral("normalizers")); }
QList<QJsonObject> preTokenizerSteps(const QJsonObject& root) { return steps(root.value(QStringLiteral("pre_tokenizer")), QStringLiteral("pretokenizers")); }

/// The string a Replace normalizer looks for ({"String": " "}; a Regex pattern gives "").
QString replacePattern(const QJsonObject& step) {
    return step.value(QStringLiteral("pattern")).toObject().value(QStringLiteral("String")).toString();
}

} // namespace

bool isSentencePieceStyle(const QJsonObject& root) {
    if (root.value(QStringLiteral("model")).toObject().value(QStringLiteral("byte_fallback")).toBool()) return true;
    for (const QJsonObject& s : normalizerSteps(root)) {
        const QString type = typeOf(s);
        if (type == QStringLiteral("Prepend") && s.value(QStringLiteral("prepend")).toString() == kSpace) return true;
        if (type == QStringLiteral("Replace") && s.value(QStringLiteral("content")).toString() == kSpace) return true;
    }
    for (const QJsonObject& s : preTokenizerSteps(root))
        if (typeOf(s) == QStringLiteral("Metaspace")) return true;
    return false;
}

std::unique_ptr<Tokenizer> loadHfTokenizerJson(const QString& path) {
    const QJsonObject root = parseTokenizerJsonObject(readTokenizerFile(path), path);
    const HfTokenizerConfig config = siblingTokenizerConfig(path);
    if (isSentencePieceStyle(root)) return spmFromTokenizerJson(root, config, path);
    return Gpt2BpeTokenizer::fromTokenizerJsonObject(root, config, path);
}

std::unique_ptr<Tokenizer> hfTokenizerFromJsonBytes(const QByteArray& json, const QString& label) {
    const QJsonObject root = parseTokenizerJsonObject(json, label);
    if (isSentencePieceStyle(root)) return spmFromTokenizerJson(root, HfTokenizerConfig{}, label);
    return Gpt2BpeTokenizer::fromTokenizerJsonObject(root, HfTokenizerConfig{}, label);
}

std::unique_ptr<SpmTokenizer> spmFromTokenizerJson(const QJsonObject& root, const HfTokenizerConfig& config, const QString& label) {
    const QJsonObject model = root.value(QStringLiteral("model")).toObject();
    if (typeOf(model) != QStringLiteral("BPE"))
        throw ModelError(label, QStringLiteral("unsupported tokenizer model type \"%1\" (expected \"BPE\")").arg(typeOf(model)));
    if (!model.value(QStringLiteral("vocab")).isObject())
        throw ModelError(label, QStringLiteral("model.vocab is missing or not an object"));

    SpmVocab vocab;
    vocab.rule = SpmVocab::MergeRule::MergeList;
    vocab.spacePrefix = SpmVocab::SpacePrefix::Never;
    bool spacesEscaped = false;
    for (const QJsonObject& s : normalizerSteps(root)) {
        const QString type = typeOf(s);
        if (type == QStringLiteral("Prepend") && s.value(QStringLiteral("prepend")).toString() == kSpace) {
            vocab.spacePrefix = SpmVocab::SpacePrefix::Always; // normalizers run on each piece between added tokens
        } else if (type == QStringLiteral("Replace") && replacePattern(s) == QStringLiteral(" ")
                   && s.value(QStringLiteral("content")).toString() == kSpace) {
            spacesEscaped = true;
        } else {
            throw ModelError(label, QStringLiteral("unsupported normalizer \"%1\" for a SentencePiece-style BPE").arg(type));
        }
    }
    const bool normalizerEscapes = spacesEscaped;
    for (const QJsonObject& s : preTokenizerSteps(root)) {
        // Gemma (transformers GemmaConverter): Split(" ", merged_with_previous) after a Replace(" ", "▁") normalizer,
        // which has left no space to split at: nothing to do
        if (typeOf(s) == QStringLiteral("Split") && normalizerEscapes &&
            s.value(QStringLiteral("pattern")).toObject().value(QStringLiteral("String")).toString() == QStringLiteral(" "))
            continue;
        if (typeOf(s) != QStringLiteral("Metaspace") || s.value(QStringLiteral("replacement")).toString(kSpace) != kSpace)
            throw ModelError(label, QStringLiteral("unsupported pre_tokenizer \"%1\" for a SentencePiece-style BPE").arg(typeOf(s)));
        spacesEscaped = true;
        // prepend_scheme (tokenizers >= 0.14) or the older add_prefix_space flag.
        const QString scheme = s.value(QStringLiteral("prepend_scheme"))
                                   .toString(s.value(QStringLiteral("add_prefix_space")).toBool(true) ? QStringLiteral("always")
                                                                                                      : QStringLiteral("never"));
        if (scheme == QStringLiteral("always")) vocab.spacePrefix = SpmVocab::SpacePrefix::Always;
        else if (scheme == QStringLiteral("first")) vocab.spacePrefix = SpmVocab::SpacePrefix::First;
        else if (scheme == QStringLiteral("never")) vocab.spacePrefix = SpmVocab::SpacePrefix::Never;
        else throw ModelError(label, QStringLiteral("unsupported Metaspace prepend_scheme \"%1\"").arg(scheme));
        vocab.splitWords = s.value(QStringLiteral("split")).toBool(true);
    }
    if (!spacesEscaped)
        throw ModelError(label, QStringLiteral("unsupported SentencePiece-style tokenizer.json: no Replace(\" \", \"▁\") normalizer "
                                               "and no Metaspace pre_tokenizer"));

    std::vector<QString> tokens = readHfVocab(model.value(QStringLiteral("vocab")).toObject(), label, true);
    const std::vector<HfAddedToken> added = readHfAddedTokens(root, label);
    placeHfAddedTokens(tokens, added, label);
    const qsizetype n = qsizetype(tokens.size());
    QHash<QString, int> ids;
    ids.reserve(n);
    vocab.pieces.reserve(n);
    vocab.types.assign(n, TokenType::Normal);
    vocab.byteFallback = model.value(QStringLiteral("byte_fallback")).toBool(false);
    vocab.fuseUnknown = model.value(QStringLiteral("fuse_unk")).toBool(false);
    for (qsizetype id = 0; id < n; ++id) {
        vocab.pieces.push_back(tokens[id].toUtf8());
        if (tokens[id].isEmpty()) continue;
        ids.insert(tokens[id], int(id));
        const QByteArray& p = vocab.pieces.back();
        if (vocab.byteFallback && p.size() == 6 && p.startsWith("<0x") && p.endsWith('>')) vocab.types[id] = TokenType::Byte;
    }
    for (const HfAddedToken& a : added) vocab.types[a.id] = a.special ? TokenType::Control : TokenType::UserDefined;
    const QJsonValue unk = model.value(QStringLiteral("unk_token"));
    if (unk.isString()) {
        const auto it = ids.constFind(unk.toString());
        if (it == ids.constEnd()) throw ModelError(label, QStringLiteral("unk_token \"%1\" is not in the vocabulary").arg(unk.toString()));
        vocab.unk = *it;
        vocab.types[*it] = TokenType::Unknown;
    }

    const auto merges = readHfMerges(model.value(QStringLiteral("merges")), label);
    vocab.merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
        auto idOf = [&](const QString& s) {
            const auto it = ids.constFind(s);
            if (it == ids.constEnd())
                throw ModelError(label, QStringLiteral("model.merges[%1]: token \"%2\" is not in the vocabulary").arg(i).arg(s));
            return *it;
        };
        vocab.merges.push_back({idOf(merges[i].first), idOf(merges[i].second), idOf(merges[i].first + merges[i].second)});
    }

    const HfBos bos = hfBos(root, config, QStringLiteral("<s>"), false);
    if (bos.token) {
        const auto it = ids.constFind(*bos.token);
        if (it != ids.constEnd()) vocab.bos = *it;
    }
    vocab.addBos = bos.add;
    const auto eos = ids.constFind(QStringLiteral("</s>"));
    if (eos != ids.constEnd()) vocab.eos = *eos;
    return SpmTokenizer::fromVocab(std::move(vocab), label);
}

} // namespace attnscope
