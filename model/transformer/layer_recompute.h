#pragma once
// On-demand recomputation of the layers a residuals-only ActivationCache did not keep: runBlock from
// the stored resid_pre with the options and ablations of the original pass (so bitwise identical), a
// bounded LRU of recomputed layers, and thread-safe sharing of layers callers still hold.

#include "model/transformer/activation_cache.h"
#include "model/transformer/forward.h"

#include <condition_variable>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

namespace attnscope {

/// Copies the fields a residuals-only cache keeps ([pos, d_model]-sized: resid_pre, resid_mid, resid_post,
/// attn_out, mlp_out; z [pos, n_heads*d_head]) from a full layer into `kept` (other fields left empty).
void keepResidualFields(const LayerCache& full, LayerCache& kept);

/// Recomputes layers of one residuals-only cache. Holds the model (shared when it is owned by a
/// shared_ptr, else the caller keeps it alive) and the forward options of the pass.
/// Memory: at most capacity() recomputed layers stay in the LRU; layers a caller still holds (the
/// shared_ptr from layer()) are reused, not recomputed, and are not counted. One recomputation runs at a
/// time per cache (runBlock already uses every core); callers asking for a layer being computed wait for it.
class LayerRecomputer {
public:
    /// options: the effective options of the pass (cacheHeadResults and ablations apply to recomputed
    /// layers). capacity: LRU bound in layers, at least 1.
    LayerRecomputer(const Model& model, ForwardOptions options, int capacity);

    /// Layer l of `cache` with every field, recomputed from cache.layers[l].resid_pre unless in the LRU or
    /// still held. Thread-safe. Throws what runBlock throws (the next call retries), and Cancelled when
    /// `progress` is cancelled before the computation starts (checked after waiting for another one).
    std::shared_ptr<const LayerCache> layer(const ActivationCache& cache, int l, const Progress& progress = {});
    /// True when layer(cache, l) would not compute.
    bool isReady(int l) const;

    int capacity() const { return capacity_; }
    /// Layers in the LRU now (≤ capacity()).
    int cachedLayers() const;
    /// How many times runBlock ran (for tests and benchmarks).
    int recomputations() const;
    const ForwardOptions& options() const { return options_; }
    int nHeads() const;

private:
    std::shared_ptr<const LayerCache> findLocked(int l);

    std::shared_ptr<const Model> model_;
    ForwardOptions options_;
    int capacity_;
    mutable std::mutex mutex_;                                   ///< guards everything below
    std::list<std::pair<int, std::shared_ptr<const LayerCache>>> lru_; ///< most recent first
    std::vector<std::weak_ptr<const LayerCache>> live_;          ///< [layer] every layer handed out
    std::vector<std::shared_future<std::shared_ptr<const LayerCache>>> pending_; ///< [layer] being computed
    int recomputations_ = 0;
    std::mutex computeMutex_; ///< one runBlock at a time
};

} // namespace attnscope
