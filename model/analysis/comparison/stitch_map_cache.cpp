#include "model/analysis/comparison/stitch_map_cache.h"

namespace attnscope {

StitchMapCache::Entry* StitchMapCache::find(const Model* a, const Model* b, EmbeddingSide side) {
    std::erase_if(entries_, [](const Entry& e) { return e.a.expired() || e.b.expired(); });
    for (Entry& e : entries_)
        if (e.side == side && e.a.lock().get() == a && e.b.lock().get() == b) return &e;
    return nullptr;
}

std::shared_ptr<const StitchMap> StitchMapCache::get(const std::shared_ptr<const Model>& a,
                                                     const std::shared_ptr<const Model>& b,
                                                     const StitchMapOptions& options, const Progress& progress) {
    std::shared_ptr<const EmbeddingGrams> grams;
    {
        const std::lock_guard lock(mutex_);
        if (Entry* e = find(a.get(), b.get(), options.side)) {
            for (const auto& m : e->maps)
                if (m->options == options) return m;
            grams = e->grams;
        }
    }
    const bool computed = !grams;
    if (computed) grams = std::make_shared<const EmbeddingGrams>(embeddingGrams(*a, *b, options.side, progress));
    auto map = std::make_shared<const StitchMap>(stitchMapFromGrams(*grams, options));
    const std::lock_guard lock(mutex_);
    gramComputations_ += computed;
    Entry* e = find(a.get(), b.get(), options.side);
    if (!e) {
        entries_.push_front(Entry{a, b, options.side, grams, {}});
        if (int(entries_.size()) > kMaxPairs) entries_.pop_back();
        e = &entries_.front();
    }
    e->maps.push_back(map);
    return map;
}

bool StitchMapCache::hasGrams(const std::shared_ptr<const Model>& a, const std::shared_ptr<const Model>& b,
                              EmbeddingSide side) const {
    const std::lock_guard lock(mutex_);
    for (const Entry& e : entries_)
        if (e.side == side && e.a.lock() == a && e.b.lock() == b) return true;
    return false;
}

int StitchMapCache::gramComputations() const {
    const std::lock_guard lock(mutex_);
    return gramComputations_;
}

} // namespace attnscope
