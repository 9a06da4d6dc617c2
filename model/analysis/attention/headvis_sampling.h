#pragma once
// HeadVis's per-head sequence samples (Neuronpedia's pipeline, hijohnnylin/neuronpedia
// utils/neuronpedia-utils/neuronpedia_utils/headvis/compute-head-metrics.py, README "Sampling design"): each sequence's
// max_activation (the largest attention weight off position 0), the sparse COO a kept sequence is stored as, and the
// streaming sampler that keeps a few sequences per activation interval: a warmup sets equal-frequency interval
// boundaries, then the top interval keeps the top K by max_activation (a min-heap) and the others a reservoir
// (Algorithm R). The reservoir's random numbers are std::mt19937's (seeded as the pipeline seeds random.Random), not
// Python's: which lower-interval sequences are kept differs from a Python run, not how they are drawn.

#include "model/core/tensor.h"

#include <QString>
#include <cstdint>
#include <random>
#include <vector>

namespace attnscope {

/// max over query q ≥ 1 and key k ≥ 1 of pattern[q][k] (BOS sinks left out; the frontend's getRowMax / findMax);
/// 0 for fewer than 2 positions. pattern: [query_pos, key_pos], square.
double headVisMaxActivation(const Matrix& pattern);

/// One sequence of one head in HeadVis's sparse layout: flat index q·S + k, ascending.
struct SparseAttention {
    std::vector<int> indices; ///< q·seqLen + k
    std::vector<double> values; ///< the attention weights, rounded to 4 decimals
    int seqLen = 0;
};

/// Per query row, the `topkPerRow` largest weights (ties: the lower key first), those ≥ `threshold` kept, each
/// rounded to 4 decimals, ordered by (q, k) (the pipeline's torch.topk, keep_mask, np.round and lexsort).
SparseAttention headVisSparse(const Matrix& pattern, int topkPerRow = 8, double threshold = 0.005);

/// The sampler's settings (the pipeline's flags and defaults).
struct HeadVisSampling {
    int nIntervals = 5;            ///< --n-intervals
    int samplesPerInterval = 3;    ///< --samples-per-interval (reservoir per lower interval)
    int samplesPerTopInterval = 10; ///< --samples-per-top-interval (top K of the highest interval)
    std::uint32_t seed = 0;        ///< --sample-seed
    /// Slots of interval `bucket` (0-based): samplesPerTopInterval for the top one, samplesPerInterval for the
    /// others; with one interval, the larger of the two.
    int capacity(int bucket) const;
    bool isTop(int bucket) const { return nIntervals == 1 || bucket == nIntervals - 1; }
};

/// Warmup length for n sequences: max(1, min(2000, max(50, n / 10))) (_resolve_warmup_size), but at most half of
/// n (at least 1) so that a corpus shorter than 100 windows still keeps samples (the pipeline would keep none).
int headVisWarmupSize(qint64 nSequences);

/// The interval boundaries from warmup values: the sorted values at round(i·n / nIntervals) (clamped to n − 1) for
/// i = 1 … nIntervals − 1 (Python's round: half to even); all 0 without values.
std::vector<double> headVisBoundaries(std::vector<double> warmupValues, int nIntervals);

/// One head's sampler (HeadSampler + BucketSlot of the pipeline).
class HeadVisSampler {
public:
    HeadVisSampler(const HeadVisSampling& settings, int layer, int head);
    void setBoundaries(std::vector<double> boundaries);
    const std::vector<double>& boundaries() const { return boundaries_; }
    /// The interval (0-based) of a max_activation: bisect_right over the boundaries, at most nIntervals − 1.
    int bucketOf(double maxActivation) const;
    /// Offers sequence `id`: returns whether it is kept (then call keep() with its attention), advancing the bucket's
    /// count and, for a lower interval that is full, the reservoir's random stream. No-op (false) before
    /// setBoundaries.
    bool offer(qint64 id, double maxActivation);
    /// Stores the attention of the sequence offer() just accepted.
    void keep(SparseAttention attention);
    struct Sample {
        int interval = 0; ///< 1-based (1 = lowest)
        qint64 sequenceId = 0;
        double maxActivation = 0;
        SparseAttention attention;
    };
    /// The samples, interval by interval; the top interval's by max_activation descending (ties: lower id first).
    std::vector<Sample> samples() const;

private:
    struct Slot {
        int capacity = 0;
        bool top = false;
        qint64 seen = 0;
        std::vector<Sample> items; ///< top: a min-heap by (max_activation, −id)
        std::mt19937 rng;
    };
    HeadVisSampling settings_;
    std::vector<double> boundaries_;
    bool ready_ = false;
    std::vector<Slot> slots_;
    int pendingSlot_ = -1;   ///< the slot of the sequence offer() accepted last, −1 when none
    qint64 pendingId_ = 0;
};

} // namespace attnscope
