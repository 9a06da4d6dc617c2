#include "model/analysis/attention/headvis_sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnscope {

namespace {

double round4(double v) { return std::nearbyint(v * 1e4) / 1e4; } // np.round(v, 4): half to even

/// The top interval's heap order: a min-heap by (max_activation, −id), the weakest sample at the front.
bool strongerThan(const HeadVisSampler::Sample& a, const HeadVisSampler::Sample& b) {
    if (a.maxActivation != b.maxActivation) return a.maxActivation > b.maxActivation;
    return a.sequenceId < b.sequenceId;
}

} // namespace

double headVisMaxActivation(const Matrix& pattern) {
    float m = 0;
    for (Eigen::Index q = 1; q < pattern.rows(); ++q)
        for (Eigen::Index k = 1; k <= q && k < pattern.cols(); ++k) m = std::max(m, pattern(q, k));
    return m;
}

SparseAttention headVisSparse(const Matrix& pattern, int topkPerRow, double threshold) {
    SparseAttention s;
    s.seqLen = int(pattern.rows());
    std::vector<int> keys;
    for (int q = 0; q < s.seqLen; ++q) {
        keys.resize(size_t(q + 1)); // causal: the keys after q are 0 and never reach the threshold
        std::iota(keys.begin(), keys.end(), 0);
        const size_t n = std::min(keys.size(), size_t(std::max(topkPerRow, 0)));
        std::partial_sort(keys.begin(), keys.begin() + qint64(n), keys.end(), [&](int a, int b) {
            return pattern(q, a) != pattern(q, b) ? pattern(q, a) > pattern(q, b) : a < b;
        });
        keys.resize(n);
        std::sort(keys.begin(), keys.end());
        for (int k : keys)
            if (pattern(q, k) >= threshold) {
                s.indices.push_back(q * s.seqLen + k);
                s.values.push_back(round4(pattern(q, k)));
            }
    }
    return s;
}

int HeadVisSampling::capacity(int bucket) const {
    if (nIntervals == 1) return std::max(samplesPerInterval, samplesPerTopInterval);
    return bucket == nIntervals - 1 ? samplesPerTopInterval : samplesPerInterval;
}

int headVisWarmupSize(qint64 nSequences) {
    const qint64 pipeline = std::max<qint64>(1, std::min<qint64>(2000, std::max<qint64>(50, nSequences / 10)));
    return int(std::max<qint64>(1, std::min(pipeline, nSequences / 2)));
}

std::vector<double> headVisBoundaries(std::vector<double> values, int nIntervals) {
    std::vector<double> b;
    if (nIntervals <= 1) return b;
    const size_t n = values.size();
    if (n == 0) return std::vector<double>(size_t(nIntervals - 1), 0.0);
    std::sort(values.begin(), values.end());
    for (int i = 1; i < nIntervals; ++i) {
        const qint64 idx = std::min<qint64>(qint64(std::nearbyint(double(i) * double(n) / nIntervals)), qint64(n) - 1);
        b.push_back(values[size_t(idx)]);
    }
    return b;
}

HeadVisSampler::HeadVisSampler(const HeadVisSampling& settings, int layer, int head) : settings_(settings) {
    const std::uint32_t base = settings.seed + std::uint32_t(31 * (1000 * layer + 100 * head)); // seed_base
    for (int i = 0; i < std::max(settings.nIntervals, 1); ++i) {
        Slot slot;
        slot.capacity = settings.capacity(i);
        slot.top = settings.isTop(i);
        slot.rng.seed(base + std::uint32_t(i));
        slots_.push_back(std::move(slot));
    }
}

void HeadVisSampler::setBoundaries(std::vector<double> boundaries) {
    boundaries_ = std::move(boundaries);
    ready_ = true;
}

int HeadVisSampler::bucketOf(double maxActivation) const {
    if (settings_.nIntervals <= 1) return 0;
    const int b = int(std::upper_bound(boundaries_.begin(), boundaries_.end(), maxActivation) - boundaries_.begin());
    return std::min(b, settings_.nIntervals - 1);
}

bool HeadVisSampler::offer(qint64 id, double maxActivation) {
    pendingSlot_ = -1;
    if (!ready_) return false;
    const int bucket = bucketOf(maxActivation);
    Slot& slot = slots_[size_t(bucket)];
    ++slot.seen;
    Sample s;
    s.interval = bucket + 1;
    s.sequenceId = id;
    s.maxActivation = maxActivation;
    if (slot.top) { // heapq.heappush, or heapreplace when the entry beats the weakest
        if (int(slot.items.size()) >= slot.capacity) {
            if (slot.capacity <= 0 || !strongerThan(s, slot.items.front())) return false;
            std::pop_heap(slot.items.begin(), slot.items.end(), strongerThan);
            slot.items.pop_back();
        }
        slot.items.push_back(std::move(s));
        std::push_heap(slot.items.begin(), slot.items.end(), strongerThan);
    } else if (int(slot.items.size()) < slot.capacity) { // Algorithm R
        slot.items.push_back(std::move(s));
    } else {
        const std::uint32_t idx = slot.rng() % std::uint32_t(slot.seen); // randrange(n_seen)
        if (idx >= std::uint32_t(slot.capacity)) return false;
        slot.items[idx] = std::move(s);
    }
    pendingSlot_ = bucket;
    pendingId_ = id;
    return true;
}

void HeadVisSampler::keep(SparseAttention attention) {
    if (pendingSlot_ < 0) return;
    for (Sample& s : slots_[size_t(pendingSlot_)].items)
        if (s.sequenceId == pendingId_) s.attention = std::move(attention);
    pendingSlot_ = -1;
}

std::vector<HeadVisSampler::Sample> HeadVisSampler::samples() const {
    std::vector<Sample> out;
    for (const Slot& slot : slots_) {
        std::vector<Sample> items = slot.items;
        if (slot.top) std::sort(items.begin(), items.end(), strongerThan);
        out.insert(out.end(), items.begin(), items.end());
    }
    return out;
}

} // namespace attnscope
