#include "model/analysis/topk_accumulator.h"

#include <QCoreApplication>
#include <algorithm>
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
    TopKAccumulator acc(std::min<qint64>(k, qint64(rows) * cols));
    if (acc.k() == 0 || rows == 0 || cols == 0) {
        progress.step(nBlocks, nBlocks, what);
        return {};
    }

    // Visit rows by decreasing norm so the Cauchy–Schwarz bound can end the scan early.
    const Vector aNorm = A.rowwise().norm();
    const float bMaxNorm = B.rowwise().norm().maxCoeff();
    std::vector<int> order(static_cast<size_t>(rows));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return aNorm(x) > aNorm(y); });

    const Matrix Bt = B.transpose();               // [r, cols], so a block GEMM is [n, r]·[r, cols]
    Matrix aBlock(blockRows, A.cols());
    Matrix scores(blockRows, cols);                 // the reusable buffer
    for (qint64 blk = 0; blk < nBlocks; ++blk) {
        progress.step(blk, nBlocks, what);
        const int r0 = int(blk * blockRows), n = std::min(blockRows, rows - r0);
        // Bound on every score in this block and after it; slack covers float rounding of the GEMM.
        const float bound = aNorm(order[size_t(r0)]) * bMaxNorm;
        if (bound * 1.0001f + 1e-6f < acc.threshold()) break;
        for (int i = 0; i < n; ++i) aBlock.row(i) = A.row(order[size_t(r0 + i)]);
        auto s = scores.topRows(n);
        s.noalias() = aBlock.topRows(n) * Bt;
        for (int i = 0; i < n; ++i) {
            const auto row = s.row(i);
            if (row.maxCoeff() < acc.threshold()) continue; // nothing in this row can enter
            const int src = order[size_t(r0 + i)];
            for (int j = 0; j < cols; ++j)
                if (row(j) >= acc.threshold()) acc.offer(src, j, row(j));
        }
    }
    progress.step(nBlocks, nBlocks, what);
    return acc.sorted();
}

} // namespace attnscope
