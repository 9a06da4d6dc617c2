#include "model/core/weight_gemm.h"

#include "model/core/kernels/compute_kernels.h"
#include "model/core/parallel_threshold.h"
#include "model/core/weight_panels.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnscope {

Eigen::Index transposedKernelMinRows(WeightType type) {
    if (type == WeightType::F16 || type == WeightType::BF16) return computeKernels().transposedGemmMinRows16;
    return kTransposedKernelMinRows;
}

Eigen::Index transposedKernelMinRows(const Weight& W) {
    if (W.panels && (W.type == WeightType::F16 || W.type == WeightType::BF16)) return computeKernels().packedGemmMinRows16;
    return transposedKernelMinRows(W.type);
}

namespace {

using Index = Eigen::Index;

/// The calling thread's buffer for packed x, of at least n floats, starting on a cache line (64 bytes).
float* sizedPackBuffer(Index n) {
    thread_local std::vector<float> buffer; // reused call after call: no fresh pages per projection
    if (buffer.size() < size_t(n) + 16) buffer.resize(size_t(n) + 16);
    const auto address = reinterpret_cast<std::uintptr_t>(buffer.data());
    return buffer.data() + ((64 - address % 64) % 64) / sizeof(float);
}

/// Bytes of packed x up to which every thread of a team packs its own copy (gemmImpl).
constexpr Index kPrivatePackBytes = 2 << 20;

/// Whether a target goes through the kernel's dot products instead of the GEMM: a weight stored [out, in]
/// (Wᵀ rows contiguous: the unembedding, nn.Linear weights) times few rows, where streaming its rows once
/// beats gathering them into micro-panels for too few x panels.
bool useDotProducts(const GemmTarget& t, Index rows) { return t.W.transposed && rows < transposedKernelMinRows(t.W); }

/// Column blocks of one target: [c0, c1) of target t.
struct ColumnBlock {
    size_t target;
    Index c0, c1;
    const void* panels = nullptr; ///< the target's packed copy (weight_panels.h) when the GEMM reads it
};

/// Splits each target's columns into blocks handed out dynamically. Wide blocks re-read the packed x
/// (L3 at long S) as rarely as possible; at least two per thread evens out a core that another process
/// takes. When the packed x fits in L2 (short prompts), re-reading it costs nothing and narrow blocks of
/// 64 columns bound the time one thread can wait for the other to ~10 µs (the S = 20 pass was not
/// measurably faster for it: OpenMP waits stayed ~8% of its samples). Otherwise, 64–256 columns in
/// whole micro-panels (nr columns: 32 for AVX-512, 16 for AVX2), and a block count that is a multiple of
/// the thread count when such a width gives one (2304 columns on 2 threads: 12 blocks of 192, not 9 of
/// 256, which left one thread idle for a ninth).
std::vector<ColumnBlock> columnBlocks(std::span<const GemmTarget> targets, Index rows, Index inner, Index threads,
                                      Index nr) {
    constexpr Index kPackedInL2 = 256 * 1024; // bytes of packed x below which narrow blocks are free
    const Index minPanels = std::max<Index>(1, 64 / nr), maxPanels = std::max<Index>(minPanels, 256 / nr);
    std::vector<ColumnBlock> blocks;
    for (size_t t = 0; t < targets.size(); ++t) {
        const Index cols = targets[t].W.cols;
        const Index panels = (cols + nr - 1) / nr;
        Index blockPanels = minPanels;
        if (useDotProducts(targets[t], rows)) {
            // dot products stream W's rows from memory once: 8 blocks per thread (gpt2-small's unembedding of
            // one row on 2 threads: 17 blocks of up to 3136 rows of W_U, 9.6 MB) took 2.07–2.09 ms against
            // 2.22–2.39 with blocks of 64 rows on Zen 5 (likely a hardware prefetcher restarting at each
            // block); the forward at S = 20 was 3 % faster on avx512. Still enough blocks to even out a thread
            // that another process delays.
            blockPanels = std::max<Index>(minPanels, panels / (8 * threads));
        } else if (rows * inner * Index(sizeof(float)) > kPackedInL2) {
            blockPanels = std::clamp<Index>((panels + 2 * threads - 1) / (2 * threads), minPanels, maxPanels);
            for (Index b = blockPanels; b >= minPanels; --b)
                if (((panels + b - 1) / b) % threads == 0) {
                    blockPanels = b;
                    break;
                }
        }
        const Index blockCols = blockPanels * nr;
        for (Index c0 = 0; c0 < cols; c0 += blockCols) blocks.push_back({t, c0, std::min(cols, c0 + blockCols)});
    }
    return blocks;
}

void gemmImpl(const float* x, Index rows, Index inner, Index ldx, std::span<const GemmTarget> targets, bool parallel) {
    if (rows == 0 || targets.empty()) return;
    if (inner == 0) {
        for (const GemmTarget& t : targets) {
            const Index cols = t.W.cols;
            for (Index r = 0; r < rows; ++r) std::fill(t.y + r * t.ldy, t.y + r * t.ldy + cols, 0.0f);
            if (t.epilogue && cols > 0) t.epilogue(YBlock{0, rows, 0, cols});
        }
        return;
    }
    const ComputeKernels& K = computeKernels();
    bool packNeeded = false;
    for (const GemmTarget& t : targets) packNeeded = packNeeded || !useDotProducts(t, rows);
    // panels of equal height (20 rows on a 6-row tile: 4 of 5, not 6, 6, 6 and 2, whose 4 accumulators
    // cannot keep the FMA units busy)
    const Index nPanels = packNeeded ? (rows + K.mr - 1) / K.mr : 0, kRows = nPanels ? (rows + nPanels - 1) / nPanels : 1;
#ifdef _OPENMP
    const Index threads = parallel ? omp_get_max_threads() : 1;
    double macs = 0;
    for (const GemmTarget& t : targets) macs += double(rows) * double(inner) * double(t.W.cols);
    const bool team = parallel && !omp_in_parallel() && omp_get_max_threads() > 1 && worthThreads(macs);
#else
    const Index threads = 1;
    const bool team = false;
    (void)parallel;
#endif
    // A small x (a short prompt's) is packed by every thread of a team into its own slice of the buffer: no
    // thread waits at a barrier for the other's share, and each reads its copy from its own L2 instead of from
    // the core that wrote it. Measured on Zen 5, gpt2-small forward passes alternating with the shared packing
    // in one process: S = 128 2–3.5 % faster (avx512 79.1 against 81.9 ms, avx2 136.6 against 139.7), S = 20
    // medians 1.5–3 % lower; at S = 1024, where x is 3–12 MiB, packing it twice was no faster, so a large x is
    // still packed once, shared. The calling thread allocates every slice here, before any region starts.
    const bool privatePack = team && packNeeded && rows * inner * Index(sizeof(float)) <= kPrivatePackBytes;
    const Index sliceFloats = (rows * inner + 15) / 16 * 16; // whole cache lines: no slice shares one with the next
    float* packed = nullptr;
    if (packNeeded) packed = sizedPackBuffer(privatePack ? threads * sliceFloats : rows * inner);
    std::vector<ColumnBlock> blocks = columnBlocks(targets, rows, inner, threads, K.nr);
    // the weights' packed copies where they have one (weight_panels.h: an on-first-use copy is packed here,
    // before the threads start; a background one is read in place until the packer has made it, and the
    // lease keeps the packer from dropping the pages this product reads); a target's blocks are consecutive
    std::vector<PanelsLease> leases;
    leases.reserve(targets.size());
    for (size_t b = 0; b < blocks.size(); ++b) {
        const GemmTarget& t = targets[blocks[b].target];
        if (b > 0 && blocks[b - 1].target == blocks[b].target) blocks[b].panels = blocks[b - 1].panels;
        else if (t.W.panels && !useDotProducts(t, rows)) {
            leases.emplace_back(t.W.panels, t.W, int(K.nr));
            blocks[b].panels = leases.back().data();
        }
    }
    // Work units: a column block times a block of rows when x has more rows than one L2-resident row block
    // (long prompts): each unit is one step of the kernel's own loop over row blocks, so every y entry is the
    // same sum in the same order (bitwise the same result). More, smaller units let the dynamic schedule even
    // out the threads (1024 rows × 4 column blocks of W_out: 16 units, not 4), and a unit's epilogue runs
    // while its block of y is in L2. The price: a column block's slice of W, which the kernel's row-block
    // loop re-read from L2, is read once per row block from L3 or DRAM (gpt2-small's W_in at S = 1024: 4 reads
    // of 9.4 MB instead of 1). Measured on Zen 5 (docs/performance.md): avx2 3 % faster at S = 1024, avx512
    // unchanged.
    const Index rowBlock = packNeeded ? std::max<Index>(kRows, K.rowBlock / kRows * kRows) : rows;
    const Index nRowBlocks = (rows + rowBlock - 1) / rowBlock, nBlocks = Index(blocks.size());
    const Index nUnits = nBlocks * nRowBlocks;
    const auto packPanel = [&](Index p, float* into) { K.packPanel(x, ldx, rows, inner, p * kRows, kRows, into); };
    const auto runUnit = [&](Index u, const float* packed) {
        const ColumnBlock& blk = blocks[size_t(u % nBlocks)];
        const GemmTarget& t = targets[blk.target];
        const YBlock part{(u / nBlocks) * rowBlock, std::min(rows, (u / nBlocks + 1) * rowBlock), blk.c0, blk.c1};
        if (useDotProducts(t, rows)) { // fewer rows than any row block: part is all rows
            assert(part.r0 == 0 && part.r1 == rows);
            K.dotRows(x, rows, inner, ldx, t.W.ptr, t.W.type, t.W.decoder, t.W.stride, blk.c0, blk.c1, t.y, t.ldy);
        } else {
            const float* pk = packed + part.r0 * inner;
            float* y = t.y + part.r0 * t.ldy;
            if (blk.panels) K.gemmPanels(pk, part.r1 - part.r0, inner, kRows, blk.panels, t.W.type, blk.c0, blk.c1, y, t.ldy);
            else
                K.gemmColumns(pk, part.r1 - part.r0, inner, kRows, t.W.ptr, t.W.type, t.W.decoder, t.W.stride,
                              t.W.transposed, blk.c0, blk.c1, y, t.ldy);
        }
        if (t.epilogue) t.epilogue(part);
    };
    if (!team) {
        // on the calling thread without entering OpenMP: libgomp's one-thread region still ends each loop with
        // a team barrier that makes a futex syscall, ≈ 3 µs per call on the Zen 5 guest, which made a 20 × 64 ×
        // 20 product (one head's Q·Kᵀ at S = 20, 0.1 µs of work) take 4 µs
        for (Index p = 0; p < nPanels; ++p) packPanel(p, packed);
        for (Index u = 0; u < nUnits; ++u) runUnit(u, packed);
        return;
    }
#pragma omp parallel
    {
        float* mine = packed;
        if (privatePack) {
            mine += Index(omp_get_thread_num()) * sliceFloats; // the team has at most `threads` members
            for (Index p = 0; p < nPanels; ++p) packPanel(p, mine);
        } else {
#pragma omp for schedule(static)
            for (Index p = 0; p < nPanels; ++p) packPanel(p, mine);
        }
#pragma omp for schedule(dynamic)
        for (Index u = 0; u < nUnits; ++u) runUnit(u, mine);
    }
}

} // namespace

void weightGemm(const float* x, Index rows, Index inner, Index ldx, const Weight& W, float* y, Index ldy, bool parallel) {
    const GemmTarget target{W, y, ldy, {}};
    gemmImpl(x, rows, inner, ldx, std::span(&target, 1), parallel);
}

void weightGemmMulti(const float* x, Index rows, Index inner, Index ldx, std::span<const GemmTarget> targets) {
    gemmImpl(x, rows, inner, ldx, targets, true);
}

void weightGemmTall(const float* x, Index rows, Index inner, Index ldx, std::span<const GemmTarget> targets) {
    const Index chunk = 4 * computeKernels().rowBlock, nChunks = (rows + chunk - 1) / chunk;
#pragma omp parallel for schedule(dynamic)
    for (Index c = 0; c < nChunks; ++c) {
        const Index r0 = c * chunk, n = std::min(chunk, rows - r0);
        std::vector<GemmTarget> part(targets.begin(), targets.end());
        for (GemmTarget& t : part) t.y += r0 * t.ldy;
        gemmImpl(x + r0 * ldx, n, inner, ldx, part, false);
    }
}

void weightGemmTall(const Weight& x, std::span<const GemmTarget> targets) {
    if (x.isF32View()) return weightGemmTall(x.data(), x.rows, x.cols, x.stride, targets);
    const Index chunk = 4 * computeKernels().rowBlock, nChunks = (x.rows + chunk - 1) / chunk;
#pragma omp parallel for schedule(dynamic)
    for (Index c = 0; c < nChunks; ++c) {
        const Index r0 = c * chunk, n = std::min(chunk, x.rows - r0);
        const Matrix rows = x.rowBlock(r0, n).toMatrix();
        std::vector<GemmTarget> part(targets.begin(), targets.end());
        for (GemmTarget& t : part) t.y += r0 * t.ldy;
        gemmImpl(rows.data(), n, x.cols, x.cols, part, false);
    }
}

void weightGemmTransposed(const Matrix& x, const Weight& WT, Matrix& y) {
    y.resize(x.rows(), WT.rows);
    if (y.size() == 0) return;
    const GemmTarget target{WT.t(), y.data(), y.cols(), {}};
    gemmImpl(x.data(), x.rows(), x.cols(), x.cols(), std::span(&target, 1), true);
}

Index weightGemmRowBlock() { return computeKernels().rowBlock; }

void weightGemm(const Matrix& x, const Weight& W, const Weight& bias, Matrix& y) {
    y.resize(x.rows(), W.cols);
    weightGemm(x.data(), x.rows(), x.cols(), x.cols(), W, y.data(), y.cols(), true);
    if (!bias.empty()) y.rowwise() += RowVector(bias.toMatrix());
}

} // namespace attnscope
