#include "model/tokenizers/spm_tokenizer.h"

#include "model/core/errors.h"
#include "model/tokenizers/bpe_merges.h"
#include "model/tokenizers/lone_surrogates.h"
#include "model/tokenizers/token_display.h"

#include <cmath>
#include <queue>

namespace attnscope {

namespace {

const QByteArray kSpace = QByteArrayLiteral("\xE2\x96\x81"); // "▁" U+2581

/// Length of the UTF-8 sequence a lead byte starts (1 for a stray continuation byte), as llama.cpp
/// unicode_len_utf8.
int utf8Length(char lead) {
    const auto b = static_cast<unsigned char>(lead);
    if (b < 0x80 || b < 0xC0) return 1;
    if (b < 0xE0) return 2;
    if (b < 0xF0) return 3;
    return 4;
}

/// The byte a "<0xNN>" piece stands for (uppercase or lowercase hex), or -1.
int bytePieceValue(QByteArrayView piece) {
    if (piece.size() != 6 || !piece.startsWith("<0x") || piece.at(5) != '>') return -1;
    bool ok = false;
    const int v = piece.sliced(3, 2).toByteArray().toInt(&ok, 16);
    return ok ? v : -1;
}

} // namespace

SpmTokenizer::SpmTokenizer(SpmVocab vocab) : vocab_(std::move(vocab)) {}
SpmTokenizer::~SpmTokenizer() = default;

std::unique_ptr<SpmTokenizer> SpmTokenizer::fromVocab(SpmVocab vocab, const QString& source) {
    std::unique_ptr<SpmTokenizer> tok(new SpmTokenizer(std::move(vocab)));
    tok->index(source);
    return tok;
}

void SpmTokenizer::index(const QString& source) {
    SpmVocab& v = vocab_;
    const qsizetype n = qsizetype(v.pieces.size());
    if (n == 0) throw ModelError(source, QStringLiteral("the vocabulary is empty"));
    if (n > (1 << 24)) throw ModelError(source, QStringLiteral("the vocabulary has %1 tokens, more than 16777216").arg(n));
    if (v.scores.empty() && v.rule == SpmVocab::MergeRule::MergeList) v.scores.assign(n, 0.0f);
    if (qsizetype(v.scores.size()) != n)
        throw ModelError(source, QStringLiteral("%1 scores for %2 tokens").arg(v.scores.size()).arg(n));
    if (v.types.empty()) v.types.assign(n, TokenType::Normal);
    if (qsizetype(v.types.size()) != n)
        throw ModelError(source, QStringLiteral("%1 token types for %2 tokens").arg(v.types.size()).arg(n));
    auto checkId = [&](const std::optional<int>& id, const char* what) {
        if (id && (*id < 0 || *id >= n))
            throw ModelError(source, QStringLiteral("%1 token id %2 is outside the vocabulary (%3 tokens)")
                                         .arg(QLatin1String(what)).arg(*id).arg(n));
    };
    checkId(v.bos, "BOS");
    checkId(v.eos, "EOS");
    checkId(v.unk, "unknown");

    ids_.reserve(n);
    mergeable_.reserve(n);
    byteIds_.fill(-1);
    byteOf_.assign(n, -1);
    for (qsizetype id = 0; id < n; ++id) {
        if (std::isnan(v.scores[id])) throw ModelError(source, QStringLiteral("token %1 has a NaN score").arg(id));
        const quint8 type = quint8(v.types[id]);
        if (type > quint8(TokenType::Byte))
            throw ModelError(source, QStringLiteral("token %1 has an unknown token type %2").arg(id).arg(type));
        const QByteArray& piece = v.pieces[id];
        if (piece.isEmpty()) continue;
        ids_.insert(QByteArrayView(piece), int(id));
        if (isMergeable(v.types[id])) mergeable_.insert(QByteArrayView(piece), int(id));
        const int b = bytePieceValue(piece);
        if (b >= 0) {
            byteOf_[id] = std::int16_t(b);
            if (byteIds_[b] < 0 || v.types[id] == TokenType::Byte) byteIds_[b] = int(id);
        }
        // Matched as whole units in the text: user-defined pieces always, control/unknown on request.
        const TokenType t = v.types[id];
        if (t == TokenType::UserDefined || t == TokenType::Control || t == TokenType::Unknown)
            added_.add(utf8Text(piece), int(id), t != TokenType::UserDefined);
    }
    bool allBytes = true;
    for (int id : byteIds_) allBytes = allBytes && id >= 0;
    if (!(v.byteFallback && allBytes) && !v.unk)
        throw ModelError(source, QStringLiteral("no byte tokens <0x00>..<0xFF> and no unknown token: text outside the "
                                                "vocabulary could not be encoded"));
    if (v.rule == SpmVocab::MergeRule::MergeList) {
        merges_ = std::make_unique<BpeMerges>();
        merges_->reserve(qsizetype(v.merges.size()));
        for (size_t i = 0; i < v.merges.size(); ++i) {
            for (int id : v.merges[i])
                if (id < 0 || id >= n)
                    throw ModelError(source, QStringLiteral("merge %1 names token id %2, outside the vocabulary").arg(i).arg(id));
            merges_->add(v.merges[i][0], v.merges[i][1], v.merges[i][2]);
        }
    }
    v.merges.clear();
    v.merges.shrink_to_fit();
}

int SpmTokenizer::mergeableId(QByteArrayView piece) const {
    const auto it = mergeable_.constFind(piece);
    return it == mergeable_.constEnd() ? -1 : *it;
}

void SpmTokenizer::appendUnknown(QByteArrayView bytes, std::vector<int>& out) const {
    if (vocab_.byteFallback) {
        bool all = true;
        for (char c : bytes) all = all && byteIds_[static_cast<unsigned char>(c)] >= 0;
        if (all) {
            for (char c : bytes) out.push_back(byteIds_[static_cast<unsigned char>(c)]);
            return;
        }
    }
    if (!vocab_.unk) return; // not reached: index() requires byte tokens or unk
    if (vocab_.fuseUnknown && !out.empty() && out.back() == *vocab_.unk) return;
    out.push_back(*vocab_.unk);
}

std::vector<int> SpmTokenizer::encode(const QString& text) const {
    const QString clean = withoutLoneSurrogates(text);
    std::vector<int> out;
    const std::vector<TextFragment> fragments = added_.split(clean);
    bool afterToken = true; // llama.cpp: is_prev_special starts true, so the text start gets the prefix
    for (const TextFragment& f : fragments) {
        if (f.token >= 0) {
            out.push_back(f.token);
            afterToken = true;
            continue;
        }
        QByteArray normalized;
        const bool prefix = vocab_.spacePrefix == SpmVocab::SpacePrefix::Always ? afterToken
                            : vocab_.spacePrefix == SpmVocab::SpacePrefix::First ? f.start == 0
                                                                                  : false;
        if (prefix) normalized = kSpace;
        normalized += QStringView(clean).sliced(f.start, f.length).toUtf8().replace(' ', kSpace);
        afterToken = false;
        if (!vocab_.splitWords) {
            encodeNormalized(normalized, out);
            continue;
        }
        // Metaspace split: each word starts at a "▁" (SplitDelimiterBehavior::MergedWithNext).
        qsizetype start = 0;
        while (start < normalized.size()) {
            qsizetype end = normalized.indexOf(kSpace, start + 1);
            if (end < 0) end = normalized.size();
            encodeNormalized(QByteArrayView(normalized).sliced(start, end - start), out);
            start = end;
        }
    }
    return out;
}

void SpmTokenizer::encodeNormalized(QByteArrayView text, std::vector<int>& out) const {
    if (text.isEmpty()) return;
    if (vocab_.rule == SpmVocab::MergeRule::Scores) mergeByScores(text, out);
    else mergeByList(text, out);
}

void SpmTokenizer::mergeByScores(QByteArrayView text, std::vector<int>& out) const {
    // llama.cpp llm_tokenizer_spm_session::tokenize: symbols are the UTF-8 characters, chained;
    // the queue holds candidate bigrams whose concatenation is a piece, highest score first and the
    // leftmost on ties (the same order as llama2.c's rescan for the best pair).
    struct Symbol {
        qsizetype start;
        qsizetype length; // 0: merged into its left neighbour
        int prev, next;
    };
    struct Bigram {
        float score;
        int left, right;
        qsizetype length;
        bool operator<(const Bigram& o) const { return score < o.score || (score == o.score && left > o.left); }
    };
    std::vector<Symbol> symbols;
    symbols.reserve(text.size());
    for (qsizetype offset = 0; offset < text.size();) {
        const qsizetype len = std::min<qsizetype>(utf8Length(text.at(offset)), text.size() - offset);
        const int index = int(symbols.size());
        symbols.push_back({offset, len, index - 1, offset + len == text.size() ? -1 : index + 1});
        offset += len;
    }
    std::priority_queue<Bigram> queue;
    auto tryAdd = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const qsizetype len = symbols[left].length + symbols[right].length;
        const int id = mergeableId(text.sliced(symbols[left].start, len));
        if (id >= 0) queue.push({vocab_.scores[id], left, right, len});
    };
    for (int i = 1; i < int(symbols.size()); ++i) tryAdd(i - 1, i);
    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& left = symbols[b.left];
        Symbol& right = symbols[b.right];
        if (left.length == 0 || right.length == 0 || left.length + right.length != b.length) continue; // stale
        left.length += right.length;
        right.length = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = b.left;
        tryAdd(left.prev, b.left);
        tryAdd(b.left, left.next);
    }
    for (int i = 0; i >= 0 && i < int(symbols.size()); i = symbols[i].next) {
        const QByteArrayView piece = text.sliced(symbols[i].start, symbols[i].length);
        const int id = mergeableId(piece);
        if (id >= 0) out.push_back(id);
        else appendUnknown(piece, out); // only single characters are left unmatched
    }
}

void SpmTokenizer::mergeByList(QByteArrayView text, std::vector<int>& out) const {
    // tokenizers BPE::merge_word: each character is its piece, or its <0xNN> bytes (byte_fallback),
    // or unk; then the merges by rank.
    std::vector<int> symbols;
    symbols.reserve(text.size());
    for (qsizetype offset = 0; offset < text.size();) {
        const qsizetype len = std::min<qsizetype>(utf8Length(text.at(offset)), text.size() - offset);
        const QByteArrayView ch = text.sliced(offset, len);
        const int id = mergeableId(ch);
        if (id >= 0) symbols.push_back(id);
        else appendUnknown(ch, symbols);
        offset += len;
    }
    const std::vector<int> merged = merges_->apply(std::move(symbols), BpeMerges::Order::OneAtATime);
    out.insert(out.end(), merged.begin(), merged.end());
}

TokenType SpmTokenizer::tokenType(int id) const {
    return id >= 0 && id < vocabSize() ? vocab_.types[id] : TokenType::Undefined;
}

float SpmTokenizer::score(int id) const { return id >= 0 && id < vocabSize() ? vocab_.scores[id] : 0.0f; }

QByteArray SpmTokenizer::decodeBytes(std::span<const int> ids) const {
    QByteArray out;
    bool atStart = vocab_.spacePrefix != SpmVocab::SpacePrefix::Never;
    for (int id : ids) {
        if (id < 0 || id >= vocabSize()) continue;
        const TokenType type = vocab_.types[id];
        if (type == TokenType::Control) continue; // invisible, and the next piece is still at the start
        if (type == TokenType::Byte && byteOf_[id] >= 0) {
            out += char(byteOf_[id]);
            atStart = false;
            continue;
        }
        QByteArrayView piece = vocab_.pieces[id];
        if (atStart && piece.startsWith(kSpace)) piece = piece.sliced(kSpace.size());
        if (!vocab_.pieces[id].isEmpty()) atStart = false;
        out += piece.toByteArray().replace(kSpace, " ");
    }
    return out;
}

QByteArray SpmTokenizer::tokenBytes(int id) const {
    if (id < 0 || id >= vocabSize()) return {};
    if (vocab_.types[id] == TokenType::Control) return vocab_.pieces[id]; // "<s>": shown, though it spells no text
    if (vocab_.types[id] == TokenType::Byte && byteOf_[id] >= 0) return QByteArray(1, char(byteOf_[id]));
    return QByteArray(vocab_.pieces[id]).replace(kSpace, " ");
}

QString SpmTokenizer::displayToken(int id) const {
    if (id < 0 || id >= vocabSize()) return displayUnknownId(id);
    if (vocab_.types[id] == TokenType::Byte && byteOf_[id] >= 0) return displayTokenBytes(QByteArray(1, char(byteOf_[id])));
    return displayTokenBytes(QByteArray(vocab_.pieces[id]).replace(kSpace, " "));
}

QString SpmTokenizer::tokenString(int id) const {
    return id >= 0 && id < vocabSize() ? utf8Text(vocab_.pieces[id]) : QString();
}

std::optional<int> SpmTokenizer::tokenId(const QString& piece) const {
    const QByteArray utf8 = piece.toUtf8();
    const auto it = ids_.constFind(QByteArrayView(utf8));
    return it == ids_.constEnd() ? std::nullopt : std::optional<int>(*it);
}

} // namespace attnscope
