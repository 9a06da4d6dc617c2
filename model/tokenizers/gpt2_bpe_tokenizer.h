#pragma once
// Byte-level BPE: the tokenizer of GPT-2 and of every Hugging Face model whose tokenizer is a
// byte-level "BPE" model (Llama 3, Qwen2, SmolLM, GGUF tokenizer.ggml.model = gpt2). Text is cut by
// regex pretokenizers (GPT-2's pattern, or the Split patterns of tokenizer.json), each piece's UTF-8
// bytes are spelled with the bytes_to_unicode table and merged by rank.
// Sources: OpenAI gpt-2 src/encoder.py (the pattern, bytes_to_unicode, bpe()); Hugging Face
// tokenizers src/pre_tokenizers/{byte_level,split}.rs and src/models/bpe/{model,word}.rs.

#include "model/tokenizers/added_tokens.h"
#include "model/tokenizers/bpe_merges.h"
#include "model/tokenizers/hf_json_parts.h"
#include "model/tokenizers/token_type.h"
#include "model/tokenizers/tokenizer.h"

#include <QHash>
#include <QMutex>
#include <QRegularExpression>
#include <QStringList>
#include <array>
#include <memory>

class QJsonObject;

namespace attnscope {

/// How a byte-level BPE cuts and merges text, as tokenizer.json or GGUF's tokenizer.ggml.pre says.
struct ByteLevelOptions {
    /// Regexes applied in turn, each match and each gap between matches becoming a piece
    /// (tokenizers Split with behavior Isolated). Default: GPT-2's pattern (gpt2Pattern()).
    QStringList splitPatterns;
    /// Prepend a space to text that does not start with one (ByteLevel add_prefix_space).
    bool addPrefixSpace = false;
    /// A piece that is a vocabulary token as a whole is that token, merges or not (BPE ignore_merges,
    /// Llama 3).
    bool ignoreMerges = false;
    /// Unicode normalization of the text first (tokenizer.json normalizer NFC/NFKC/...; Qwen2 has NFC).
    std::optional<QString::NormalizationForm> normalization;
    BpeMerges::Order order = BpeMerges::Order::OneAtATime;
};

class Gpt2BpeTokenizer : public Tokenizer {
public:
    /// OpenAI gpt-2 src/encoder.py's pretokenizer pattern (Encoder.pat).
    static QString gpt2Pattern();

    /// vocab.json ({token string: id}) + merges.txt ("#version" line optional, then "a b" per
    /// line, rank = order in the file). Throws ModelError naming the file (and the line for a bad
    /// merge): unreadable file, invalid JSON, bad id, merge of tokens not in the vocabulary,
    /// vocabulary without the 256 byte tokens. Merged as encoder.py does (AllOccurrences); BOS is
    /// "<|endoftext|>" if present, added by default (the TransformerLens convention).
    static std::unique_ptr<Gpt2BpeTokenizer> fromVocabAndMerges(const QString& vocabJsonPath, const QString& mergesPath);
    /// Hugging Face tokenizer.json of a byte-level BPE (hf_tokenizer_json.h picks the kind): model.vocab,
    /// model.merges (as "a b" strings or [a, b] pairs), added_tokens [{id, content, special}] (decoded as
    /// their plain content), pre_tokenizer (ByteLevel, Split with behavior Isolated, in a Sequence;
    /// none means GPT-2's), normalizer (NFC, NFKC, NFD, NFKD), model.ignore_merges, and BOS from
    /// the post_processor and tokenizer_config.json beside the file (see hfBos; "<|endoftext|>"
    /// otherwise). Throws ModelError naming the file, as fromVocabAndMerges, and for an unsupported
    /// pre_tokenizer or normalizer or an invalid Split regex.
    static std::unique_ptr<Gpt2BpeTokenizer> fromTokenizerJson(const QString& path);
    /// fromVocabAndMerges on file contents already in memory; the labels name the files in errors.
    static std::unique_ptr<Gpt2BpeTokenizer> fromVocabAndMergesBytes(const QByteArray& vocabJson, const QByteArray& merges,
                                                                     const QString& vocabLabel, const QString& mergesLabel);
    /// fromTokenizerJson on file contents already in memory; `label` names the file in errors; no
    /// tokenizer_config.json is read.
    static std::unique_ptr<Gpt2BpeTokenizer> fromTokenizerJsonBytes(const QByteArray& json, const QString& label);
    /// fromTokenizerJson on the parsed file and its tokenizer_config.json.
    static std::unique_ptr<Gpt2BpeTokenizer> fromTokenizerJsonObject(const QJsonObject& root, const HfTokenizerConfig& config,
                                                                     const QString& label);
    /// From arrays, as GGUF tokenizer.ggml.model = gpt2 stores them: `tokens` (id -> byte-level
    /// string, e.g. "Ġthe"; control and user-defined tokens in plain text, e.g. "<|endoftext|>"),
    /// `merges` ("a b" in rank order), `types` (empty: all Normal), `bos`, whether it is added.
    /// Throws ModelError(label, ...) for an empty or duplicate token, a merge of tokens not in the
    /// vocabulary ("merges[i]: ..."), a missing byte token, types of the wrong size, a bos outside
    /// the vocabulary, an invalid split pattern.
    static std::unique_ptr<Gpt2BpeTokenizer> fromTokensAndMerges(const std::vector<QString>& tokens, const QStringList& merges,
                                                                 const std::vector<TokenType>& types, std::optional<int> bos,
                                                                 bool addBos, const ByteLevelOptions& options, const QString& label);

    /// Pretokenize, then BPE per piece. Added tokens that are not special are matched as whole
    /// units; special ones (`<|endoftext|>`) only after setMatchSpecialTokens(true), otherwise they
    /// are ordinary text, as in encoder.py. Lone UTF-16 surrogates are encoded as U+FFFD. Thread-safe.
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
    /// "<|endoftext|>" (50256 for GPT-2) unless the file names another BOS (Llama 3: <|begin_of_text|>).
    std::optional<int> bosId() const override { return bos_; }
    bool addsBos() const override { return addsBos_ && bos_.has_value(); }

    /// Match special added tokens ("<|endoftext|>", "<|begin_of_text|>") in the text as Hugging
    /// Face does by default. Off by default. Not thread-safe: call before sharing.
    void setMatchSpecialTokens(bool on) { added_.setMatchSpecial(on); }
    /// The pieces encode() merges within: the text after normalization, cut at added tokens (which
    /// are left out) and by the pretokenizer regexes. For tests and diagnostics.
    QStringList pretokenize(const QString& text) const;
    /// Number of merge rules.
    int mergeCount() const { return merges_.size(); }
    /// The raw bytes of one token ("" for an unknown id).
    QByteArray tokenBytes(int id) const;

private:
    Gpt2BpeTokenizer();
    void setToken(qint64 id, const QString& string, const QByteArray& bytes, const QString& file);
    /// Adds merge (a, b) with the next rank; throws if a, b or a+b is not in the vocabulary.
    void addMerge(QStringView a, QStringView b, const QString& file, const MergeLocation& where);
    int idOfMergePart(QStringView s, const QString& file, const MergeLocation& where) const;
    /// Resolves the byte tokens; throws if a byte token is missing.
    void finish(const QString& file);
    void setOptions(const ByteLevelOptions& options, const QString& file);
    /// Calls `piece` for every pretokenized piece of `text` (normalized), `token` for every matched added token.
    template <typename Piece, typename Token>
    void forEachPiece(const QString& text, Piece piece, Token token) const;
    /// The ids of one pretokenized piece (its UTF-8 bytes), cached.
    void encodeWord(QStringView piece, std::vector<int>& out) const;
    /// encoder.py bpe() for one pretokenized word (its UTF-8 bytes).
    std::vector<int> bpe(QByteArrayView word) const;

    std::vector<QString> strings_;   ///< id -> vocabulary string (empty if the id is unused)
    std::vector<QByteArray> bytes_;  ///< id -> raw bytes
    /// Vocabulary string -> id. The views point into strings_ (QString data never moves).
    QHash<QStringView, int> ids_;
    BpeMerges merges_;
    QString mergedScratch_;          ///< reused buffer for a + b while loading
    std::array<int, 256> byteIds_{}; ///< byte -> id of its single-byte token
    std::optional<int> bos_;
    bool addsBos_ = true;
    ByteLevelOptions options_;
    std::vector<QRegularExpression> pretokenizers_;
    AddedTokens added_;

    mutable QMutex cacheMutex_;
    mutable QHash<QByteArray, std::vector<int>> cache_; ///< word bytes -> ids
};

} // namespace attnscope
