#pragma once
// A weight's copy in the order the GEMM kernel reads it: micro-panels of nr columns (the kernel's register
// tile width: 32 on AVX-512, 16 on AVX2, 8 portable), each stored as consecutive rows of nr elements.
// Read in place, a micro-panel's rows are 3–12 KiB apart (GPT-2's [in, out] rows) or have to be gathered
// from [out, in] rows with register transposes (nn.Linear, GGUF): the hardware prefetchers stop at every
// page and a short prompt's pass is bound by the W lines in flight. Packed, each micro-panel block is one
// stretch of memory. Measured on Zen 4 (README "Benchmarks"): 20 rows × gpt2-small's MLP weights from DRAM,
// 70 → 145 GFLOP/s on avx2, 92 → 164 on avx512; 128 rows 150 → 185 (avx2). Same kernels, same values,
// same order: the results are bitwise those of the weight in place, row count for row count (a 16-bit
// weight stored [out, in] with a copy goes through the GEMM from fewer rows than in place, where dot products
// stay faster: weight_gemm.h, transposedKernelMinRows(W)).

#include "model/core/tensor.h"

#include <atomic>
#include <cstddef>
#include <mutex>

namespace attnscope {

/// Bytes of W [inner, cols] packed for micro-panels of nr columns: ⌈cols/nr⌉·nr·inner elements of W's type
/// (4 bytes for F32, 2 for F16 and BF16: the stored bits, not widened). 0 for a block-quantized weight.
size_t panelBytes(const Weight& W, int nr);

/// Writes W [inner, cols] (F32, F16 or BF16, stored [inner, cols] or transposed) panel-major into dst
/// (panelBytes(W, nr) bytes): panel p = columns [p·nr, p·nr + nr) as inner rows of nr elements, element
/// (k, c) at element (p·inner + k)·nr + (c − p·nr) of dst; columns past cols are zero. Runs on the OpenMP
/// threads unless called inside a parallel region. std::logic_error for a block-quantized weight.
void packPanels(const Weight& W, int nr, void* dst);

/// The packed copy of one weight, made on first use by weightGemm (weight_gemm.h) and kept: owned by the
/// Model that attaches it to its weight's Weight::panels. Once packed, the pages of a mapped file that held
/// the weight are dropped from this process's resident memory (file_mappings.h), so the copy takes their
/// place instead of adding to them. Thread-safe.
class WeightPanels {
public:
    /// Records the weight (a view: the memory it points to must outlive this object); packs nothing yet.
    explicit WeightPanels(const Weight& source);
    ~WeightPanels();
    WeightPanels(const WeightPanels&) = delete;
    WeightPanels& operator=(const WeightPanels&) = delete;

    /// The panels of `w` for micro-panels of nr columns, packed on the first call (the others wait for it).
    /// nullptr, and the caller reads the weight in place, when `w` is not the recorded weight (a column
    /// block, a transpose: its geometry differs), when the first call asked for another nr, or when the
    /// copy could not be allocated.
    const void* panelsFor(const Weight& w, int nr) const;
    /// Bytes of the copy once packed (0 before, or when it could not be allocated).
    size_t packedBytes() const;
    /// Where `w` lies in the packed copy, for reading its values from there instead of from the file pages
    /// the copy replaced (Weight::toMatrix, copyRow): the copy, with (r0, c0) the position of w's element
    /// (0, 0) in the recorded weight [inner, cols] and nr its micro-panel width, when the copy is packed and
    /// `w` is the recorded weight or a block of it (colBlock/rowBlock: same type, layout and stride, inside
    /// it); nullptr otherwise. Element (r, c) of w is then element ((c0+c)/nr·inner + r0+r)·nr + (c0+c)%nr.
    const void* packedBlock(const Weight& w, Eigen::Index& r0, Eigen::Index& c0, Eigen::Index& inner, int& nr) const;

private:
    bool sameWeight(const Weight& w) const;

    Weight source_;
    mutable std::once_flag once_;
    mutable void* data_ = nullptr;
    mutable std::atomic<const void*> published_ = nullptr; ///< data_ once packed (release), for packedBlock
    mutable std::atomic<size_t> bytes_ = 0;
    mutable int nr_ = 0;
};

} // namespace attnscope
