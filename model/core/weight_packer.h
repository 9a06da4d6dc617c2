#pragma once
// The thread that makes a model's packed weight copies (weight_panels.h) behind its first forward pass. A
// freshly opened model's first pass reads every weight in place, as it would have to read it to pack it anyway,
// so the user sees the first result without waiting for the copies; the packer then makes them one weight at a
// time, at idle priority (Linux SCHED_IDLE: it runs only on a core nothing else wants, and yields at once when
// a forward pass's threads wake), and every later product reads the copies. Results are bitwise the same
// either way (WeightPanels).

#include "model/core/weight_panels.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace attnscope {

class WeightPacker {
public:
    WeightPacker() = default;
    /// Stops after the weight being packed (its wait for in-place readers ends at once) and joins the thread.
    ~WeightPacker();
    WeightPacker(const WeightPacker&) = delete;
    WeightPacker& operator=(const WeightPacker&) = delete;

    /// Queues a Background-mode copy (it must outlive this packer); starts the thread on the first call.
    void enqueue(const WeightPanels* panels);
    /// Where the copies record their in-place reads (WeightPanels' constructor): the packer starts a copy only
    /// once no product has read a weight in place for kQuietMs, so that it does not take memory bandwidth and
    /// a core's idle moments from the first pass it packs for.
    std::atomic<long long>* lastInPlaceRead() { return &lastInPlaceRead_; }
    static constexpr int kQuietMs = 20;
    /// Blocks until every queued copy is packed (or the packer is paused with copies left: then returns at
    /// once). For benchmarks and tests that time or check the packed state.
    void waitUntilIdle();
    /// While paused, no further copy is started (the one in progress finishes). Tests use it to run a forward
    /// pass on weights that are certainly read in place.
    void setPaused(bool paused);

private:
    void run();

    std::mutex mutex_;
    std::condition_variable wake_, idle_;
    std::deque<const WeightPanels*> queue_;
    bool busy_ = false, paused_ = false;
    std::atomic<bool> stop_ = false;
    std::atomic<long long> lastInPlaceRead_ = 0; ///< steady_clock nanoseconds
    std::thread thread_;
};

} // namespace attnscope
