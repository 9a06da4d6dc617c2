#pragma once
// SentencePiece-style vocabulary tokenizer: the tokenizer of Llama 1/2, Mistral, TinyLlama and of any
// model whose vocabulary is SentencePiece pieces ("▁the", "<0x0A>"). Text is normalized by writing
// spaces as "▁" (U+2581) with a "▁" prepended (add_dummy_prefix); its characters are then merged,
// either by the score of the merged piece (SentencePiece BPE as llama.cpp llm_tokenizer_spm and
// llama2.c run.c encode() implement it) or by the rank of a merge list (Hugging Face tokenizer.json
// BPE with byte_fallback). Characters no piece spells become byte tokens <0xNN> (byte fallback).
// Built from plain arrays, so any source can feed it: llama2.c tokenizer.bin
// (llama2c_tokenizer_file.h), GGUF tokenizer.ggml.model = llama, tokenizer.json (hf_tokenizer_json.h).

#include "model/tokenizers/added_tokens.h"
#include "model/tokenizers/token_type.h"
#include "model/tokenizers/tokenizer.h"

#include <QHash>
#include <array>
#include <memory>

namespace attnscope {

class BpeMerges;

/// Everything a SentencePiece-style tokenizer is made of, as GGUF stores it (tokenizer.ggml.tokens,
/// .scores, .token_type, .bos_token_id, .eos_token_id, .unknown_token_id, .add_bos_token,
/// .add_space_prefix).
struct SpmVocab {
    /// How adjacent symbols are merged.
    enum class MergeRule {
        Scores,    ///< the pair whose merged piece has the highest score, leftmost on ties
        MergeList, ///< the pair of lowest rank in `merges` (Hugging Face BPE)
    };
    /// Where a "▁" is put before the text (the dummy prefix).
    enum class SpacePrefix {
        Always, ///< at the start and after every matched added/special token (llama.cpp, HF Prepend normalizer)
        First,  ///< at the start of the text only (HF Metaspace prepend_scheme "first")
        Never,
    };

    std::vector<QByteArray> pieces;  ///< id -> UTF-8 piece, spaces written as "▁"; "" never matches
    std::vector<float> scores;       ///< id -> score (Scores rule); may be empty with MergeList
    std::vector<TokenType> types;    ///< id -> type; empty means all Normal
    /// MergeList rule: {left, right, merged} ids in rank order.
    std::vector<std::array<int, 3>> merges;
    MergeRule rule = MergeRule::Scores;
    std::optional<int> bos, eos, unk;
    bool addBos = true;              ///< the model puts bos first (tokenizer.ggml.add_bos_token)
    SpacePrefix spacePrefix = SpacePrefix::Always;
    /// Characters outside the vocabulary become <0xNN> tokens; if false (or a byte token is missing)
    /// they become unk.
    bool byteFallback = true;
    /// Consecutive unknown characters give one unk (HF BPE fuse_unk).
    bool fuseUnknown = false;
    /// Merge within words only: the text is cut before every "▁" (HF Metaspace split = true).
    bool splitWords = false;
};

class SpmTokenizer : public Tokenizer {
public:
    /// Checks and indexes `vocab`. `source` names the file in errors. Throws ModelError(source, ...)
    /// for: no pieces; scores/types arrays whose size differs from the pieces'; a NaN score; a
    /// bos/eos/unk or merge id outside the vocabulary; text that could not be encoded at all (no
    /// byte tokens and no unk).
    static std::unique_ptr<SpmTokenizer> fromVocab(SpmVocab vocab, const QString& source);
    ~SpmTokenizer() override;

    /// Ids for `text`, without BOS (see addsBos()). User-defined tokens are matched as whole units;
    /// control and unknown tokens ("<s>") only after setMatchSpecialTokens(true). Lone UTF-16
    /// surrogates are encoded as U+FFFD. Never throws; thread-safe.
    /// Sources: llama.cpp llama-vocab.cpp (llm_tokenizer_spm_session::tokenize, and the SPM case of
    /// llama_vocab::impl::tokenize for the dummy prefix after special tokens); tokenizers
    /// src/models/bpe/model.rs (BPE::merge_word, byte_fallback) for the MergeList rule.
    std::vector<int> encode(const QString& text) const override;
    /// Pieces with "▁" as spaces and byte tokens as their bytes, joined; control tokens ("<s>")
    /// contribute nothing, and the first piece's "▁" (the dummy prefix) is dropped unless the
    /// space prefix is Never. Source: sentencepiece_processor.cc SentencePieceProcessor::Decode.
    QByteArray decodeBytes(std::span<const int> ids) const override;
    /// displayTokenBytes() of the piece with "▁" as a space ("␣the"); a byte token shows its byte
    /// ("<0x0A>" -> "↵", "<0xE4>" -> "\xE4"); "" for an unknown id.
    QString displayToken(int id) const override;
    QByteArray tokenBytes(int id) const override;
    /// The piece, e.g. "▁the", "<0x0A>", "<s>"; "" for an unknown id.
    QString tokenString(int id) const override;
    std::optional<int> tokenId(const QString& piece) const override;
    int vocabSize() const override { return int(vocab_.pieces.size()); }
    std::optional<int> bosId() const override { return vocab_.bos; }
    bool addsBos() const override { return vocab_.addBos && vocab_.bos.has_value(); }

    std::optional<int> eosId() const { return vocab_.eos; }
    /// The arrays this tokenizer was built from (without the merge list, which lives in the index).
    const SpmVocab& vocab() const { return vocab_; }
    TokenType tokenType(int id) const;
    float score(int id) const;
    /// Match control and unknown tokens ("<s>", "</s>") in the text as llama.cpp's parse_special and
    /// Hugging Face's added_tokens do. Off by default. Not thread-safe: call before sharing.
    void setMatchSpecialTokens(bool on) { added_.setMatchSpecial(on); }

protected:
    explicit SpmTokenizer(SpmVocab vocab);
    /// Checks the vocabulary and builds the lookup tables (see fromVocab for the errors).
    void index(const QString& source);

private:
    /// Ids of one normalized piece of text ("▁Hello▁world").
    void encodeNormalized(QByteArrayView text, std::vector<int>& out) const;
    void mergeByScores(QByteArrayView text, std::vector<int>& out) const;
    void mergeByList(QByteArrayView text, std::vector<int>& out) const;
    /// Ids for text no piece spells: byte tokens, or unk.
    void appendUnknown(QByteArrayView bytes, std::vector<int>& out) const;
    /// Id of a piece that may take part in merges (see isMergeable), or -1.
    int mergeableId(QByteArrayView piece) const;

    SpmVocab vocab_;
    QHash<QByteArrayView, int> ids_;       ///< every piece -> id (views into vocab_.pieces; last wins)
    QHash<QByteArrayView, int> mergeable_; ///< mergeable pieces -> id
    std::array<int, 256> byteIds_{};       ///< byte -> id of <0xNN>, or -1
    std::vector<std::int16_t> byteOf_;     ///< id -> byte of a byte token, or -1
    std::unique_ptr<BpeMerges> merges_;   ///< MergeList rule only
    AddedTokens added_;
};

} // namespace attnscope
