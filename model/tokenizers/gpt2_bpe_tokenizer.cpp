#include "model/tokenizers/gpt2_bpe_tokenizer.h"

#include "model/core/errors.h"
#include "model/tokenizers/byte_unicode.h"
#include "model/tokenizers/token_display.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMutexLocker>
#include <cmath>
#include <functional>
#include <queue>

namespace attnscope {

namespace {

// OpenAI gpt-2 src/encoder.py, Encoder.pat.
const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

constexpr qint64 kMaxId = 1 << 24;           // ids beyond this are certainly a broken file
constexpr qsizetype kMaxCachedWordBytes = 64; // longer words are rare; don't let them fill the cache
constexpr qsizetype kMaxCacheEntries = 1 << 17;

QByteArray readFile(const QString& path) {
    QFile file(path);
    if (!file.exists()) throw ModelError(path, QStringLiteral("file not found"));
    if (!file.open(QIODevice::ReadOnly)) throw ModelError(path, QStringLiteral("cannot open: ") + file.errorString());
    return file.readAll();
}

QJsonObject parseJsonObjectOf(const QByteArray& json, const QString& path) {
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
    if (error.error != QJsonParseError::NoError)
        throw ModelError(path, QStringLiteral("invalid JSON at offset %1: %2").arg(error.offset).arg(error.errorString()));
    if (!doc.isObject()) throw ModelError(path, QStringLiteral("invalid JSON: expected an object at the top level"));
    return doc.object();
}

/// Replaces unpaired UTF-16 surrogates with U+FFFD so the regex and toUtf8 see valid text.
QString withoutLoneSurrogates(const QString& text) {
    QString out = text;
    const qsizetype n = out.size();
    for (qsizetype i = 0; i < n; ++i) {
        const QChar c = out.at(i);
        if (c.isHighSurrogate() && i + 1 < n && out.at(i + 1).isLowSurrogate()) ++i;
        else if (c.isSurrogate()) out[i] = QChar(QChar::ReplacementCharacter);
    }
    return out;
}

} // namespace

Gpt2BpeTokenizer::Gpt2BpeTokenizer()
    : pretokenizer_(QString::fromLatin1(kGpt2Pattern), QRegularExpression::UseUnicodePropertiesOption) {
    pretokenizer_.optimize();
    byteIds_.fill(-1);
}

std::unique_ptr<Gpt2BpeTokenizer> Gpt2BpeTokenizer::fromVocabAndMerges(const QString& vocabJsonPath,
                                                                      const QString& mergesPath) {
    const QByteArray vocab = readFile(vocabJsonPath);
    return fromVocabAndMergesBytes(vocab, readFile(mergesPath), vocabJsonPath, mergesPath);
}

std::unique_ptr<Gpt2BpeTokenizer> Gpt2BpeTokenizer::fromVocabAndMergesBytes(const QByteArray& vocabJson,
                                                                           const QByteArray& merges,
                                                                           const QString& vocabJsonPath,
                                                                           const QString& mergesPath) {
    std::unique_ptr<Gpt2BpeTokenizer> tok(new Gpt2BpeTokenizer);
    tok->setVocab(parseJsonObjectOf(vocabJson, vocabJsonPath), vocabJsonPath);

    tok->merges_.reserve(merges.count('\n') + 1);
    int lineNo = 0;
    for (qsizetype start = 0; start < merges.size();) {
        qsizetype end = merges.indexOf('\n', start);
        if (end < 0) end = merges.size();
        QByteArrayView line = QByteArrayView(merges).sliced(start, end - start);
        start = end + 1;
        ++lineNo;
        if (line.endsWith('\r')) line.chop(1);
        if (line.isEmpty() || (lineNo == 1 && line.startsWith("#version"))) continue;
        const QString text = QString::fromUtf8(line);
        const qsizetype space = text.indexOf(QLatin1Char(' '));
        if (space <= 0 || space == text.size() - 1 || text.indexOf(QLatin1Char(' '), space + 1) >= 0)
            throw ModelError(mergesPath, QStringLiteral("line %1: expected two tokens separated by one space, got \"%2\"").arg(lineNo).arg(text));
        tok->addMerge(QStringView(text).left(space), QStringView(text).sliced(space + 1), mergesPath,
                      Location{QLatin1String("line %1"), lineNo});
    }
    tok->finish(vocabJsonPath);
    return tok;
}

std::unique_ptr<Gpt2BpeTokenizer> Gpt2BpeTokenizer::fromTokenizerJson(const QString& path) {
    return fromTokenizerJsonBytes(readFile(path), path);
}

std::unique_ptr<Gpt2BpeTokenizer> Gpt2BpeTokenizer::fromTokenizerJsonBytes(const QByteArray& json, const QString& path) {
    const QJsonObject root = parseJsonObjectOf(json, path);
    const QJsonObject model = root.value(QStringLiteral("model")).toObject();
    const QString type = model.value(QStringLiteral("type")).toString();
    if (type != QStringLiteral("BPE"))
        throw ModelError(path, QStringLiteral("unsupported tokenizer model type \"%1\" (expected \"BPE\")").arg(type));
    if (!model.value(QStringLiteral("vocab")).isObject())
        throw ModelError(path, QStringLiteral("model.vocab is missing or not an object"));

    std::unique_ptr<Gpt2BpeTokenizer> tok(new Gpt2BpeTokenizer);
    tok->setVocab(model.value(QStringLiteral("vocab")).toObject(), path);

    const QJsonArray merges = model.value(QStringLiteral("merges")).toArray();
    tok->merges_.reserve(merges.size());
    for (qsizetype i = 0; i < merges.size(); ++i) {
        const Location where{QLatin1String("model.merges[%1]"), i};
        const QJsonValue m = merges.at(i);
        if (m.isString()) {
            const QStringList parts = m.toString().split(QLatin1Char(' '));
            if (parts.size() != 2 || parts[0].isEmpty() || parts[1].isEmpty())
                throw ModelError(path, where.text() + QStringLiteral(": expected \"a b\", got \"%1\"").arg(m.toString()));
            tok->addMerge(parts[0], parts[1], path, where);
        } else if (m.isArray() && m.toArray().size() == 2 && m.toArray().at(0).isString() && m.toArray().at(1).isString()) {
            tok->addMerge(m.toArray().at(0).toString(), m.toArray().at(1).toString(), path, where);
        } else {
            throw ModelError(path, where.text() + QStringLiteral(": expected a string \"a b\" or a pair [a, b]"));
        }
    }

    for (const QJsonValue& v : root.value(QStringLiteral("added_tokens")).toArray()) {
        const QJsonObject added = v.toObject();
        const QJsonValue id = added.value(QStringLiteral("id"));
        const QString content = added.value(QStringLiteral("content")).toString();
        if (!id.isDouble() || content.isEmpty())
            throw ModelError(path, QStringLiteral("added_tokens: entry without an integer id and content"));
        const auto existing = tok->ids_.constFind(content);
        if (existing != tok->ids_.constEnd()) {
            if (*existing == id.toInteger()) continue;
            throw ModelError(path, QStringLiteral("added token \"%1\" has id %2 but the vocabulary gives it id %3")
                                       .arg(content).arg(id.toInteger()).arg(*existing));
        }
        tok->setToken(id.toInteger(-1), content, content.toUtf8(), path);
    }
    tok->finish(path);
    return tok;
}

void Gpt2BpeTokenizer::setToken(qint64 id, const QString& string, const QByteArray& bytes, const QString& file) {
    if (id < 0 || id >= kMaxId)
        throw ModelError(file, QStringLiteral("token \"%1\" has an invalid id %2").arg(string).arg(id));
    if (string.isEmpty()) throw ModelError(file, QStringLiteral("empty token string for id %1").arg(id));
    if (qsizetype(id) >= qsizetype(strings_.size())) {
        strings_.resize(id + 1);
        bytes_.resize(id + 1);
    }
    if (!strings_[id].isEmpty())
        throw ModelError(file, QStringLiteral("id %1 is used by both \"%2\" and \"%3\"").arg(id).arg(strings_[id], string));
    strings_[id] = string;
    bytes_[id] = bytes;
    ids_.insert(QStringView(strings_[id]), int(id));
}

void Gpt2BpeTokenizer::setVocab(const QJsonObject& vocab, const QString& file) {
    ids_.reserve(vocab.size());
    strings_.reserve(vocab.size());
    bytes_.reserve(vocab.size());
    for (auto it = vocab.constBegin(); it != vocab.constEnd(); ++it) {
        const QString key = it.key(); // converted from the JSON's storage on every call
        const QJsonValue v = it.value();
        const double d = v.toDouble(-1.0);
        if (!v.isDouble() || !std::isfinite(d) || d != std::floor(d))
            throw ModelError(file, QStringLiteral("token \"%1\" has a non-integer id").arg(key));
        // range check before the cast: converting a double beyond qint64 is undefined (found by fuzz_tokenizer_files)
        if (d < 0 || d >= double(kMaxId))
            throw ModelError(file, QStringLiteral("token \"%1\" has an invalid id %2").arg(key).arg(d));
        setToken(qint64(d), key, unicodeStringToBytes(key), file);
    }
    if (ids_.isEmpty()) throw ModelError(file, QStringLiteral("the vocabulary is empty"));
}

int Gpt2BpeTokenizer::idOfMergePart(QStringView s, const QString& file, const Location& where) const {
    const auto it = ids_.constFind(s);
    if (it == ids_.constEnd())
        throw ModelError(file, where.text() + QStringLiteral(": token \"%1\" is not in the vocabulary").arg(s));
    return *it;
}

void Gpt2BpeTokenizer::addMerge(QStringView a, QStringView b, const QString& file, const Location& where) {
    const int idA = idOfMergePart(a, file, where);
    const int idB = idOfMergePart(b, file, where);
    mergedScratch_.clear(); // keeps its capacity: no allocation per merge
    mergedScratch_.append(a).append(b);
    const int merged = idOfMergePart(mergedScratch_, file, where);
    // encoder.py builds its rank table with dict(zip(merges, range(...))): a repeated merge keeps
    // its last rank.
    merges_.insert(pairKey(idA, idB), Merge{nextRank_++, merged});
}

void Gpt2BpeTokenizer::finish(const QString& file) {
    for (int b = 0; b < 256; ++b) {
        const auto it = ids_.constFind(QString(byteToUnicode(uchar(b))));
        if (it == ids_.constEnd())
            throw ModelError(file, QStringLiteral("not a byte-level BPE vocabulary: no token for byte 0x%1 (\"%2\")")
                                       .arg(b, 2, 16, QLatin1Char('0')).arg(byteToUnicode(uchar(b))));
        byteIds_[b] = *it;
    }
    bos_ = tokenId(QStringLiteral("<|endoftext|>"));
}

std::vector<int> Gpt2BpeTokenizer::bpe(QByteArrayView word) const {
    // Doubly linked list of symbols over the word's bytes; ids[i] < 0 marks a merged-away node.
    std::vector<int> ids;
    ids.reserve(word.size());
    for (char c : word) ids.push_back(byteIds_[static_cast<unsigned char>(c)]);
    const int n = int(ids.size());
    std::vector<int> next(n);
    for (int i = 0; i < n; ++i) next[i] = i + 1 < n ? i + 1 : -1;

    // encoder.py bpe(): repeatedly take the lowest-ranked adjacent pair and merge all of its
    // occurrences, left to right without overlap. A min-queue of (rank, left node) finds the
    // pair in O(log n) instead of rescanning the word, so very long words stay fast.
    using Entry = std::pair<int, int>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
    std::vector<int> prev(n);
    for (int i = 0; i < n; ++i) prev[i] = i - 1;
    auto rankAt = [&](int left) -> const Merge* {
        if (left < 0 || ids[left] < 0 || next[left] < 0) return nullptr;
        const auto it = merges_.constFind(pairKey(ids[left], ids[next[left]]));
        return it == merges_.constEnd() ? nullptr : &*it;
    };
    auto push = [&](int left) {
        if (const Merge* m = rankAt(left)) queue.push({m->rank, left});
    };
    for (int i = 0; i + 1 < n; ++i) push(i);

    std::vector<int> mergedAt;
    while (!queue.empty()) {
        const int rank = queue.top().first;
        mergedAt.clear();
        // Entries of one rank all name the same pair; the queue yields them in word order.
        while (!queue.empty() && queue.top().first == rank) {
            const int left = queue.top().second;
            queue.pop();
            const Merge* m = rankAt(left);
            if (!m || m->rank != rank) continue; // stale: a node changed since it was queued
            const int right = next[left];
            ids[left] = m->id;
            ids[right] = -1;
            next[left] = next[right];
            if (next[right] >= 0) prev[next[right]] = left;
            mergedAt.push_back(left);
        }
        // Pairs formed by the new symbols; none has this rank (a merged symbol is longer than
        // either part), so they belong to later rounds.
        for (int left : mergedAt) {
            if (ids[left] < 0) continue;
            push(prev[left]);
            push(left);
        }
    }
    std::vector<int> out;
    for (int i = 0; i >= 0 && i < n; i = next[i]) out.push_back(ids[i]);
    return out;
}

std::vector<int> Gpt2BpeTokenizer::encode(const QString& text) const {
    const QString clean = withoutLoneSurrogates(text);
    std::vector<int> out;
    auto encodeWord = [&](QStringView piece) {
        const QByteArray word = piece.toUtf8();
        const bool cacheable = word.size() <= kMaxCachedWordBytes;
        if (cacheable) {
            QMutexLocker lock(&cacheMutex_);
            const auto it = cache_.constFind(word);
            if (it != cache_.constEnd()) {
                out.insert(out.end(), it->begin(), it->end());
                return;
            }
        }
        const std::vector<int> ids = bpe(word);
        out.insert(out.end(), ids.begin(), ids.end());
        if (cacheable) {
            QMutexLocker lock(&cacheMutex_);
            if (cache_.size() >= kMaxCacheEntries) cache_.clear();
            cache_.insert(word, ids);
        }
    };
    // The pattern's alternatives cover every character, so matches tile the text; any gap (which
    // would be a regex-engine surprise) is still encoded so that decode(encode(s)) == s.
    qsizetype pos = 0;
    auto it = pretokenizer_.globalMatch(clean);
    while (it.hasNext()) {
        const QRegularExpressionMatch m = it.next();
        if (m.capturedStart() > pos) encodeWord(QStringView(clean).sliced(pos, m.capturedStart() - pos));
        encodeWord(m.capturedView());
        pos = m.capturedEnd();
    }
    if (pos < clean.size()) encodeWord(QStringView(clean).sliced(pos));
    return out;
}

QByteArray Gpt2BpeTokenizer::tokenBytes(int id) const {
    return id >= 0 && id < vocabSize() ? bytes_[id] : QByteArray();
}

QByteArray Gpt2BpeTokenizer::decodeBytes(std::span<const int> ids) const {
    QByteArray out;
    for (int id : ids) out += tokenBytes(id);
    return out;
}

QString Gpt2BpeTokenizer::displayToken(int id) const { return displayTokenBytes(tokenBytes(id)); }

QString Gpt2BpeTokenizer::tokenString(int id) const {
    return id >= 0 && id < vocabSize() ? strings_[id] : QString();
}

std::optional<int> Gpt2BpeTokenizer::tokenId(const QString& tokenString) const {
    const auto it = ids_.constFind(tokenString);
    return it == ids_.constEnd() ? std::nullopt : std::optional<int>(*it);
}

} // namespace attnscope
