#pragma once
// y = x·W with W's output columns split among the OpenMP threads, each running a single-threaded
// Eigen GEMM on its own column block. Eigen's own multi-threaded GEMM makes its threads busy-wait
// for each other after every packed block; when another process takes a core for a moment (a
// browser on a laptop, a compiler here) the waiting thread spins through its time slice, and the
// forward pass measured 5–10× slower under load (perf: gemm_pack_lhs + the spin dominate).
// Independent column blocks, handed out dynamically, need one barrier at the end only.

#include "model/core/tensor.h"

#include <algorithm>

namespace attnscope {

/// y [rows, cols] = x [rows, inner] · W [inner, cols] (W any Eigen expression, e.g. a MatrixView or
/// its transpose), computed in blocks of `blockCols` output columns across the OpenMP threads.
/// Results are bitwise independent of the thread count (each column block is one fixed GEMM).
template <typename Lhs, typename Rhs>
void columnParallelProduct(const Lhs& x, const Rhs& W, Matrix& y, Eigen::Index blockCols = 256) {
    const Eigen::Index cols = W.cols();
    y.resize(x.rows(), cols);
    const Eigen::Index nBlocks = (cols + blockCols - 1) / blockCols;
#pragma omp parallel for schedule(dynamic)
    for (Eigen::Index b = 0; b < nBlocks; ++b) {
        const Eigen::Index c0 = b * blockCols, w = std::min(blockCols, cols - c0);
        y.middleCols(c0, w).noalias() = x * W.middleCols(c0, w);
    }
}

} // namespace attnscope
