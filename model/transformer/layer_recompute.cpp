#include "model/transformer/layer_recompute.h"

#include "model/core/errors.h"

#include <QCoreApplication>

namespace attnscope {

void keepResidualFields(const LayerCache& full, LayerCache& kept) {
    kept.resid_pre = full.resid_pre;
    kept.resid_mid = full.resid_mid;
    kept.resid_post = full.resid_post;
    kept.attn_out = full.attn_out;
    kept.mlp_out = full.mlp_out;
    kept.z = full.z;
}

LayerRecomputer::LayerRecomputer(const Model& model, ForwardOptions options, int capacity)
    : options_(std::move(options)), capacity_(std::max(1, capacity)) {
    model_ = model.weak_from_this().lock();
    if (!model_) model_ = std::shared_ptr<const Model>(std::shared_ptr<const Model>(), &model); // not owned: caller keeps it
    const size_t n = size_t(std::max(0, model.config().n_layers));
    live_.resize(n);
    pending_.resize(n);
}

std::shared_ptr<const LayerCache> LayerRecomputer::findLocked(int l) {
    for (auto it = lru_.begin(); it != lru_.end(); ++it)
        if (it->first == l) {
            lru_.splice(lru_.begin(), lru_, it); // most recently used
            return lru_.front().second;
        }
    if (auto held = live_[size_t(l)].lock()) { // still held by a caller: back into the LRU
        lru_.emplace_front(l, held);
        if (int(lru_.size()) > capacity_) lru_.pop_back();
        return held;
    }
    return nullptr;
}

std::shared_ptr<const LayerCache> LayerRecomputer::layer(const ActivationCache& cache, int l, const Progress& progress) {
    if (l < 0 || l >= int(live_.size()) || l >= cache.nLayers())
        throw InputError(QCoreApplication::translate("analysis", "The activation cache has no layer %1.").arg(l));
    std::promise<std::shared_ptr<const LayerCache>> promise;
    for (;;) {
        std::unique_lock lock(mutex_);
        if (auto found = findLocked(l)) return found;
        if (!pending_[size_t(l)].valid()) {
            pending_[size_t(l)] = promise.get_future().share(); // this thread computes it
            break;
        }
        auto wait = pending_[size_t(l)];
        lock.unlock();
        try {
            return wait.get(); // rethrows the computing thread's error
        } catch (const Cancelled&) {
            // the computing thread was cancelled, not this caller: try again
        }
        if (progress.isCancelled && progress.isCancelled()) throw Cancelled();
    }
    std::shared_ptr<const LayerCache> result;
    try {
        auto c = std::make_shared<LayerCache>();
        {
            std::lock_guard compute(computeMutex_);
            if (progress.isCancelled && progress.isCancelled()) throw Cancelled();
            c->resid_pre = cache.layers[size_t(l)].resid_pre;
            runBlock(*model_, l, *c, options_);
        }
        result = std::move(c);
    } catch (...) {
        {
            std::lock_guard lock(mutex_);
            pending_[size_t(l)] = {};
        }
        promise.set_exception(std::current_exception());
        throw;
    }
    {
        std::lock_guard lock(mutex_);
        ++recomputations_;
        live_[size_t(l)] = result;
        lru_.emplace_front(l, result);
        if (int(lru_.size()) > capacity_) lru_.pop_back();
        pending_[size_t(l)] = {};
    }
    promise.set_value(result);
    return result;
}

bool LayerRecomputer::isReady(int l) const {
    std::lock_guard lock(mutex_);
    if (l < 0 || l >= int(live_.size())) return false;
    for (const auto& entry : lru_)
        if (entry.first == l) return true;
    return !live_[size_t(l)].expired();
}

int LayerRecomputer::nHeads() const { return model_->config().n_heads; }

int LayerRecomputer::cachedLayers() const {
    std::lock_guard lock(mutex_);
    return int(lru_.size());
}

int LayerRecomputer::recomputations() const {
    std::lock_guard lock(mutex_);
    return recomputations_;
}

} // namespace attnscope
