#include "model/analysis/common/topk_accumulator.h"

#include "model/core/parallel_scan.h"

#include <QCoreApplication>
#include <algorithm>
#include <atomic>
#include <limits>
#include <numeric>

namespace attnscope {

namespace {
/// Heap order: the front is the worst kept cell.
bool heapLess(const ScoredPair& a, const ScoredPair& b) { return TopKAccumulator::better(a, b); }
} // namespace

TopKAccumulator::TopKAccumulator(int k) : k_(std::max(0, k)) { heap_.reserve(size_t(k_)); }

float TopKAccumulator::threshold() const {
    if (k_ == 0) return std::numeric_limits<float>::infinity();
    return full() ? heap_.front().score : -std::numeric_limits<float>::infinity();
}

void TopKAccumulator::offer(int row, int col, float score) {
    if (k_ == 0) return;
    const ScoredPair p{row, col, score};
    if (!full()) {
        heap_.push_back(p);
        std::push_heap(heap_.begin(), heap_.end(), heapLess);
    } else if (better(p, heap_.front())) {
        std::pop_heap(heap_.begin(), heap_.end(), heapLess);
        heap_.back() = p;
        std::push_heap(heap_.begin(), heap_.end(), heapLess);
    }
}

std::vector<ScoredPair> TopKAccumulator::sorted() const {
    std::vector<ScoredPair> out = heap_;
    std::sort(out.begin(), out.end(), better);
    return out;
}

std::vector<ScoredToken> topEntries(const Eigen::Ref<const RowVector>& values, int k, bool largest) {
    const int n = int(values.size());
    k = std::clamp(k, 0, n);
    std::vector<int> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    auto order = [&](int a, int b) {
        const float va = values(a), vb = values(b);
        if (va != vb) return largest ? va > vb : va < vb;
        return a < b;
    };
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), order);
    std::vector<ScoredToken> out;
    out.reserve(size_t(k));
    for (int i = 0; i < k; ++i) out.push_back({idx[size_t(i)], values(idx[size_t(i)])});
    return out;
}

std::vector<ScoredPair> topKOfProduct(const Matrix& A, const Matrix& B, int k, int blockRows,
                                      const Progress& progress, const QString& what) {
    if (A.cols() != B.cols())
        throw InputError(QCoreApplication::translate("topk", "Low-rank factors differ in width: %1 vs %2 columns.")
                             .arg(A.cols()).arg(B.cols()));
    if (blockRows < 1)
        throw InputError(QCoreApplication::translate("topk", "Block size must be at least 1 row, not %1.").arg(blockRows));
    const int rows = int(A.rows()), cols = int(B.rows());
    const qint64 nBlocks = (qint64(rows) + blockRows - 1) / blockRows;
    const int kk = int(std::min<qint64>(k, qint64(rows) * cols));
    if (kk <= 0 || rows == 0 || cols == 0) {
        progress.step(nBlocks, nBlocks, what);
        return {};
    }

    // Visit rows by decreasing norm so the Cauchy–Schwarz bound can end the scan early.
    const Vector aNorm = A.rowwise().norm();
    const float bMaxNorm = B.rowwise().norm().maxCoeff();
    std::vector<int> order(static_cast<size_t>(rows));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return aNorm(x) > aNorm(y); });
    const Matrix Bt = B.transpose(); // [r, cols], so a tile GEMM is [m, r]·[r, w]

    // Blocks are handed to the OpenMP threads in order; each thread keeps its own top-k. The largest
    // of the threads' k-th best scores is a lower bound of the global k-th best (each thread's k cells
    // are all ≥ it), so every thread may skip what is below it. Tiles of kTileRows × kTileCols keep the
    // scores a GEMM writes in cache while the scan reads them back. Only the calling thread (0) reports
    // progress and polls for cancellation.
    constexpr int kTileRows = 128, kTileCols = 4096;
    const int nThreads = parallelScanThreads();
    std::vector<TopKAccumulator> accs;
    std::vector<Matrix> aTiles, scoreTiles; // per thread
    for (int t = 0; t < nThreads; ++t) {
        accs.emplace_back(kk);
        aTiles.emplace_back(kTileRows, A.cols());
        scoreTiles.emplace_back(kTileRows, kTileCols);
    }
    std::atomic<float> sharedThreshold(-std::numeric_limits<float>::infinity());
    parallelScan(nBlocks, progress, what, [&](int t, qint64 blk) {
        TopKAccumulator& acc = accs[size_t(t)];
        Matrix &aTile = aTiles[size_t(t)], &scores = scoreTiles[size_t(t)];
        auto threshold = [&] { return std::max(acc.threshold(), sharedThreshold.load(std::memory_order_relaxed)); };
        const int r0 = int(blk * blockRows), n = std::min(blockRows, rows - r0);
        // Bound on every score in this block and after it; slack covers float rounding of the GEMM.
        const float bound = aNorm(order[size_t(r0)]) * bMaxNorm;
        if (bound * 1.0001f + 1e-6f < threshold()) return false;
        for (int i0 = 0; i0 < n; i0 += kTileRows) {
            const int m = std::min(kTileRows, n - i0);
            for (int i = 0; i < m; ++i) aTile.row(i) = A.row(order[size_t(r0 + i0 + i)]);
            for (int c0 = 0; c0 < cols; c0 += kTileCols) {
                const int w = std::min(kTileCols, cols - c0);
                auto s = scores.topLeftCorner(m, w);
                s.noalias() = aTile.topRows(m) * Bt.middleCols(c0, w);
                for (int i = 0; i < m; ++i) {
                    const auto row = s.row(i);
                    if (row.maxCoeff() < threshold()) continue; // nothing in this row can enter
                    const int src = order[size_t(r0 + i0 + i)];
                    for (int j = 0; j < w; ++j)
                        if (row(j) >= acc.threshold()) acc.offer(src, c0 + j, row(j));
                }
            }
        }
        float shared = sharedThreshold.load();
        while (acc.threshold() > shared && !sharedThreshold.compare_exchange_weak(shared, acc.threshold())) {}
        return true;
    });
    TopKAccumulator merged(kk);
    for (const TopKAccumulator& a : accs)
        for (const ScoredPair& p : a.sorted()) merged.offer(p.row, p.col, p.score);
    return merged.sorted();
}

} // namespace attnscope
