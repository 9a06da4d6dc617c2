#pragma once
// Memory guard for the forward pass: how many bytes an ActivationCache for S positions needs, how
// much memory the machine can spare, and what to do when the cache would not fit: drop the per-head
// results (analyses recompute them from z), or keep only the residual streams and recompute a layer's
// internals on demand (ActivationCache::layer, layer_recompute.h), or refuse with a clear message
// instead of being killed by the OOM killer.

#include "model/transformer/model_config.h"

#include <QString>
#include <QtGlobal>
#include <functional>
#include <limits>

namespace attnscope {

struct ForwardOptions;

/// Bytes of one ActivationCache (float32), split by what can be left out. With S = positions,
/// D = d_model, H = n_heads, L = d_head, M = d_mlp, V = d_vocab, per layer:
///   patterns   = 2·H·S²       (attn_scores and pattern; these alone are n_layers·n_heads·S² floats each)
///   headResult = H·S·D        (result, only when ForwardOptions::cacheHeadResults)
///   other      = 7·S·D + 4·S·H·L + 2·S·M   (residuals, norms, attn/mlp outputs; q, k, v, z; mlp pre/post),
///                + S·(H + H_kv)·L with q/k norms (q_pre_norm, k_pre_norm), + 2·S·D with post-norms
/// plus globals 3·S·D + S (embed, pos_embed, ln_final, its scale) and logits S·V (1·V for last-only).
/// A residuals-only cache keeps per layer 5·S·D + S·H·L (resid_pre/mid/post, attn_out, mlp_out; z) and
/// needs room for at least one full layer (the pass's scratch layer, later one recomputed layer).
struct CacheEstimate {
    qint64 patternBytes = 0;
    qint64 headResultBytes = 0; ///< 0 when the options do not cache head results
    qint64 otherBytes = 0;      ///< everything else, logits included
    /// Working memory of the pass itself beyond the cache (one layer's temporaries), added to totals.
    qint64 workingBytes = 0;
    /// Residuals-only layout: the kept fields of every layer plus globals and logits.
    qint64 residualBytes = 0;
    /// One full layer without per-head results (2·H·S² + 7·S·D + 4·S·H·L + 2·S·M floats) ...
    qint64 layerBytes = 0;
    /// ... and its per-head results (H·S·D floats; whether or not the options ask for them).
    qint64 layerHeadResultBytes = 0;

    /// Residuals-only with `recomputedLayers` (≥ 1) full layers held, with or without their head results.
    qint64 residualsOnlyTotal(int recomputedLayers, bool headResults) const;

    /// The sum, saturating at INT64_MAX.
    qint64 total() const { return totalWithoutHeadResults() > kMax - headResultBytes ? kMax : totalWithoutHeadResults() + headResultBytes; }
    qint64 totalWithoutHeadResults() const {
        qint64 sum = 0;
        for (qint64 part : {patternBytes, otherBytes, workingBytes}) sum = sum > kMax - part ? kMax : sum + part;
        return sum;
    }

private:
    static constexpr qint64 kMax = std::numeric_limits<qint64>::max();
};

/// The estimate for a pass over `nPositions` tokens with `options` (cacheHeadResults, allLogits).
/// Saturates at INT64_MAX instead of overflowing. Source of the sizes: activation_cache.h, forward.cpp.
CacheEstimate estimateCacheBytes(const ModelConfig& cfg, int nPositions, const ForwardOptions& options);

/// Memory this process may still use and where the figure comes from.
struct AvailableMemory {
    qint64 bytes = -1; ///< -1 when neither source can be read (non-Linux)
    QString source;    ///< "MemAvailable in /proc/meminfo" or "the cgroup's memory.max − memory.current in
                       ///< /sys/fs/cgroup" (the files read); "" when unknown
};
/// MemAvailable from `meminfo`, lowered to the cgroup limit minus usage (cgroup v2 memory.max and
/// memory.current in `cgroupDir`) when that is smaller. The paths are parameters for tests.
AvailableMemory availableMemory(const QString& meminfo = QStringLiteral("/proc/meminfo"),
                                const QString& cgroupDir = QStringLiteral("/sys/fs/cgroup"));
/// availableMemory().bytes.
qint64 availableMemoryBytes();

/// The activation cache's memory budget and where it comes from.
struct CacheBudget {
    qint64 bytes = -1; ///< -1: no limit (the available memory is unknown)
    QString origin;    ///< for messages: "set by ATTNSCOPE_MEMORY_BUDGET", "half of MemAvailable in /proc/meminfo",
                       ///< "half of the cgroup's memory.max − memory.current in /sys/fs/cgroup"; "" with no limit
};
/// `fraction` of availableMemory(), or the value of the environment variable ATTNSCOPE_MEMORY_BUDGET (bytes;
/// for tests and for users who know better) when set. Throws memoryBudgetError() as InputError when the
/// variable is set to anything but a positive integer (never ignored silently).
CacheBudget cacheBudget(double fraction = 0.5);
/// The one memory guard of the large computations (attribution graphs, edge attribution, the backward pass): throws
/// InputError(overBudget(budget)) when `need` bytes exceed cacheBudget(); an unknown budget (−1: the available memory
/// could not be read) refuses nothing. A bad ATTNSCOPE_MEMORY_BUDGET throws its own error (cacheBudget).
void requireWithinBudget(qint64 need, const std::function<QString(const CacheBudget& budget)>& overBudget);
/// cacheBudget(fraction).bytes.
qint64 cacheBudgetBytes(double fraction = 0.5);
/// "" or why ATTNSCOPE_MEMORY_BUDGET's value is not a budget ("ATTNSCOPE_MEMORY_BUDGET=abc is not a number of
/// bytes: …"); checked at start-up like ATTNSCOPE_ISA, so a bad value stops before any work.
QString memoryBudgetError();
/// cacheBudget(0.5).origin, without throwing for a bad ATTNSCOPE_MEMORY_BUDGET (then "set by …" all the same).
QString cacheBudgetOrigin();

/// What runForward does for a given estimate and budget.
struct CachePlan {
    bool cacheHeadResults = true; ///< false when the head results had to be dropped to fit
    bool residualsOnly = false;   ///< keep only the residual streams (ForwardOptions::residualsOnly)
    int recomputedLayers = 0;     ///< residuals-only: LRU bound of recomputed layers that fits the budget
    CacheEstimate estimate;       ///< for the requested options
    qint64 budget = -1;
};

/// Decides how to run, first that fits (budget < 0 = no limit):
///  1. as requested when total() ≤ budget;
///  2. full cache without head results when totalWithoutHeadResults() fits;
///  3. residuals-only (always when options.residualsOnly) with head results in recomputed layers when
///     requested and residualsOnlyTotal(1, true) fits, else without; recomputedLayers = how many such layers
///     fit next to the residuals, at most options.recomputedLayers, at least 1;
///  4. throws InputError("The activation cache for N tokens would need X of memory even keeping only the
///     residual streams (the full cache: F, attention patterns alone: P), but the budget is Y (ORIGIN). Use a
///     shorter prompt.") with X = residualsOnlyTotal(1, false) and ORIGIN budget.origin ("half of MemAvailable
///     in /proc/meminfo", "set by ATTNSCOPE_MEMORY_BUDGET", …).
CachePlan planCache(const ModelConfig& cfg, int nPositions, const ForwardOptions& options, const CacheBudget& budget);
/// planCache with a budget of `budgetBytes` whose origin is cacheBudgetOrigin() (tests, benchmarks).
CachePlan planCache(const ModelConfig& cfg, int nPositions, const ForwardOptions& options, qint64 budgetBytes);

/// "1.5 GB"-style size for messages.
QString formatBytes(qint64 bytes);

} // namespace attnscope
