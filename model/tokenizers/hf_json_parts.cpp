#include "model/tokenizers/hf_json_parts.h"

#include "model/core/errors.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <cmath>

namespace attnscope {

namespace {
constexpr qint64 kMaxId = 1 << 24; // ids beyond this are certainly a broken file

// `json` with every byte-order mark but a leading one (the file's signature, which the parser skips) written as
// the escape \ufeff. Qt's JSON parser drops a raw U+FEFF at the start of a string, so Llama 2's tokenizer.json
// token 30143 "\ufeff" (written raw) became "" and unmatchable; the escape is kept. EF BB BF is always U+FEFF
// in UTF-8 (EF is a lead byte), and one outside a string is invalid JSON either way.
QByteArray withEscapedByteOrderMarks(const QByteArray& json) {
    const QByteArray bom("\xEF\xBB\xBF");
    const qsizetype from = json.startsWith(bom) ? bom.size() : 0;
    if (json.indexOf(bom, from) < 0) return json;
    return json.left(from) + json.sliced(from).replace(bom, "\\ufeff");
}
} // namespace

QByteArray readTokenizerFile(const QString& path) {
    QFile file(path);
    if (!file.exists()) throw ModelError(path, QStringLiteral("file not found"));
    if (!file.open(QIODevice::ReadOnly)) throw ModelError(path, QStringLiteral("cannot open: ") + file.errorString());
    return file.readAll();
}

QJsonObject parseTokenizerJsonObject(const QByteArray& json, const QString& file) {
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(withEscapedByteOrderMarks(json), &error);
    if (error.error != QJsonParseError::NoError)
        throw ModelError(file, QStringLiteral("invalid JSON at offset %1: %2").arg(error.offset).arg(error.errorString()));
    if (!doc.isObject()) throw ModelError(file, QStringLiteral("invalid JSON: expected an object at the top level"));
    return doc.object();
}

std::vector<QString> readHfVocab(const QJsonObject& vocab, const QString& file, bool allowEmptyToken) {
    std::vector<QString> tokens;
    std::vector<bool> used;
    tokens.reserve(vocab.size());
    for (auto it = vocab.constBegin(); it != vocab.constEnd(); ++it) {
        const QString key = it.key();
        const QJsonValue v = it.value();
        const double d = v.toDouble(-1.0);
        if (!v.isDouble() || !std::isfinite(d) || d != std::floor(d))
            throw ModelError(file, QStringLiteral("token \"%1\" has a non-integer id").arg(key));
        // range check before the cast: converting a double beyond qint64 is undefined (found by fuzz_tokenizer_files)
        if (d < 0 || d >= double(kMaxId)) throw ModelError(file, QStringLiteral("token \"%1\" has an invalid id %2").arg(key).arg(d));
        const auto id = size_t(d);
        if (key.isEmpty() && !allowEmptyToken) throw ModelError(file, QStringLiteral("empty token string for id %1").arg(id));
        if (id >= tokens.size()) {
            tokens.resize(id + 1);
            used.resize(id + 1);
        }
        if (used[id]) throw ModelError(file, QStringLiteral("id %1 is used by both \"%2\" and \"%3\"").arg(id).arg(tokens[id], key));
        tokens[id] = key;
        used[id] = true;
    }
    if (tokens.empty()) throw ModelError(file, QStringLiteral("the vocabulary is empty"));
    return tokens;
}

std::vector<std::pair<QString, QString>> readHfMerges(const QJsonValue& value, const QString& file) {
    const QJsonArray merges = value.toArray();
    std::vector<std::pair<QString, QString>> out;
    out.reserve(merges.size());
    for (qsizetype i = 0; i < merges.size(); ++i) {
        const QString where = QStringLiteral("model.merges[%1]").arg(i);
        const QJsonValue m = merges.at(i);
        if (m.isString()) {
            const QString s = m.toString();
            const qsizetype space = s.indexOf(QLatin1Char(' '));
            if (space <= 0 || space == s.size() - 1 || s.indexOf(QLatin1Char(' '), space + 1) >= 0)
                throw ModelError(file, where + QStringLiteral(": expected \"a b\", got \"%1\"").arg(s));
            out.emplace_back(s.left(space), s.sliced(space + 1));
        } else if (m.isArray() && m.toArray().size() == 2 && m.toArray().at(0).isString() && m.toArray().at(1).isString()) {
            out.emplace_back(m.toArray().at(0).toString(), m.toArray().at(1).toString());
        } else {
            throw ModelError(file, where + QStringLiteral(": expected a string \"a b\" or a pair [a, b]"));
        }
    }
    return out;
}

std::vector<HfAddedToken> readHfAddedTokens(const QJsonObject& root, const QString& file) {
    std::vector<HfAddedToken> out;
    for (const QJsonValue& v : root.value(QStringLiteral("added_tokens")).toArray()) {
        const QJsonObject added = v.toObject();
        const QJsonValue id = added.value(QStringLiteral("id"));
        const QString content = added.value(QStringLiteral("content")).toString();
        const double d = id.toDouble(-1.0);
        if (!id.isDouble() || content.isEmpty() || d != std::floor(d))
            throw ModelError(file, QStringLiteral("added_tokens: entry without an integer id and content"));
        if (d < 0 || d >= double(kMaxId))
            throw ModelError(file, QStringLiteral("token \"%1\" has an invalid id %2").arg(content).arg(d));
        out.push_back({int(d), content, added.value(QStringLiteral("special")).toBool()});
    }
    return out;
}

void placeHfAddedTokens(std::vector<QString>& tokens, const std::vector<HfAddedToken>& added, const QString& file) {
    QHash<QString, int> index; // built only if an added token is not already at its id
    for (const HfAddedToken& a : added) {
        const size_t id = size_t(a.id);
        if (id < tokens.size() && tokens[id] == a.content) continue;
        if (index.isEmpty()) {
            index.reserve(qsizetype(tokens.size()));
            for (size_t i = 0; i < tokens.size(); ++i)
                if (!tokens[i].isEmpty()) index.insert(tokens[i], int(i));
        }
        const auto existing = index.constFind(a.content);
        if (existing != index.constEnd())
            throw ModelError(file, QStringLiteral("added token \"%1\" has id %2 but the vocabulary gives it id %3")
                                       .arg(a.content).arg(a.id).arg(*existing));
        if (id < tokens.size() && !tokens[id].isEmpty())
            throw ModelError(file, QStringLiteral("id %1 is used by both \"%2\" and \"%3\"").arg(id).arg(tokens[id], a.content));
        if (id >= tokens.size()) tokens.resize(id + 1);
        tokens[id] = a.content;
        index.insert(a.content, a.id);
    }
}

HfTokenizerConfig parseHfTokenizerConfig(const QByteArray& json, const QString& file) {
    const QJsonObject root = parseTokenizerJsonObject(json, file);
    HfTokenizerConfig config;
    const QJsonValue add = root.value(QStringLiteral("add_bos_token"));
    if (add.isBool()) config.addBosToken = add.toBool();
    if (root.contains(QStringLiteral("bos_token"))) {
        config.bosTokenGiven = true;
        const QJsonValue bos = root.value(QStringLiteral("bos_token"));
        if (bos.isString()) config.bosToken = bos.toString();
        else if (bos.isObject()) config.bosToken = bos.toObject().value(QStringLiteral("content")).toString();
    }
    return config;
}

HfTokenizerConfig siblingTokenizerConfig(const QString& tokenizerJsonPath) {
    const QString path = QFileInfo(tokenizerJsonPath).dir().filePath(QStringLiteral("tokenizer_config.json"));
    if (!QFileInfo(path).isFile()) return HfTokenizerConfig{};
    return parseHfTokenizerConfig(readTokenizerFile(path), path);
}

namespace {

/// The SpecialToken a TemplateProcessing "single" template starts with: none if it starts with the
/// sequence, nullopt if there is no TemplateProcessing.
std::optional<std::optional<QString>> templateBos(const QJsonObject& processor) {
    const QString type = processor.value(QStringLiteral("type")).toString();
    if (type == QStringLiteral("Sequence")) {
        for (const QJsonValue& p : processor.value(QStringLiteral("processors")).toArray())
            if (auto found = templateBos(p.toObject())) return found;
        return std::nullopt;
    }
    if (type != QStringLiteral("TemplateProcessing")) return std::nullopt;
    const QJsonArray single = processor.value(QStringLiteral("single")).toArray();
    const QJsonObject first = single.isEmpty() ? QJsonObject() : single.first().toObject();
    if (!first.contains(QStringLiteral("SpecialToken"))) return std::optional<QString>();
    const QString name = first.value(QStringLiteral("SpecialToken")).toObject().value(QStringLiteral("id")).toString();
    // special_tokens maps the template's name to the tokens it stands for.
    const QJsonArray tokens = processor.value(QStringLiteral("special_tokens")).toObject().value(name).toObject()
                                  .value(QStringLiteral("tokens")).toArray();
    return std::optional<QString>(tokens.size() == 1 ? tokens.first().toString() : name);
}

} // namespace

HfBos hfBos(const QJsonObject& root, const HfTokenizerConfig& config, const std::optional<QString>& fallback, bool fallbackAdd) {
    HfBos bos{fallback, fallbackAdd};
    if (const auto fromTemplate = templateBos(root.value(QStringLiteral("post_processor")).toObject())) {
        bos.add = fromTemplate->has_value();
        if (*fromTemplate) bos.token = **fromTemplate;
    }
    if (config.bosTokenGiven) bos.token = config.bosToken;
    if (config.addBosToken) bos.add = *config.addBosToken;
    if (!bos.token) bos.add = false;
    return bos;
}

} // namespace attnscope
