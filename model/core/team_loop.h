#pragma once
// A loop shared by the OpenMP team, or a plain loop on the calling thread. Not `#pragma omp parallel for
// if (cond)`: with cond false, or inside another parallel region, libgomp still starts a team of one thread
// and ends the loop with a team barrier whose futex syscall cost ≈ 3 µs per loop on the Zen 5 guest (with
// PTI), more than a small loop's work (docs/performance.md: one head's 20 × 64 × 20 Q·Kᵀ took 4 µs).

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnscope {

enum class TeamSchedule { Static, Dynamic };

/// f(i) for i in [0, n): on the OpenMP team with the given schedule when `team` is true, n > 1 and no
/// parallel region is active; else in order on the calling thread. f must not throw.
template <TeamSchedule Schedule = TeamSchedule::Dynamic, typename Index, typename F>
void teamFor(Index n, bool team, F&& f) {
#ifdef _OPENMP
    if (team && n > 1 && !omp_in_parallel() && omp_get_max_threads() > 1) {
        if constexpr (Schedule == TeamSchedule::Dynamic) {
#pragma omp parallel for schedule(dynamic)
            for (Index i = 0; i < n; ++i) f(i);
        } else {
#pragma omp parallel for schedule(static)
            for (Index i = 0; i < n; ++i) f(i);
        }
        return;
    }
#else
    (void)team;
#endif
    for (Index i = 0; i < n; ++i) f(i);
}

} // namespace attnscope
