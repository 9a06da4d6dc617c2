#include "model/core/weight_gemm.h"

#include "model/core/column_parallel_product.h"

#include <algorithm>
#include <array>
#include <utility>
#include <cstring>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnscope {

namespace {

using Index = Eigen::Index;

// 16 floats: one AVX-512 register under -march=native; GCC/Clang lower it to narrower SIMD elsewhere.
typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4), may_alias));

constexpr int kRows = 14;            // MR: rows of x per register tile (2×14 accumulators + 2 W vectors + 1 broadcast)
constexpr int kCols = 32;            // NR: columns per micro-panel (two vectors)
constexpr Index kDepth = 256;        // KC: W micro-panel of 256×32 floats = 32 KiB stays in L1
constexpr Index kBlockRows = 14 * 24; // MC: 336×256 packed x floats = 336 KiB stay in L2
constexpr Index kPrefetch = 12;       // W rows prefetched into L1 ahead in the streaming micro-kernel
constexpr Index kPrefetchL2 = 64;     // … and into L2 further ahead: at S = 20 the pass is bound by how many
                                      // W lines are in flight (12 rows = 24 lines ≈ 26 GB/s at DRAM latency;
                                      // with these 64 rows more, the S = 20 forward took 11% less). Not all in
                                      // L1: W's rows 3–12 KiB apart share 1–4 L1 sets, which would evict them
                                      // before use
constexpr Index kFewRows = kTransposedKernelMinRows; // weightGemmTransposed below this many rows: Eigen's
                                      // path (packing Wᵀ's micro-panels does not pay for itself over fewer x panels)

inline v16 load(const float* p) { return *reinterpret_cast<const v16u*>(p); }
inline void store(float* p, v16 v) { *reinterpret_cast<v16u*>(p) = v; }

/// c [MR, 32] (+)= a [MR, kc] · b [kc, 32]. a packed k-major (a[k·MR + r]); b rows ldb floats apart.
/// With `copy` (not null), the b rows it reads are also stored there contiguously (copy[k·32 + j]): the
/// first x panel leaves an L1-resident copy of the micro-panel for the others (W's rows in place are
/// 3–12 KiB apart, which maps a micro-panel's 256 rows onto 1–4 L1 sets, so it never stays in L1).
/// Stream = false: b is such an L1 copy (or another L1-resident panel): no prefetching.
template <int MR, bool Stream>
void microKernel(const float* __restrict a, const float* __restrict b, Index ldb, Index kc, float* __restrict c,
                 Index ldc, bool accumulate, float* __restrict copy) {
    v16 acc0[MR], acc1[MR];
#pragma GCC unroll 14
    for (int r = 0; r < MR; ++r) acc0[r] = acc1[r] = v16{};
    for (Index k = 0; k < kc; ++k) {
        // W rows ahead: the first x panel streams each micro-panel from DRAM (rows ldb apart)
        if constexpr (Stream) {
            __builtin_prefetch(b + (k + kPrefetch) * ldb);
            __builtin_prefetch(b + (k + kPrefetch) * ldb + 16);
            __builtin_prefetch(b + (k + kPrefetchL2) * ldb, 0, 2);
            __builtin_prefetch(b + (k + kPrefetchL2) * ldb + 16, 0, 2);
        }
        const v16 b0 = load(b + k * ldb), b1 = load(b + k * ldb + 16);
        if (Stream && copy) {
            store(copy + k * kCols, b0);
            store(copy + k * kCols + 16, b1);
        }
#pragma GCC unroll 14
        for (int r = 0; r < MR; ++r) {
            const float ar = a[k * MR + r];
            acc0[r] += ar * b0;
            acc1[r] += ar * b1;
        }
    }
#pragma GCC unroll 14
    for (int r = 0; r < MR; ++r) {
        float* row = c + r * ldc;
        if (accumulate) {
            acc0[r] += load(row);
            acc1[r] += load(row + 16);
        }
        store(row, acc0[r]);
        store(row + 16, acc1[r]);
    }
}

using KernelFn = void (*)(const float*, const float*, Index, Index, float*, Index, bool, float*);

template <bool Stream, int... R>
constexpr auto kernelTable(std::integer_sequence<int, R...>) {
    return std::array<KernelFn, sizeof...(R)>{&microKernel<R + 1, Stream>...};
}
/// kKernels[stream][mr − 1]: stream = b read in place from W (prefetched), else an L1 micro-panel copy.
constexpr std::array<std::array<KernelFn, kRows>, 2> kKernels{
    kernelTable<false>(std::make_integer_sequence<int, kRows>{}), kernelTable<true>(std::make_integer_sequence<int, kRows>{})};

#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
#define ATTNSCOPE_GEMM_SHUFFLE 1
/// One stage of a 16×16 register transpose: rows a = r_i, b = r_{i+h} (bit h of i clear) become the
/// rows whose element e swaps bit h of its row index with bit h of its column index. After the four
/// stages h = 8, 4, 2, 1 every element (i, e) sits at (e, i). Each output is one two-source shuffle
/// (vpermt2ps / vunpck*ps under AVX-512).
template <int h>
inline void transposeStage(v16& a, v16& b) {
#define ATTNSCOPE_LO(e) (((e) & h) == 0 ? (e) : 16 + (e) - h)
#define ATTNSCOPE_HI(e) (((e) & h) == 0 ? (e) + h : 16 + (e))
    const v16 lo = __builtin_shufflevector(a, b, ATTNSCOPE_LO(0), ATTNSCOPE_LO(1), ATTNSCOPE_LO(2), ATTNSCOPE_LO(3),
                                           ATTNSCOPE_LO(4), ATTNSCOPE_LO(5), ATTNSCOPE_LO(6), ATTNSCOPE_LO(7),
                                           ATTNSCOPE_LO(8), ATTNSCOPE_LO(9), ATTNSCOPE_LO(10), ATTNSCOPE_LO(11),
                                           ATTNSCOPE_LO(12), ATTNSCOPE_LO(13), ATTNSCOPE_LO(14), ATTNSCOPE_LO(15));
    const v16 hi = __builtin_shufflevector(a, b, ATTNSCOPE_HI(0), ATTNSCOPE_HI(1), ATTNSCOPE_HI(2), ATTNSCOPE_HI(3),
                                           ATTNSCOPE_HI(4), ATTNSCOPE_HI(5), ATTNSCOPE_HI(6), ATTNSCOPE_HI(7),
                                           ATTNSCOPE_HI(8), ATTNSCOPE_HI(9), ATTNSCOPE_HI(10), ATTNSCOPE_HI(11),
                                           ATTNSCOPE_HI(12), ATTNSCOPE_HI(13), ATTNSCOPE_HI(14), ATTNSCOPE_HI(15));
#undef ATTNSCOPE_LO
#undef ATTNSCOPE_HI
    a = lo;
    b = hi;
}

template <int h>
inline void transposeStage(v16 (&r)[16]) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i)
        if ((i & h) == 0) transposeStage<h>(r[i], r[i + h]);
}

/// dst[k·ldd + c] = src[c·lds + k] for c < nRows ≤ 16 rows of 16 floats (k < 16); each of the 16 stores
/// writes 16 floats, lanes c ≥ nRows zero (with ldd < 16 they spill into the next store's place).
inline void transposeRows(const float* src, Index lds, int nRows, float* dst, Index ldd) {
    v16 r[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) r[i] = i < nRows ? load(src + i * lds) : v16{};
    transposeStage<8>(r);
    transposeStage<4>(r);
    transposeStage<2>(r);
    transposeStage<1>(r);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) store(dst + i * ldd, r[i]);
}
#endif

/// Packs x rows [0, rows) into panels of kRows rows (the last may be shorter), each stored k-major:
/// panel starting at row p holds x(p + r, k) at pack[p·inner + k·mr + r], mr = min(kRows, rows − p).
/// Full panels go 16 columns of x at a time through a register transpose (a copy: the same bits either
/// way); element by element this was an eighth of the time of a 768-column product.
void packPanel(const float* x, Index ldx, Index rows, Index inner, Index p, float* pack) {
    const Index mr = std::min<Index>(kRows, rows - p);
    float* dst = pack + p * inner;
    Index kDone = 0;
#ifdef ATTNSCOPE_GEMM_SHUFFLE
    if (mr == kRows) {
        // 16 k-vectors of 14 rows per step, stored 14 floats apart in ascending order: each store's two
        // padding lanes land where the next store (or the next step) writes; the last step stays scalar
        // so that nothing is written past this panel
        for (; kDone + 16 < inner; kDone += 16) transposeRows(x + p * ldx + kDone, ldx, kRows, dst + kDone * kRows, kRows);
    }
#endif
    for (Index r = 0; r < mr; ++r) {
        const float* src = x + (p + r) * ldx;
        for (Index k = kDone; k < inner; ++k) dst[k * mr + r] = src[k];
    }
}

/// The micro-panel of a transposed weight: pad[k·kCols + c] = wt[c·ldw + k] for c < w, k < kc, and 0 for
/// the columns c ≥ w. Full 32-column panels go through 16×16 register transposes (a plain copy either
/// way, so the panel is bitwise the same), the rest element by element. `next`, when not null, is the
/// next full panel's wt: its lines are prefetched into L2 while this panel's kernel calls run (Wᵀ
/// streams from DRAM, one 1 KiB piece of each of 32 rows per panel).
void transposeIntoPanel(const float* wt, Index ldw, Index w, Index kc, float* pad, const float* next) {
    Index kDone = 0;
#ifdef ATTNSCOPE_GEMM_SHUFFLE
    if (w == kCols) {
        for (; kDone + 16 <= kc; kDone += 16) {
            transposeRows(wt + kDone, ldw, 16, pad + kDone * kCols, kCols);
            transposeRows(wt + 16 * ldw + kDone, ldw, 16, pad + kDone * kCols + 16, kCols);
            if (next)
                for (Index c = 0; c < kCols; ++c) __builtin_prefetch(next + c * ldw + kDone, 0, 2);
        }
    }
#endif
    for (Index c = 0; c < w; ++c) {
        const float* src = wt + c * ldw;
        for (Index k = kDone; k < kc; ++k) pad[k * kCols + c] = src[k];
    }
    for (Index k = 0; k < kc; ++k) std::fill(pad + k * kCols + w, pad + (k + 1) * kCols, 0.0f);
}

/// y[:, c0:c1) = packed x · W[:, c0:c1) for one thread; with `transposed`, W holds Wᵀ [cols, inner] and
/// each micro-panel is packed (transposed) into an L1 buffer first, then used by every x panel.
void gemmColumns(const float* pack, Index rows, Index inner, const Weight& W, bool transposed, Index c0, Index c1,
                 float* y, Index ldy) {
    alignas(64) float padB[kDepth * kCols];
    alignas(64) float padC[kRows * kCols];
    for (Index k0 = 0; k0 < inner; k0 += kDepth) {
        const Index kc = std::min(kDepth, inner - k0);
        const bool accumulate = k0 > 0;
        for (Index m0 = 0; m0 < rows; m0 += kBlockRows) {
            const Index m1 = std::min(rows, m0 + kBlockRows);
            for (Index j = c0; j < c1; j += kCols) {
                const Index w = std::min<Index>(kCols, c1 - j);
                const float* b = W.data + k0 * W.stride + j;
                Index ldb = W.stride;
                if (transposed) { // W(k, j) = Wᵀ(j, k): gather 32 rows of Wᵀ into a k-major micro-panel
                    const bool nextFull = j + 2 * kCols <= c1;
                    transposeIntoPanel(W.data + j * W.stride + k0, W.stride, w, kc, padB,
                                       nextFull ? W.data + (j + kCols) * W.stride + k0 : nullptr);
                    b = padB;
                    ldb = kCols;
                } else if (w < kCols) { // tail columns: a zero-padded copy of the micro-panel
                    for (Index k = 0; k < kc; ++k) {
                        std::memcpy(padB + k * kCols, b + k * W.stride, size_t(w) * sizeof(float));
                        std::fill(padB + k * kCols + w, padB + (k + 1) * kCols, 0.0f);
                    }
                    b = padB;
                    ldb = kCols;
                }
                for (Index p = m0; p < m1; p += kRows) {
                    const Index mr = std::min<Index>(kRows, rows - p);
                    const float* a = pack + p * inner + k0 * mr;
                    float* c = y + p * ldy + j;
                    if (w == kCols) {
                        // in place: the first of several x panels copies the micro-panel for the rest
                        const bool stream = b != padB, copy = stream && p == m0 && m1 - m0 > kRows;
                        kKernels[stream][size_t(mr - 1)](a, b, ldb, kc, c, ldy, accumulate, copy ? padB : nullptr);
                        if (copy) {
                            b = padB;
                            ldb = kCols;
                        }
                    } else {
                        for (Index r = 0; r < mr; ++r) {
                            std::memcpy(padC + r * kCols, c + r * ldy, size_t(w) * sizeof(float));
                            std::fill(padC + r * kCols + w, padC + (r + 1) * kCols, 0.0f);
                        }
                        kKernels[b != padB][size_t(mr - 1)](a, b, ldb, kc, padC, kCols, accumulate, nullptr);
                        for (Index r = 0; r < mr; ++r) std::memcpy(c + r * ldy, padC + r * kCols, size_t(w) * sizeof(float));
                    }
                }
            }
        }
    }
}

std::vector<float>& packBuffer() {
    thread_local std::vector<float> buffer; // reused call after call: no fresh pages per projection
    return buffer;
}

} // namespace

namespace {

/// Column blocks of one target: [c0, c1) of target t.
struct ColumnBlock {
    size_t target;
    Index c0, c1;
};

/// Splits each target's columns into blocks handed out dynamically. Wide blocks re-read the packed x
/// (L3 at long S) as rarely as possible; at least two per thread evens out a core that another process
/// takes. When the packed x fits in L2 (short prompts), re-reading it costs nothing and narrow blocks of
/// 2 micro-panels bound the time one thread can wait for the other to ~10 µs (the S = 20 pass was not
/// measurably faster for it: OpenMP waits stayed ~8% of its samples). Otherwise, in 32-column micro-panels: at most 8 per
/// block, and a count that is a multiple of the thread count when a width of 2–8 gives one (2304
/// columns on 2 threads: 12 blocks of 6 panels, not 9 of 8, which left one thread idle for a ninth).
std::vector<ColumnBlock> columnBlocks(std::span<const GemmTarget> targets, bool transposed, Index rows, Index inner,
                                      Index threads) {
    constexpr Index kPackedInL2 = 256 * 1024; // bytes of packed x below which narrow blocks are free
    std::vector<ColumnBlock> blocks;
    for (size_t t = 0; t < targets.size(); ++t) {
        const Weight& W = targets[t].W;
        const Index cols = transposed ? W.rows : W.cols;
        const Index panels = (cols + kCols - 1) / kCols;
        Index blockPanels = 2;
        if (rows * inner * Index(sizeof(float)) > kPackedInL2) {
            blockPanels = std::clamp<Index>((panels + 2 * threads - 1) / (2 * threads), 2, 8);
            for (Index b = blockPanels; b >= 2; --b)
                if (((panels + b - 1) / b) % threads == 0) {
                    blockPanels = b;
                    break;
                }
        }
        const Index blockCols = blockPanels * kCols;
        for (Index c0 = 0; c0 < cols; c0 += blockCols) blocks.push_back({t, c0, std::min(cols, c0 + blockCols)});
    }
    return blocks;
}

void gemmImpl(const float* x, Index rows, Index inner, Index ldx, std::span<const GemmTarget> targets, bool transposed,
              bool parallel) {
    if (rows == 0 || targets.empty()) return;
    if (inner == 0) {
        for (const GemmTarget& t : targets) {
            const Index cols = transposed ? t.W.rows : t.W.cols;
            for (Index r = 0; r < rows; ++r) std::fill(t.y + r * t.ldy, t.y + r * t.ldy + cols, 0.0f);
            if (t.epilogue && cols > 0) t.epilogue(0, cols);
        }
        return;
    }
    std::vector<float>& pack = packBuffer();
    if (pack.size() < size_t(rows * inner)) pack.resize(size_t(rows * inner));
    float* packed = pack.data();
    const Index nPanels = (rows + kRows - 1) / kRows;
#ifdef _OPENMP
    const Index threads = parallel ? omp_get_max_threads() : 1;
    const bool team = parallel && !omp_in_parallel() && omp_get_max_threads() > 1;
#else
    const Index threads = 1;
    const bool team = false;
    (void)parallel;
#endif
    const std::vector<ColumnBlock> blocks = columnBlocks(targets, transposed, rows, inner, threads);
    const Index nBlocks = Index(blocks.size());
#pragma omp parallel if (team)
    {
#pragma omp for schedule(static)
        for (Index p = 0; p < nPanels; ++p) packPanel(x, ldx, rows, inner, p * kRows, packed);
#pragma omp for schedule(dynamic)
        for (Index b = 0; b < nBlocks; ++b) {
            const ColumnBlock& blk = blocks[size_t(b)];
            const GemmTarget& t = targets[blk.target];
            gemmColumns(packed, rows, inner, t.W, transposed, blk.c0, blk.c1, t.y, t.ldy);
            if (t.epilogue) t.epilogue(blk.c0, blk.c1);
        }
    }
}

} // namespace

void weightGemm(const float* x, Index rows, Index inner, Index ldx, const Weight& W, float* y, Index ldy, bool parallel) {
    const GemmTarget target{W, y, ldy, {}};
    gemmImpl(x, rows, inner, ldx, std::span(&target, 1), false, parallel);
}

void weightGemmMulti(const float* x, Index rows, Index inner, Index ldx, std::span<const GemmTarget> targets) {
    gemmImpl(x, rows, inner, ldx, targets, false, true);
}

void weightGemmTransposed(const Matrix& x, const Weight& WT, Matrix& y) {
    y.resize(x.rows(), WT.rows);
    if (x.rows() < kFewRows) { // few rows: Eigen streams Wᵀ without the transposing copy
        columnParallelProduct(x, WT.view().transpose(), y, 1024);
    } else {
        const GemmTarget target{WT, y.data(), y.cols(), {}};
        gemmImpl(x.data(), x.rows(), x.cols(), x.cols(), std::span(&target, 1), true, true);
    }
}

void weightGemm(const Matrix& x, const Weight& W, const Weight& bias, Matrix& y) {
    y.resize(x.rows(), W.cols);
    weightGemm(x.data(), x.rows(), x.cols(), x.cols(), W, y.data(), y.cols(), true);
    if (!bias.empty()) y.rowwise() += bias.view().row(0);
}

} // namespace attnscope
