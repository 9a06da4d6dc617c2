#include "model/core/weight_packer.h"

#include <chrono>

#ifdef __linux__
#include <sched.h>
#endif

namespace attnscope {

WeightPacker::~WeightPacker() {
    {
        const std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void WeightPacker::enqueue(const WeightPanels* panels) {
    {
        const std::lock_guard lock(mutex_);
        queue_.push_back(panels);
        if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    }
    wake_.notify_one();
}

void WeightPacker::waitUntilIdle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return !busy_ && (queue_.empty() || paused_); });
}

void WeightPacker::setPaused(bool paused) {
    {
        const std::lock_guard lock(mutex_);
        paused_ = paused;
    }
    wake_.notify_all();
    idle_.notify_all();
}

void WeightPacker::run() {
#ifdef __linux__
    // idle priority for this thread only (a thread is a task of its own on Linux); where it is refused, the
    // packer runs at normal priority, still one thread beside the forward pass's team
    sched_param none{};
    (void)sched_setscheduler(0, SCHED_IDLE, &none);
#endif
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [&] { return stop_ || (!queue_.empty() && !paused_); });
        if (stop_) return;
        // while a pass reads weights in place (a model's first pass), wait for it to end
        for (;;) {
            using namespace std::chrono;
            const auto quiet = nanoseconds(lastInPlaceRead_.load(std::memory_order_relaxed)) + milliseconds(kQuietMs);
            const auto now = steady_clock::now().time_since_epoch();
            if (now >= quiet) break;
            if (wake_.wait_for(lock, quiet - now, [&] { return stop_.load(); })) return;
        }
        if (queue_.empty() || paused_) continue;
        const WeightPanels* next = queue_.front();
        queue_.pop_front();
        busy_ = true;
        lock.unlock();
        next->pack(&stop_);
        lock.lock();
        busy_ = false;
        if (queue_.empty() || paused_) idle_.notify_all();
    }
}

} // namespace attnscope
