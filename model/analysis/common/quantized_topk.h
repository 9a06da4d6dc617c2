#pragma once
// Top-k cells of a low-rank product S = A·Bᵀ (A [rows, r], B [cols, r], r small, e.g. d_head = 64)
// by a cheap int8 candidate pass with a rigorous error bound plus an exact F32 rescoring of the
// candidates. Used for the embedding-space OV/QK pair projections (Dar et al. 2022, arXiv:2209.02535),
// where S is [d_vocab, d_vocab] (2.5·10⁹ cells for GPT-2) and the exact blocked GEMM scan of
// topKOfProduct (topk_accumulator.h) spends its time writing and re-reading scores that cannot enter.
//
// Quantisation (symmetric int8): A per row, B with one global scale,
//   ã_ik = round(a_ik / s_i),  s_i = max_k |a_ik| / 127;   b̃_jk = round(b_jk / t),  t = max_jk |b_jk| / 127,
// and the approximate score is s_i·t·(ã_i·b̃_j), with the integer dot product computed exactly in int32
// (by the compute kernel chosen at start-up: AVX512-VNNI vpdpbusd, AVX2 vpmaddubsw/vpmaddwd, or a portable
// loop; all give the same ints, compute_kernels.h int8FirstHit).
//
// Error bound. Write e^a_i = a_i − s_i·ã_i, e^b_j = b_j − t·b̃_j. Then
//   a_i·b_j − s_i t (ã_i·b̃_j) = a_i·e^b_j + e^a_i·(t b̃_j), so
//   |a_i·b_j − s_i t ã_i·b̃_j| ≤ ‖a_i‖₁·max_jk|e^b_jk| + min(max_k|e^a_ik|·max_j‖t b̃_j‖₁, ‖e^a_i‖₁·t·max_jk|b̃_jk|),
// and the exact F32 score f_ij (below) satisfies |f_ij − a_i·b_j| ≤ γ_r Σ_k|a_ik b_jk| ≤ γ_r‖a_i‖₂·max_j‖b_j‖₂,
// γ_r = r·u/(1 − r·u), u = 2⁻²⁴ (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed.,
// §3.1; holds for any summation order). The sum of the three terms is err_i (computed in double from the
// measured residuals and inflated by 10⁻⁹ relative), a per-row bound: |f_ij − s_i t ã_i·b̃_j| ≤ err_i.
// A cell is a candidate iff s_i t ã_i·b̃_j + err_i ≥ L, where L is a lower bound of the final k-th best
// F32 score (the k-th best of a seed of exact scores, minus its own rounding slack, then the running
// k-th best of the rescored candidates). Every cell of the true top-k has f_ij ≥ L, so it is a
// candidate, is rescored and enters: the result equals the exact top-k.
//
// Exact F32 score: f_ij = the sequential FMA chain acc = fma(a_ik, b_jk, acc) for k = 0..r−1 from 0
// (the arithmetic of Eigen 3.4's GEMM kernel for > 99% of the cells of a tile; where Eigen sums in
// another order the two differ by a few ulps, within the γ_r bound above, so the exact scan
// topKOfProduct can order cells whose scores are that close differently).
//
// Kernel: tiles of 6 rows × 64 columns over column chunks that stay in L2; each tile's int32 scores are
// compared with the rows' integer thresholds in registers and never stored. Cost with VNNI:
// rows·cols·⌈r/4⌉/16 vpdpbusd (2.5·10⁹ for GPT-2's W_OV), ~4× fewer instructions than F32 FMAs and no
// score traffic through memory; with AVX2 four instructions per 8 columns × 4 bytes.

#include "model/analysis/common/topk_accumulator.h"

namespace attnscope {

enum class QuantizedKernel {
    Auto,     ///< the int8 pass of the compute kernels chosen at start-up (compute_kernels.h)
    Portable, ///< the portable kernels' int16 loop on the same quantisation (a reference for the SIMD passes)
};

/// What a topKOfProductQuantized call did (for tests and benchmarks).
struct QuantizedTopKStats {
    qint64 candidates = 0;  ///< cells flagged by the int8 pass and rescored in F32
    qint64 rowsScanned = 0; ///< rows of A whose int8 scores were computed (the rest were cut by the Cauchy–Schwarz stop)
    float seedThreshold = 0; ///< the lower bound L the scan started from (−inf if the seed had fewer than k cells)
    bool simd = false;      ///< an int8 pass with intrinsics ran (not the portable loop)
    const char* int8Kernel = ""; ///< which (compute_kernels.h int8Description)
    bool exactFallback = false; ///< A or B held NaN/Inf, so topKOfProduct ran instead
};

/// True when the compute kernels in use have an int8 pass with intrinsics (AVX512-VNNI or AVX2).
bool quantizedTopKHasSimd();

/// The k largest cells of S = A·Bᵀ (A [rows, r], B [cols, r]), best first (TopKAccumulator order: score
/// desc, row asc, col asc), scores being the exact F32 scores defined above. Same cells as
/// topKOfProduct (scores within the γ_r bound of its GEMM's); see the file comment for the method and
/// its error bound. Rows are scanned in order of decreasing ‖a_i‖ in panels shared by the OpenMP
/// threads (one parallel region); the scan stops once ‖a_i‖·max‖b_j‖ is below L. Non-finite inputs fall
/// back to topKOfProduct. Progress units: panels done out of the total, labelled `what`, reported (and
/// cancellation polled) on the calling thread only; throws Cancelled. Throws InputError if A and B
/// have different numbers of columns.
std::vector<ScoredPair> topKOfProductQuantized(const Matrix& A, const Matrix& B, int k, const Progress& progress = {},
                                               const QString& what = {}, QuantizedKernel kernel = QuantizedKernel::Auto,
                                               QuantizedTopKStats* stats = nullptr);

} // namespace attnscope
