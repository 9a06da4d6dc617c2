#include "model/core/weight_gemm.h"

#include "model/core/kernels/compute_kernels.h"

#include <algorithm>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnscope {

namespace {

using Index = Eigen::Index;

std::vector<float>& packBuffer() {
    thread_local std::vector<float> buffer; // reused call after call: no fresh pages per projection
    return buffer;
}

/// Column blocks of one target: [c0, c1) of target t.
struct ColumnBlock {
    size_t target;
    Index c0, c1;
};

/// Splits each target's columns into blocks handed out dynamically. Wide blocks re-read the packed x
/// (L3 at long S) as rarely as possible; at least two per thread evens out a core that another process
/// takes. When the packed x fits in L2 (short prompts), re-reading it costs nothing and narrow blocks of
/// 64 columns bound the time one thread can wait for the other to ~10 µs (the S = 20 pass was not
/// measurably faster for it: OpenMP waits stayed ~8% of its samples). Otherwise, 64–256 columns in
/// whole micro-panels (nr columns: 32 for AVX-512, 16 for AVX2), and a block count that is a multiple of
/// the thread count when such a width gives one (2304 columns on 2 threads: 12 blocks of 192, not 9 of
/// 256, which left one thread idle for a ninth).
std::vector<ColumnBlock> columnBlocks(std::span<const GemmTarget> targets, bool transposed, Index rows, Index inner,
                                      Index threads, Index nr) {
    constexpr Index kPackedInL2 = 256 * 1024; // bytes of packed x below which narrow blocks are free
    const Index minPanels = std::max<Index>(1, 64 / nr), maxPanels = std::max<Index>(minPanels, 256 / nr);
    std::vector<ColumnBlock> blocks;
    for (size_t t = 0; t < targets.size(); ++t) {
        const Weight& W = targets[t].W;
        const Index cols = transposed ? W.rows : W.cols;
        const Index panels = (cols + nr - 1) / nr;
        Index blockPanels = minPanels;
        if (rows * inner * Index(sizeof(float)) > kPackedInL2) {
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
    const ComputeKernels& K = computeKernels();
    // panels of equal height (20 rows on a 6-row tile: 4 of 5, not 6, 6, 6 and 2, whose 4 accumulators
    // cannot keep the FMA units busy)
    const Index nPanels = (rows + K.mr - 1) / K.mr, kRows = (rows + nPanels - 1) / nPanels;
#ifdef _OPENMP
    const Index threads = parallel ? omp_get_max_threads() : 1;
    const bool team = parallel && !omp_in_parallel() && omp_get_max_threads() > 1;
#else
    const Index threads = 1;
    const bool team = false;
    (void)parallel;
#endif
    const std::vector<ColumnBlock> blocks = columnBlocks(targets, transposed, rows, inner, threads, K.nr);
    const Index nBlocks = Index(blocks.size());
#pragma omp parallel if (team)
    {
#pragma omp for schedule(static)
        for (Index p = 0; p < nPanels; ++p) K.packPanel(x, ldx, rows, inner, p * kRows, kRows, packed);
#pragma omp for schedule(dynamic)
        for (Index b = 0; b < nBlocks; ++b) {
            const ColumnBlock& blk = blocks[size_t(b)];
            const GemmTarget& t = targets[blk.target];
            K.gemmColumns(packed, rows, inner, kRows, t.W.data, t.W.stride, transposed, blk.c0, blk.c1, t.y, t.ldy);
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

void weightGemmTall(const float* x, Index rows, Index inner, Index ldx, std::span<const GemmTarget> targets) {
    const Index chunk = 4 * computeKernels().rowBlock, nChunks = (rows + chunk - 1) / chunk;
#pragma omp parallel for schedule(dynamic)
    for (Index c = 0; c < nChunks; ++c) {
        const Index r0 = c * chunk, n = std::min(chunk, rows - r0);
        std::vector<GemmTarget> part(targets.begin(), targets.end());
        for (GemmTarget& t : part) t.y += r0 * t.ldy;
        gemmImpl(x + r0 * ldx, n, inner, ldx, part, false, false);
    }
}

void weightGemmTransposed(const Matrix& x, const Weight& WT, Matrix& y) {
    y.resize(x.rows(), WT.rows);
    if (y.size() == 0) return;
    if (x.rows() < kTransposedKernelMinRows) {
        // few rows: dot products that stream Wᵀ once, blocks of its rows shared out dynamically
        const ComputeKernels& K = computeKernels();
        constexpr Index kBlock = 1024;
        const Index n = WT.rows, nBlocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(dynamic) if (nBlocks > 1)
        for (Index b = 0; b < nBlocks; ++b)
            K.dotRows(x.data(), x.rows(), x.cols(), x.cols(), WT.data, WT.stride, b * kBlock, std::min(n, (b + 1) * kBlock),
                      y.data(), y.cols());
    } else {
        const GemmTarget target{WT, y.data(), y.cols(), {}};
        gemmImpl(x.data(), x.rows(), x.cols(), x.cols(), std::span(&target, 1), true, true);
    }
}

Index weightGemmRowBlock() { return computeKernels().rowBlock; }

void weightGemm(const Matrix& x, const Weight& W, const Weight& bias, Matrix& y) {
    y.resize(x.rows(), W.cols);
    weightGemm(x.data(), x.rows(), x.cols(), x.cols(), W, y.data(), y.cols(), true);
    if (!bias.empty()) y.rowwise() += bias.view().row(0);
}

} // namespace attnscope
