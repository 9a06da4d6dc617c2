#pragma once
// A BPE merge table on token ids and the merge loop that applies it to one word.

#include <QHash>
#include <vector>

namespace attnscope {

class BpeMerges {
public:
    /// How pairs of one rank are merged.
    enum class Order {
        /// OpenAI gpt-2 src/encoder.py bpe(): take the lowest-ranked pair, merge all its occurrences
        /// left to right, then look at the pairs this formed.
        AllOccurrences,
        /// Hugging Face tokenizers src/models/bpe/word.rs Word::merge_all: one merge at a time, lowest
        /// (rank, position) first, the pairs it formed queued at once. The two agree whenever every
        /// merge's parts come from earlier merges; they differ for merge lists that are not in
        /// training order (Llama 2's tokenizer.json, converted from SentencePiece scores).
        OneAtATime,
    };

    void reserve(qsizetype n) { merges_.reserve(n); }
    /// Adds the merge (left, right) -> merged with the next rank (its index in the list). A pair
    /// added again keeps its last rank, as encoder.py's dict and tokenizers' HashMap do.
    void add(int left, int right, int merged);
    /// Number of merges added (counting repeats).
    int size() const { return nextRank_; }
    bool contains(int left, int right) const { return merges_.contains(pairKey(left, right)); }
    /// The ids of `symbols` (one word) after merging. Linear in the word's length (times log).
    std::vector<int> apply(std::vector<int> symbols, Order order) const;

private:
    struct Merge {
        int rank;
        int id; ///< the merged token
    };
    static quint64 pairKey(int a, int b) { return (quint64(quint32(a)) << 32) | quint32(b); }

    QHash<quint64, Merge> merges_; ///< pairKey(a, b) -> rank and merged id
    int nextRank_ = 0;
};

} // namespace attnscope
