#pragma once
// Stitching maps (model/analysis/comparison/stitch_map.h) computed once per pair of models and kept: the float64
// Gram matrices and eigendecomposition per (model A, model B, embedding side) — the expensive part,
// d_vocab·d_model² — and the maps made from them per option set (pseudo-inverse or transpose, rcond).
// A k-sweep, another text or another variant of the same pair reuses them.

#include "model/analysis/comparison/stitch_map.h"

#include <deque>
#include <memory>
#include <mutex>

namespace attnscope {

class StitchMapCache {
public:
    /// Pairs kept (most recently used first); older ones are dropped.
    static constexpr int kMaxPairs = 3;

    /// The map of (a, b, options): cached, or computed now (embeddingGrams' errors, progress and Cancelled
    /// apply; the lock is not held while computing). Thread-safe. Entries whose models are gone are dropped.
    std::shared_ptr<const StitchMap> get(const std::shared_ptr<const Model>& a, const std::shared_ptr<const Model>& b,
                                         const StitchMapOptions& options, const Progress& progress = {});
    /// True when get() for this pair and side would not recompute the Gram matrices.
    bool hasGrams(const std::shared_ptr<const Model>& a, const std::shared_ptr<const Model>& b, EmbeddingSide side) const;
    /// How many times the Gram matrices were computed (tests: "once").
    int gramComputations() const;

private:
    struct Entry {
        std::weak_ptr<const Model> a, b;
        EmbeddingSide side = EmbeddingSide::Input;
        std::shared_ptr<const EmbeddingGrams> grams;
        std::vector<std::shared_ptr<const StitchMap>> maps;
    };
    /// The entry of the pair (null if none); drops entries of expired models. Caller holds the lock.
    Entry* find(const Model* a, const Model* b, EmbeddingSide side);

    mutable std::mutex mutex_;
    std::deque<Entry> entries_;
    int gramComputations_ = 0;
};

} // namespace attnscope
