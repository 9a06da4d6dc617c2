#pragma once
// y = x·W for the forward pass's projections: activations x [pos, in] times a weight W [in, out] that
// stays where it is (memory-mapped file, strided column block of a fused c_attn). Our own kernel
// because the forward is the product and the general libraries lose here in two ways (measured,
// docs/performance.md): Eigen's GEMM packs the whole weight before using it, which at S = 20 triples
// the memory traffic of a pass that should stream each weight once at DRAM speed, and its threads
// busy-wait for each other, which under a second process's load costs 5–10×.
//
// Method (BLIS-style blocking, Van Zee & van de Geijn 2015, without packing W per call): x is packed once
// into panels of mr rows stored k-major; W is read from its packed copy when it has one (Weight::panels,
// weight_panels.h: made once, on first use, for the model's projection weights) or else in place, prefetched
// into L1 and, further ahead, L2, in micro-panels of nr columns × 256 rows by the first x panel's kernel, which also leaves a contiguous
// copy in L1 for the other x panels of the block (L2-resident), all multiplied by a register-tile kernel
// of the instruction set chosen at start-up (model/core/kernels: 14×32 for AVX-512, 6×16 for AVX2, 6×8
// portable). This file is the driver: packing, column blocks and threads. Column blocks are handed to
// the OpenMP threads dynamically: no barrier but the last, each column computed by one thread in a
// fixed order, so the result is bitwise independent of the thread count and of scheduling (not of
// the kernel: each instruction set rounds in its own order, within float32 rounding of each other).

#include "model/core/tensor.h"

#include <functional>
#include <span>

namespace attnscope {

/// y [rows, cols] = x [rows, inner] · W [inner, cols] (+ bias [1, cols] on every row when bias is
/// not empty). x must be a contiguous row-major Matrix; W any Weight (F32, F16 or BF16, stored
/// [in, out] or [out, in]: read in place, 16-bit values widened in the kernel; a weight stored [out, in]
/// times fewer than transposedKernelMinRows(W) rows goes through the kernel's dot products instead). y is resized. Runs on the OpenMP threads unless called inside a parallel region, where
/// it runs on the calling thread only. Accumulates in float32 like Eigen/BLAS sgemm; results agree
/// with Eigen's product to float rounding (order of the k-sum differs), which tests bound.
void weightGemm(const Matrix& x, const Weight& W, const Weight& bias, Matrix& y);

/// The same for x given by pointer: rows × inner with row stride ldx (e.g. a column block of z),
/// result into y (rows × W.cols, row stride ldy). No resizing, no bias; `parallel` = false runs on
/// the calling thread (for use inside an OpenMP region over heads).
void weightGemm(const float* x, Eigen::Index rows, Eigen::Index inner, Eigen::Index ldx, const Weight& W, float* y,
                Eigen::Index ldy, bool parallel);

/// A block of y: rows [r0, r1) × columns [c0, c1).
struct YBlock {
    Eigen::Index r0, r1, c0, c1;
};

/// One product of weightGemmMulti: y [rows, W.cols] (row stride ldy) = x · W.
struct GemmTarget {
    Weight W;                  ///< [inner, cols], any row stride (read in place)
    float* y = nullptr;        ///< [rows, cols] output, row stride ldy
    Eigen::Index ldy = 0;
    /// Optional: called once for every block of y as soon as its entries are final, on the thread that
    /// computed them, while they are still in its cache (bias, activation, residual add): a column block
    /// times all rows, or times one L2-sized block of rows when x has more rows than that (long prompts).
    /// Blocks are disjoint and cover y; the epilogue must touch only its block (row-local work).
    std::function<void(const YBlock& block)> epilogue;
};

/// Several products of the same x [rows, inner] (row stride ldx), e.g. W_Q, W_K, W_V of one ln1: x is
/// packed once and all targets' column blocks are shared out in one parallel region, so the threads
/// finish together instead of once per product. Each y is bitwise what weightGemm computes for it.
/// Runs on the OpenMP threads (the calling thread only inside a parallel region).
void weightGemmMulti(const float* x, Eigen::Index rows, Eigen::Index inner, Eigen::Index ldx,
                     std::span<const GemmTarget> targets);

/// The same products for an x with many rows, such as an embedding matrix [d_vocab, d_model]: rows in
/// chunks handed to the OpenMP threads, each chunk's products computed by one thread (packing a chunk,
/// not all of x). Each y is bitwise what weightGemmMulti computes; targets must have no epilogue.
void weightGemmTall(const float* x, Eigen::Index rows, Eigen::Index inner, Eigen::Index ldx,
                    std::span<const GemmTarget> targets);

/// The same for x a weight of any type and layout [rows, inner] (an embedding matrix stored as F16, BF16
/// or block-quantized rows): each chunk of rows converted to float32 first.
void weightGemmTall(const Weight& x, std::span<const GemmTarget> targets);

/// y [rows, WT.rows] = x [rows, inner] · WTᵀ for WT [cols, inner] (the unembedding W_U_T = wte
/// [d_vocab, d_model]): weightGemm with WT.t(), so for a WT stored row-major, each nr-row slice of WT is
/// gathered into an L1 micro-panel once and used by every x panel, and below transposedKernelMinRows(WT)
/// rows the kernel's dot products of x's rows with WT's rows stream WT once. Every caller of the unembedding uses this one function, and in both classes a row's result
/// does not depend on the other rows, so a row's logits are bitwise the same whichever analysis
/// computes them within the same row count class.
void weightGemmTransposed(const Matrix& x, const Weight& WT, Matrix& y);

/// Row count from which a weight stored [out, in] (weightGemmTransposed, nn.Linear weights) is multiplied
/// by the GEMM kernel (below it, dotRows; the two round differently, each independently of the other rows)
/// for float32 and block-quantized weights.
inline constexpr Eigen::Index kTransposedKernelMinRows = 64;

/// The same threshold for a weight of element type `type` without a packed copy on the compute kernels in
/// use: 16-bit weights switch at ComputeKernels::transposedGemmMinRows16 (16 on AVX2, 64 elsewhere), others
/// at kTransposedKernelMinRows.
Eigen::Index transposedKernelMinRows(WeightType type);

/// The threshold for W itself, the one weightGemm applies: a 16-bit W with a packed copy attached
/// (Weight::panels, as the model attaches to its layers' projections) switches at
/// ComputeKernels::packedGemmMinRows16 (2 on AVX-512 and AVX2), any other W as transposedKernelMinRows(W.type).
/// Every caller that must reproduce a product's rounding class (the logit lens against the forward's last
/// logits, patching's recomputed rows against the clean pass) asks this function.
Eigen::Index transposedKernelMinRows(const Weight& W);

/// Rows of packed x per L2-resident block of the GEMM kernel (336 for every kernel): a caller that batches
/// rows (the logit lens) uses multiples of it.
Eigen::Index weightGemmRowBlock();

} // namespace attnscope
