#pragma once
// y = x·W for the forward pass's projections: activations x [pos, in] times a weight W [in, out] that
// stays where it is (memory-mapped file, strided column block of a fused c_attn). Our own kernel
// because the forward is the product and the general libraries lose here in two ways (measured,
// README "Benchmarks"): Eigen's GEMM packs the whole weight before using it, which at S = 20 triples
// the memory traffic of a pass that should stream each weight once at DRAM speed, and its threads
// busy-wait for each other, which under a second process's load costs 5–10×.
//
// Method (BLIS-style blocking, Van Zee & van de Geijn 2015, without packing W): x is packed once into
// panels of kRows rows stored k-major; W is read in place (prefetched into L1 and, further ahead, L2) in
// micro-panels of 32 columns × kDepth rows by the first x panel's kernel, which also leaves a contiguous
// 32 KiB copy in L1 for the other x panels of the block (L2-resident), all multiplied by a
// 14×32 register-tile kernel written with GCC/Clang vector extensions (AVX-512 under -march=native,
// narrower SIMD elsewhere, same arithmetic order). Column blocks are handed to the OpenMP threads
// dynamically: no barrier but the last, each column computed by one thread in a fixed order, so the
// result is bitwise independent of the thread count and of scheduling.

#include "model/core/tensor.h"

#include <functional>
#include <span>

namespace attnscope {

/// y [rows, cols] = x [rows, inner] · W [inner, cols] (+ bias [1, cols] on every row when bias is
/// not empty). x must be a contiguous row-major Matrix; W any row-major view (Weight, with its row
/// stride). y is resized. Runs on the OpenMP threads unless called inside a parallel region, where
/// it runs on the calling thread only. Accumulates in float32 like Eigen/BLAS sgemm; results agree
/// with Eigen's product to float rounding (order of the k-sum differs), which tests bound.
void weightGemm(const Matrix& x, const Weight& W, const Weight& bias, Matrix& y);

/// The same for x given by pointer: rows × inner with row stride ldx (e.g. a column block of z),
/// result into y (rows × W.cols, row stride ldy). No resizing, no bias; `parallel` = false runs on
/// the calling thread (for use inside an OpenMP region over heads).
void weightGemm(const float* x, Eigen::Index rows, Eigen::Index inner, Eigen::Index ldx, const Weight& W, float* y,
                Eigen::Index ldy, bool parallel);

/// One product of weightGemmMulti: y [rows, W.cols] (row stride ldy) = x · W.
struct GemmTarget {
    Weight W;                  ///< [inner, cols], any row stride (read in place)
    float* y = nullptr;        ///< [rows, cols] output, row stride ldy
    Eigen::Index ldy = 0;
    /// Optional: called once for every column block [c0, c1) of y as soon as those columns are final, on
    /// the thread that computed them, while they are still in its cache (bias, activation, residual add).
    /// Blocks are disjoint and cover [0, cols); the epilogue must touch only its block's columns.
    std::function<void(Eigen::Index c0, Eigen::Index c1)> epilogue;
};

/// Several products of the same x [rows, inner] (row stride ldx), e.g. W_Q, W_K, W_V of one ln1: x is
/// packed once and all targets' column blocks are shared out in one parallel region, so the threads
/// finish together instead of once per product. Each y is bitwise what weightGemm computes for it.
/// Runs on the OpenMP threads (the calling thread only inside a parallel region).
void weightGemmMulti(const float* x, Eigen::Index rows, Eigen::Index inner, Eigen::Index ldx,
                     std::span<const GemmTarget> targets);

/// y [rows, WT.rows] = x [rows, inner] · WTᵀ for a weight stored transposed, WT [cols, inner] (the
/// unembedding W_U_T = wte [d_vocab, d_model]): the same kernel, each 32-row slice of WT transposed into
/// an L1 micro-panel once and used by every x panel. Below 64 rows, Eigen's product
/// (columnParallelProduct) instead, which streams WT without the transposing copy. Every caller of the unembedding
/// uses this one function, so a row's logits are bitwise the same whichever analysis computes them for
/// the same row count class.
void weightGemmTransposed(const Matrix& x, const Weight& WT, Matrix& y);

/// Row count from which weightGemmTransposed uses its own kernel, whose result for a row does not
/// depend on the other rows of x (below it, Eigen's product, whose rounding may depend on the row count).
inline constexpr Eigen::Index kTransposedKernelMinRows = 64;

} // namespace attnscope
