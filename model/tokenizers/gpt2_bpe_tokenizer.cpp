#include "model/tokenizers/gpt2_bpe_tokenizer.h"

#include "model/core/errors.h"
#include "model/tokenizers/byte_unicode.h"
#include "model/tokenizers/lone_surrogates.h"
#include "model/tokenizers/token_display.h"

#include <QJsonArray>
#include <QMutexLocker>

namespace attnscope {

namespace {

// OpenAI gpt-2 src/encoder.py, Encoder.pat (also tokenizers' ByteLevel with use_regex).
const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

constexpr qsizetype kMaxCachedWordBytes = 64; // longer words are rare; don't let them fill the cache
constexpr qsizetype kMaxCacheEntries = 1 << 17;

QString typeOf(const QJsonObject& o) { return o.value(QStringLiteral("type")).toString(); }

/// Collects the pretokenizer settings of one tokenizer.json pre_tokenizer (recursing into Sequence).
/// Returns whether a ByteLevel step was seen.
bool readPreTokenizer(const QJsonObject& p, ByteLevelOptions& options, const QString& file) {
    const QString type = typeOf(p);
    if (type == QStringLiteral("Sequence")) {
        bool byteLevel = false;
        for (const QJsonValue& step : p.value(QStringLiteral("pretokenizers")).toArray())
            byteLevel = readPreTokenizer(step.toObject(), options, file) || byteLevel;
        return byteLevel;
    }
    if (type == QStringLiteral("ByteLevel")) {
        options.addPrefixSpace = p.value(QStringLiteral("add_prefix_space")).toBool(false);
        if (p.value(QStringLiteral("use_regex")).toBool(true)) options.splitPatterns << Gpt2BpeTokenizer::gpt2Pattern();
        return true;
    }
    if (type == QStringLiteral("Split")) {
        const QJsonObject pattern = p.value(QStringLiteral("pattern")).toObject();
        const QString behavior = p.value(QStringLiteral("behavior")).toString();
        if (behavior != QStringLiteral("Isolated") || p.value(QStringLiteral("invert")).toBool(false))
            throw ModelError(file, QStringLiteral("unsupported Split pre_tokenizer: behavior \"%1\"%2 (only Isolated is supported)")
                                       .arg(behavior, p.value(QStringLiteral("invert")).toBool() ? QStringLiteral(", inverted") : QString()));
        if (pattern.value(QStringLiteral("Regex")).isString()) options.splitPatterns << pattern.value(QStringLiteral("Regex")).toString();
        else if (pattern.value(QStringLiteral("String")).isString())
            options.splitPatterns << QRegularExpression::escape(pattern.value(QStringLiteral("String")).toString());
        else throw ModelError(file, QStringLiteral("Split pre_tokenizer without a Regex or String pattern"));
        return false;
    }
    if (type == QStringLiteral("Digits")) {
        options.splitPatterns << (p.value(QStringLiteral("individual_digits")).toBool() ? QStringLiteral("\\p{N}") : QStringLiteral("\\p{N}+"));
        return false;
    }
    throw ModelError(file, QStringLiteral("unsupported pre_tokenizer \"%1\" for a byte-level BPE").arg(type));
}

std::optional<QString::NormalizationForm> readNormalizer(const QJsonObject& n, const QString& file) {
    if (n.isEmpty()) return std::nullopt;
    const QString type = typeOf(n);
    if (type == QStringLiteral("Sequence")) {
        const QJsonArray steps = n.value(QStringLiteral("normalizers")).toArray();
        if (steps.isEmpty()) return std::nullopt;
        if (steps.size() == 1) return readNormalizer(steps.first().toObject(), file);
    }
    if (type == QStringLiteral("NFC")) return QString::NormalizationForm_C;
    if (type == QStringLiteral("NFD")) return QString::NormalizationForm_D;
    if (type == QStringLiteral("NFKC")) return QString::NormalizationForm_KC;
    if (type == QStringLiteral("NFKD")) return QString::NormalizationForm_KD;
    throw ModelError(file, QStringLiteral("unsupported normalizer \"%1\" for a byte-level BPE").arg(type));
}

} // namespace

QString Gpt2BpeTokenizer::gpt2Pattern() { return QString::fromLatin1(kGpt2Pattern); }

Gpt2BpeTokenizer::Gpt2BpeTokenizer() { byteIds_.fill(-1); }

std::unique_ptr<Gpt2BpeTokenizer> Gpt2BpeTokenizer::fromVocabAndMerges(const QString& vocabJsonPath,
                                                                      const QString& mergesPath) {
    const QByteArray vocab = readTokenizerFile(vocabJsonPath);
    return fromVocabAndMergesBytes(vocab, readTokenizerFile(mergesPath), vocabJsonPath, mergesPath);
}

std::unique_ptr<Gpt2BpeTokenizer> Gpt2BpeTokenizer::fromVocabAndMergesBytes(const QByteArray& vocabJson,
                                                                           const QByteArray& merges,
                                                                           const QString& vocabJsonPath,
                                                                           const QString& mergesPath) {
    std::unique_ptr<Gpt2BpeTokenizer> tok(new Gpt2BpeTokenizer);
    const std::vector<QString> tokens = readHfVocab(parseTokenizerJsonObject(vocabJson, vocabJsonPath), vocabJsonPath, false);
    for (size_t id = 0; id < tokens.size(); ++id)
        if (!tokens[id].isEmpty()) tok->setToken(qint64(id), tokens[id], unicodeStringToBytes(tokens[id]), vocabJsonPath);

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
                      MergeLocation{QLatin1String("line %1"), lineNo});
    }
    tok->finish(vocabJsonPath);
    ByteLevelOptions options;
    options.order = BpeMerges::Order::AllOccurrences;
    tok->setOptions(options, vocabJsonPath);
    tok->bos_ = tok->tokenId(QStringLiteral("<|endoftext|>"));
    return tok;
}

std::unique_ptr<Gpt2BpeTokenizer> Gpt2BpeTokenizer::fromTokenizerJson(const QString& path) {
    return fromTokenizerJsonObject(parseTokenizerJsonObject(readTokenizerFile(path), path), siblingTokenizerConfig(path), path);
}

std::unique_ptr<Gpt2BpeTokenizer> Gpt2BpeTokenizer::fromTokenizerJsonBytes(const QByteArray& json, const QString& path) {
    return fromTokenizerJsonObject(parseTokenizerJsonObject(json, path), HfTokenizerConfig{}, path);
}

std::unique_ptr<Gpt2BpeTokenizer> Gpt2BpeTokenizer::fromTokenizerJsonObject(const QJsonObject& root, const HfTokenizerConfig& config,
                                                                           const QString& path) {
    const QJsonObject model = root.value(QStringLiteral("model")).toObject();
    const QString type = typeOf(model);
    if (type != QStringLiteral("BPE"))
        throw ModelError(path, QStringLiteral("unsupported tokenizer model type \"%1\" (expected \"BPE\")").arg(type));
    if (!model.value(QStringLiteral("vocab")).isObject())
        throw ModelError(path, QStringLiteral("model.vocab is missing or not an object"));

    ByteLevelOptions options;
    const QJsonValue pre = root.value(QStringLiteral("pre_tokenizer"));
    if (pre.isObject()) {
        if (!readPreTokenizer(pre.toObject(), options, path))
            throw ModelError(path, QStringLiteral("unsupported pre_tokenizer \"%1\": no ByteLevel step, so not a byte-level BPE")
                                       .arg(typeOf(pre.toObject())));
    } else {
        options.splitPatterns << gpt2Pattern(); // files written without one are GPT-2's
    }
    options.normalization = readNormalizer(root.value(QStringLiteral("normalizer")).toObject(), path);
    options.ignoreMerges = model.value(QStringLiteral("ignore_merges")).toBool(false);

    std::unique_ptr<Gpt2BpeTokenizer> tok(new Gpt2BpeTokenizer);
    std::vector<QString> tokens = readHfVocab(model.value(QStringLiteral("vocab")).toObject(), path, false);
    const std::vector<HfAddedToken> added = readHfAddedTokens(root, path);
    const size_t vocabTokens = tokens.size();
    std::vector<bool> inVocab(vocabTokens);
    for (size_t id = 0; id < vocabTokens; ++id) inVocab[id] = !tokens[id].isEmpty();
    placeHfAddedTokens(tokens, added, path);
    for (size_t id = 0; id < tokens.size(); ++id) {
        if (tokens[id].isEmpty()) continue;
        const bool fromVocab = id < vocabTokens && inVocab[id];
        tok->setToken(qint64(id), tokens[id], fromVocab ? unicodeStringToBytes(tokens[id]) : tokens[id].toUtf8(), path);
    }
    for (const HfAddedToken& a : added) tok->added_.add(a.content, a.id, a.special);

    const auto merges = readHfMerges(model.value(QStringLiteral("merges")), path);
    tok->merges_.reserve(qsizetype(merges.size()));
    for (size_t i = 0; i < merges.size(); ++i)
        tok->addMerge(merges[i].first, merges[i].second, path, MergeLocation{QLatin1String("model.merges[%1]"), qsizetype(i)});
    tok->finish(path);
    tok->setOptions(options, path);
    const HfBos bos = hfBos(root, config, QStringLiteral("<|endoftext|>"), true);
    tok->bos_ = bos.token ? tok->tokenId(*bos.token) : std::nullopt;
    tok->addsBos_ = bos.add;
    return tok;
}

std::unique_ptr<Gpt2BpeTokenizer> Gpt2BpeTokenizer::fromTokensAndMerges(const std::vector<QString>& tokens, const QStringList& merges,
                                                                       const std::vector<TokenType>& types, std::optional<int> bos,
                                                                       bool addBos, const ByteLevelOptions& options, const QString& label) {
    if (tokens.empty()) throw ModelError(label, QStringLiteral("the vocabulary is empty"));
    if (!types.empty() && types.size() != tokens.size())
        throw ModelError(label, QStringLiteral("%1 token types for %2 tokens").arg(types.size()).arg(tokens.size()));
    if (bos && (*bos < 0 || size_t(*bos) >= tokens.size()))
        throw ModelError(label, QStringLiteral("BOS token id %1 is outside the vocabulary (%2 tokens)").arg(*bos).arg(tokens.size()));
    std::unique_ptr<Gpt2BpeTokenizer> tok(new Gpt2BpeTokenizer);
    for (size_t id = 0; id < tokens.size(); ++id) {
        const TokenType type = types.empty() ? TokenType::Normal : types[id];
        const bool plain = type == TokenType::Control || type == TokenType::UserDefined;
        tok->setToken(qint64(id), tokens[id], plain ? tokens[id].toUtf8() : unicodeStringToBytes(tokens[id]), label);
        if (plain) tok->added_.add(tokens[id], int(id), type == TokenType::Control);
    }
    tok->merges_.reserve(merges.size());
    for (qsizetype i = 0; i < merges.size(); ++i) {
        const MergeLocation where{QLatin1String("merges[%1]"), i};
        const QString& m = merges[i];
        const qsizetype space = m.indexOf(QLatin1Char(' '));
        if (space <= 0 || space == m.size() - 1 || m.indexOf(QLatin1Char(' '), space + 1) >= 0)
            throw ModelError(label, where.text() + QStringLiteral(": expected \"a b\", got \"%1\"").arg(m));
        tok->addMerge(QStringView(m).left(space), QStringView(m).sliced(space + 1), label, where);
    }
    tok->finish(label);
    tok->setOptions(options, label);
    tok->bos_ = bos;
    tok->addsBos_ = addBos;
    return tok;
}

void Gpt2BpeTokenizer::setOptions(const ByteLevelOptions& options, const QString& file) {
    options_ = options;
    if (options_.splitPatterns.isEmpty()) options_.splitPatterns << gpt2Pattern();
    pretokenizers_.clear();
    for (const QString& pattern : options_.splitPatterns) {
        QRegularExpression re(pattern, QRegularExpression::UseUnicodePropertiesOption);
        if (!re.isValid())
            throw ModelError(file, QStringLiteral("invalid pretokenizer regex at offset %1 (%2): %3")
                                       .arg(re.patternErrorOffset()).arg(re.errorString(), pattern));
        re.optimize();
        pretokenizers_.push_back(std::move(re));
    }
}

void Gpt2BpeTokenizer::setToken(qint64 id, const QString& string, const QByteArray& bytes, const QString& file) {
    if (string.isEmpty()) throw ModelError(file, QStringLiteral("empty token string for id %1").arg(id));
    if (qsizetype(id) >= qsizetype(strings_.size())) {
        strings_.resize(id + 1);
        bytes_.resize(id + 1);
    }
    if (!strings_[id].isEmpty())
        throw ModelError(file, QStringLiteral("id %1 is used by both \"%2\" and \"%3\"").arg(id).arg(strings_[id], string));
    strings_[id] = string;
    bytes_[id] = bytes;
    ids_.insert(QStringView(strings_[id]), int(id)); // a string given twice (GGUF arrays): the last id wins
}

int Gpt2BpeTokenizer::idOfMergePart(QStringView s, const QString& file, const MergeLocation& where) const {
    const auto it = ids_.constFind(s);
    if (it == ids_.constEnd())
        throw ModelError(file, where.text() + QStringLiteral(": token \"%1\" is not in the vocabulary").arg(s));
    return *it;
}

void Gpt2BpeTokenizer::addMerge(QStringView a, QStringView b, const QString& file, const MergeLocation& where) {
    const int idA = idOfMergePart(a, file, where);
    const int idB = idOfMergePart(b, file, where);
    mergedScratch_.clear(); // keeps its capacity: no allocation per merge
    mergedScratch_.append(a).append(b);
    merges_.add(idA, idB, idOfMergePart(mergedScratch_, file, where));
}

void Gpt2BpeTokenizer::finish(const QString& file) {
    for (int b = 0; b < 256; ++b) {
        const auto it = ids_.constFind(QString(byteToUnicode(uchar(b))));
        if (it == ids_.constEnd())
            throw ModelError(file, QStringLiteral("not a byte-level BPE vocabulary: no token for byte 0x%1 (\"%2\")")
                                       .arg(b, 2, 16, QLatin1Char('0')).arg(byteToUnicode(uchar(b))));
        byteIds_[b] = *it;
    }
    mergedScratch_ = QString();
}

std::vector<int> Gpt2BpeTokenizer::bpe(QByteArrayView word) const {
    if (options_.ignoreMerges) {
        const auto whole = ids_.constFind(bytesToUnicodeString(word));
        if (whole != ids_.constEnd()) return {*whole};
    }
    std::vector<int> ids;
    ids.reserve(word.size());
    for (char c : word) ids.push_back(byteIds_[static_cast<unsigned char>(c)]);
    return merges_.apply(std::move(ids), options_.order);
}

void Gpt2BpeTokenizer::encodeWord(QStringView piece, std::vector<int>& out) const {
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
}

template <typename Piece, typename Token>
void Gpt2BpeTokenizer::forEachPiece(const QString& text, Piece onPiece, Token onToken) const {
    QString clean = withoutLoneSurrogates(text);
    if (options_.normalization) clean = clean.normalized(*options_.normalization);
    // Split level `level` of `piece`: the pattern's matches and the gaps between them (Isolated),
    // each cut further by the next pattern. GPT-2's alternatives cover every character, so its
    // matches tile the text; a gap is still encoded so that decode(encode(s)) == s.
    auto split = [&](auto& self, QStringView piece, size_t level) -> void {
        if (piece.isEmpty()) return;
        if (level == pretokenizers_.size()) {
            onPiece(piece);
            return;
        }
        qsizetype pos = 0;
        auto it = pretokenizers_[level].globalMatch(piece);
        while (it.hasNext()) {
            const QRegularExpressionMatch m = it.next();
            if (m.capturedLength() == 0) continue;
            if (m.capturedStart() > pos) self(self, piece.sliced(pos, m.capturedStart() - pos), level + 1);
            self(self, piece.sliced(m.capturedStart(), m.capturedLength()), level + 1);
            pos = m.capturedEnd();
        }
        if (pos < piece.size()) self(self, piece.sliced(pos), level + 1);
    };
    for (const TextFragment& f : added_.split(clean)) {
        if (f.token >= 0) {
            onToken(f.token);
            continue;
        }
        const QStringView fragment = QStringView(clean).sliced(f.start, f.length);
        if (options_.addPrefixSpace && !fragment.startsWith(QLatin1Char(' '))) {
            const QString spaced = QLatin1Char(' ') + fragment.toString();
            split(split, spaced, 0);
        } else {
            split(split, fragment, 0);
        }
    }
}

std::vector<int> Gpt2BpeTokenizer::encode(const QString& text) const {
    std::vector<int> out;
    forEachPiece(text, [&](QStringView piece) { encodeWord(piece, out); }, [&](int token) { out.push_back(token); });
    return out;
}

QStringList Gpt2BpeTokenizer::pretokenize(const QString& text) const {
    QStringList out;
    forEachPiece(text, [&](QStringView piece) { out << piece.toString(); }, [](int) {});
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

QString Gpt2BpeTokenizer::displayToken(int id) const {
    if (id < 0 || id >= vocabSize()) return displayUnknownId(id);
    return displayTokenBytes(tokenBytes(id));
}

QString Gpt2BpeTokenizer::tokenString(int id) const {
    return id >= 0 && id < vocabSize() ? strings_[id] : QString();
}

std::optional<int> Gpt2BpeTokenizer::tokenId(const QString& tokenString) const {
    const auto it = ids_.constFind(tokenString);
    return it == ids_.constEnd() ? std::nullopt : std::optional<int>(*it);
}

} // namespace attnscope
