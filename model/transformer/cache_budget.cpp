#include "model/transformer/cache_budget.h"

#include "model/core/errors.h"
#include "model/transformer/forward.h"

#include <QCoreApplication>
#include <QFile>
#include <QLocale>
#include <algorithm>
#include <limits>

namespace attnscope {

namespace {

constexpr qint64 kMax = std::numeric_limits<qint64>::max();

/// a·b with saturation at INT64_MAX (a, b ≥ 0).
qint64 mul(qint64 a, qint64 b) {
    if (a == 0 || b == 0) return 0;
    return a > kMax / b ? kMax : a * b;
}
qint64 add(qint64 a, qint64 b) { return a > kMax - b ? kMax : a + b; }

/// A number from a small text file such as /sys/fs/cgroup/memory.max; -1 if absent or "max".
qint64 readNumberFile(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return -1;
    bool ok = false;
    const qint64 v = f.readAll().trimmed().toLongLong(&ok);
    return ok ? v : -1;
}

} // namespace

CacheEstimate estimateCacheBytes(const ModelConfig& cfg, int nPositions, const ForwardOptions& options) {
    const qint64 S = std::max(0, nPositions), D = cfg.d_model, H = cfg.n_heads, L = cfg.d_head, M = cfg.d_mlp,
                 V = cfg.d_vocab, NL = cfg.n_layers, f = sizeof(float);
    CacheEstimate e;
    e.patternBytes = mul(mul(NL, mul(2 * H, mul(S, S))), f);
    e.headResultBytes = options.cacheHeadResults ? mul(mul(NL, mul(H, mul(S, D))), f) : 0;
    const qint64 preNorms = add(cfg.qkNorm ? mul(S, (H + cfg.n_kv_heads) * L) : 0, // q_pre_norm, k_pre_norm
                                cfg.postNorms ? mul(2 * S, D) : 0);                // attn_out_pre_norm, mlp_out_pre_norm
    const qint64 perLayer = add(add(add(mul(7 * S, D), mul(4 * S, H * L)), mul(2 * S, M)), preNorms);
    const qint64 globals = add(mul(3 * S, D), S);
    const qint64 logits = mul(options.allLogits ? S : 1, V);
    e.otherBytes = mul(add(add(mul(NL, perLayer), globals), logits), f);
    // one layer's temporaries: the softmax outputs of every head, two linear() outputs
    e.workingBytes = mul(add(mul(H, mul(S, S)), mul(2 * S, std::max(D, M))), f);
    // residuals-only (layer_recompute.h: keepResidualFields)
    e.residualBytes = mul(add(add(mul(NL, add(mul(5 * S, D), mul(S, H * L))), globals), logits), f);
    e.layerBytes = mul(add(mul(2 * H, mul(S, S)), perLayer), f);
    e.layerHeadResultBytes = mul(mul(H, mul(S, D)), f);
    return e;
}

qint64 CacheEstimate::residualsOnlyTotal(int recomputedLayers, bool headResults) const {
    const qint64 layer = add(layerBytes, headResults ? layerHeadResultBytes : 0);
    return add(add(residualBytes, workingBytes), mul(std::max(1, recomputedLayers), layer));
}

AvailableMemory availableMemory(const QString& meminfoPath, const QString& cgroupDir) {
    AvailableMemory m;
    QFile meminfo(meminfoPath);
    if (meminfo.open(QIODevice::ReadOnly)) {
        for (const QByteArray& line : meminfo.readAll().split('\n')) {
            if (!line.startsWith("MemAvailable:")) continue;
            const QList<QByteArray> parts = line.simplified().split(' '); // "MemAvailable: N kB"
            bool ok = false;
            const qint64 kb = parts.size() >= 2 ? parts[1].toLongLong(&ok) : 0;
            if (ok) m = {mul(kb, 1024), QStringLiteral("MemAvailable in %1").arg(meminfoPath)};
        }
    }
    const qint64 limit = readNumberFile(cgroupDir + QStringLiteral("/memory.max"));
    const qint64 used = readNumberFile(cgroupDir + QStringLiteral("/memory.current"));
    if (limit > 0 && used >= 0) {
        const qint64 cgroupFree = std::max<qint64>(0, limit - used);
        if (m.bytes < 0 || cgroupFree < m.bytes)
            m = {cgroupFree, QStringLiteral("the cgroup's memory.max − memory.current in %1").arg(cgroupDir)};
    }
    return m;
}

qint64 availableMemoryBytes() { return availableMemory().bytes; }

namespace {
/// ATTNSCOPE_MEMORY_BUDGET read once: unset (or empty, as ATTNSCOPE_ISA), a positive number of bytes, or
/// neither (bytes ≤ 0).
struct ForcedBudget {
    bool set = false;
    qint64 bytes = 0;
    QString value;
};
ForcedBudget forcedBudget() {
    ForcedBudget f;
    if (qEnvironmentVariableIsEmpty("ATTNSCOPE_MEMORY_BUDGET")) return f;
    f.set = true;
    f.value = qEnvironmentVariable("ATTNSCOPE_MEMORY_BUDGET");
    bool ok = false;
    const qint64 bytes = f.value.trimmed().toLongLong(&ok);
    f.bytes = ok ? bytes : 0;
    return f;
}

const QString kSetByVariable = QStringLiteral("set by ATTNSCOPE_MEMORY_BUDGET");

/// "half of SOURCE" (or "30% of SOURCE"); "" when the source is unknown.
QString fractionOf(double fraction, const QString& source) {
    if (source.isEmpty()) return {};
    const QString part = fraction == 0.5 ? QStringLiteral("half") : QStringLiteral("%1%").arg(fraction * 100, 0, 'g', 3);
    return QStringLiteral("%1 of %2").arg(part, source);
}
} // namespace

QString memoryBudgetError() {
    const ForcedBudget f = forcedBudget();
    if (!f.set || f.bytes > 0) return {};
    return QCoreApplication::translate("forward", "ATTNSCOPE_MEMORY_BUDGET=%1 is not a number of bytes: give a positive integer, "
                                                  "e.g. ATTNSCOPE_MEMORY_BUDGET=4000000000 for 4 GB, or unset it for half of "
                                                  "the available memory.")
        .arg(f.value);
}

CacheBudget cacheBudget(double fraction) {
    if (const ForcedBudget f = forcedBudget(); f.set) {
        if (f.bytes <= 0) throw InputError(memoryBudgetError());
        return {f.bytes, kSetByVariable};
    }
    const AvailableMemory available = availableMemory();
    if (available.bytes < 0) return {};
    return {qint64(double(available.bytes) * fraction), fractionOf(fraction, available.source)};
}

void requireWithinBudget(qint64 need, const std::function<QString(const CacheBudget& budget)>& overBudget) {
    const CacheBudget budget = cacheBudget();
    if (budget.bytes >= 0 && need > budget.bytes) throw InputError(overBudget(budget));
}

qint64 cacheBudgetBytes(double fraction) { return cacheBudget(fraction).bytes; }

QString cacheBudgetOrigin() {
    return forcedBudget().set ? kSetByVariable : fractionOf(0.5, availableMemory().source);
}

QString formatBytes(qint64 bytes) {
    return QLocale::c().formattedDataSize(bytes, 1, QLocale::DataSizeTraditionalFormat);
}

CachePlan planCache(const ModelConfig& cfg, int nPositions, const ForwardOptions& options, qint64 budgetBytes) {
    return planCache(cfg, nPositions, options, CacheBudget{budgetBytes, cacheBudgetOrigin()});
}

CachePlan planCache(const ModelConfig& cfg, int nPositions, const ForwardOptions& options, const CacheBudget& limit) {
    const qint64 budget = limit.bytes;
    CachePlan plan;
    plan.estimate = estimateCacheBytes(cfg, nPositions, options);
    plan.budget = budget;
    plan.cacheHeadResults = options.cacheHeadResults;
    const CacheEstimate& e = plan.estimate;
    if (!options.residualsOnly) {
        if (budget < 0 || e.total() <= budget) return plan;
        if (e.totalWithoutHeadResults() <= budget) {
            plan.cacheHeadResults = false; // analyses recompute z_h·W_O^h from the cached z when needed
            return plan;
        }
    }
    // residuals-only: the kept fields of every layer plus as many recomputed layers as fit (≥ 1)
    plan.residualsOnly = true;
    const int wanted = std::max(1, options.recomputedLayers);
    if (budget < 0) {
        plan.recomputedLayers = wanted;
        return plan;
    }
    plan.cacheHeadResults = options.cacheHeadResults && e.residualsOnlyTotal(1, true) <= budget;
    if (plan.cacheHeadResults || e.residualsOnlyTotal(1, false) <= budget) {
        const qint64 perLayer = add(e.layerBytes, plan.cacheHeadResults ? e.layerHeadResultBytes : 0);
        const qint64 room = budget - add(e.residualBytes, e.workingBytes);
        plan.recomputedLayers = int(std::clamp<qint64>(perLayer > 0 ? room / perLayer : wanted, 1, wanted));
        return plan;
    }
    throw InputError(QCoreApplication::translate("forward",
                         "The activation cache for %1 tokens would need %2 of memory even keeping only the residual "
                         "streams (the full cache: %3, attention patterns alone: %4), but the budget is %5 (%6). "
                         "Use a shorter prompt.")
                         .arg(nPositions)
                         .arg(formatBytes(e.residualsOnlyTotal(1, false)), formatBytes(e.totalWithoutHeadResults()),
                              formatBytes(e.patternBytes), formatBytes(budget), limit.origin));
}

} // namespace attnscope
