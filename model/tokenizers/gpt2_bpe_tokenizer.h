#pragma once
// GPT-2 byte-level BPE: the tokenizer of GPT-2 (and of any Hugging Face model whose tokenizer is
// a byte-level "BPE" model). Exact reimplementation of OpenAI gpt-2 src/encoder.py:
// regex pretokenization, the bytes_to_unicode table, and merges applied lowest rank first.

#include "model/tokenizers/tokenizer.h"

#include <QHash>
#include <QMutex>
#include <QRegularExpression>
#include <QStringList>
#include <array>
#include <memory>

class QJsonObject;

namespace attnscope {

class Gpt2BpeTokenizer : public Tokenizer {
public:
    /// vocab.json ({token string: id}) + merges.txt ("#version" line optional, then "a b" per
    /// line, rank = order in the file). Throws ModelError naming the file (and the line for a bad
    /// merge): unreadable file, invalid JSON, bad id, merge of tokens not in the vocabulary,
    /// vocabulary without the 256 byte tokens.
    static std::unique_ptr<Gpt2BpeTokenizer> fromVocabAndMerges(const QString& vocabJsonPath, const QString& mergesPath);
    /// Hugging Face tokenizer.json: model.type "BPE", model.vocab, model.merges (as "a b" strings
    /// or [a, b] pairs), and added_tokens [{id, content}] (decoded as their plain content).
    /// Throws ModelError naming the file, as fromVocabAndMerges.
    static std::unique_ptr<Gpt2BpeTokenizer> fromTokenizerJson(const QString& path);
    /// fromVocabAndMerges on file contents already in memory; the labels name the files in errors.
    static std::unique_ptr<Gpt2BpeTokenizer> fromVocabAndMergesBytes(const QByteArray& vocabJson, const QByteArray& merges,
                                                                     const QString& vocabLabel, const QString& mergesLabel);
    /// fromTokenizerJson on file contents already in memory; `label` names the file in errors.
    static std::unique_ptr<Gpt2BpeTokenizer> fromTokenizerJsonBytes(const QByteArray& json, const QString& label);

    /// encoder.py encode(): `<|endoftext|>` in the text is ordinary text. Lone UTF-16 surrogates
    /// are encoded as U+FFFD. Thread-safe.
    std::vector<int> encode(const QString& text) const override;
    /// Bytes of all ids joined; ids outside [0, vocabSize()) or unused contribute nothing.
    QByteArray decodeBytes(std::span<const int> ids) const override;
    /// displayTokenBytes() of the token's bytes (see token_display.h); "" for an unknown id.
    QString displayToken(int id) const override;
    /// The vocabulary string, e.g. "Ġthe"; "" for an unknown id.
    QString tokenString(int id) const override;
    std::optional<int> tokenId(const QString& tokenString) const override;
    /// 1 + the largest id in the vocabulary (and added tokens).
    int vocabSize() const override { return int(strings_.size()); }
    /// Id of "<|endoftext|>" if the vocabulary has it (50256 for GPT-2).
    std::optional<int> bosId() const override { return bos_; }

    /// Number of merge rules.
    int mergeCount() const { return int(merges_.size()); }
    /// The raw bytes of one token ("" for an unknown id).
    QByteArray tokenBytes(int id) const;

private:
    struct Merge {
        int rank;
        int id; ///< the merged token
    };

    Gpt2BpeTokenizer();
    void setVocab(const QJsonObject& vocab, const QString& file);
    void setToken(qint64 id, const QString& string, const QByteArray& bytes, const QString& file);
    /// Where a merge is in its file, for error messages: pattern ("line %1") and number.
    struct Location {
        QLatin1String pattern;
        qsizetype number;
        QString text() const { return QString(pattern).arg(number); }
    };
    /// Adds merge (a, b) with the next rank; throws if a, b or a+b is not in the vocabulary.
    void addMerge(QStringView a, QStringView b, const QString& file, const Location& where);
    int idOfMergePart(QStringView s, const QString& file, const Location& where) const;
    /// Resolves the byte tokens and the BOS id; throws if a byte token is missing.
    void finish(const QString& file);
    /// encoder.py bpe() for one pretokenized word (its UTF-8 bytes).
    std::vector<int> bpe(QByteArrayView word) const;

    static quint64 pairKey(int a, int b) { return (quint64(quint32(a)) << 32) | quint32(b); }

    std::vector<QString> strings_;   ///< id -> vocabulary string (empty if the id is unused)
    std::vector<QByteArray> bytes_;  ///< id -> raw bytes
    /// Vocabulary string -> id. The views point into strings_ (QString data never moves).
    QHash<QStringView, int> ids_;
    QHash<quint64, Merge> merges_;   ///< pairKey(a, b) -> rank and merged id
    int nextRank_ = 0;               ///< rank of the next merge read (its index in the file)
    QString mergedScratch_;          ///< reused buffer for a + b while loading
    std::array<int, 256> byteIds_{}; ///< byte -> id of its single-byte token
    std::optional<int> bos_;
    QRegularExpression pretokenizer_;

    mutable QMutex cacheMutex_;
    mutable QHash<QByteArray, std::vector<int>> cache_; ///< word bytes -> ids
};

} // namespace attnscope
