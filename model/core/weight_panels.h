#pragma once
// A weight's copy in the order the GEMM kernel reads it: micro-panels of nr columns (the kernel's register
// tile width: 32 on AVX-512, 16 on AVX2, 8 portable), each stored as consecutive rows of nr elements.
// Read in place, a micro-panel's rows are 3–12 KiB apart (GPT-2's [in, out] rows) or have to be gathered
// from [out, in] rows with register transposes (nn.Linear, GGUF): the hardware prefetchers stop at every
// page and a short prompt's pass is bound by the W lines in flight. Packed, each micro-panel block is one
// stretch of memory. Measured on Zen 4 (docs/performance.md): 20 rows × gpt2-small's MLP weights from DRAM,
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
/// threads when `team` is true, unless called inside a parallel region; else on the calling thread.
/// std::logic_error for a block-quantized weight.
void packPanels(const Weight& W, int nr, void* dst, bool team = true);

/// How a WeightPanels gets packed.
enum class PackingMode {
    OnFirstUse, ///< the first product that asks for the copy packs it and waits for it (tests, one-off weights)
    Background, ///< a WeightPacker (weight_packer.h) packs it; until then products read the weight in place
};

/// The packed copy of one weight, owned by the Model that attaches it to its weight's Weight::panels. Once
/// packed, the pages of a mapped file that held the weight are dropped from this process's resident memory
/// (file_mappings.h), so the copy takes their place instead of adding to them. Thread-safe.
///
/// In PackingMode::Background the first forward pass after opening a model does not wait for 324 MiB
/// (gpt2-small) to 1.8 GiB (a 1B Llama) of copies: its products read the weights in place, bitwise the same
/// results (the kernels read the same values in the same order; only the 16-bit [out, in] threshold depends
/// on the copy, and it depends on it being attached, not packed: weight_gemm.h transposedKernelMinRows), while
/// the model's packer makes the copies at idle priority. A product that reads in place holds a lease
/// (PanelsLease) so that the packer drops the mapped pages only once no product reads them any more.
class WeightPanels {
public:
    /// Records the weight (a view: the memory it points to must outlive this object); packs nothing yet.
    /// nr: the micro-panel width the copy will have (ComputeKernels::nr).
    /// lastInPlaceRead (Background mode, may be null): where a product reading the weight in place records when
    /// (steady_clock nanoseconds), so that the packer can wait until the pass that reads in place is over.
    WeightPanels(const Weight& source, int nr, PackingMode mode = PackingMode::OnFirstUse,
                 std::atomic<long long>* lastInPlaceRead = nullptr);
    ~WeightPanels();
    WeightPanels(const WeightPanels&) = delete;
    WeightPanels& operator=(const WeightPanels&) = delete;

    /// The copy of `w` for micro-panels of nr columns, or nullptr: the caller then reads the weight in place
    /// (the same values). nullptr when `w` is not the recorded weight (a column block, a transpose: its
    /// geometry differs), when nr is not the recorded width, when the copy could not be allocated, and in
    /// Background mode while the packer has not published it. OnFirstUse: packs on the first call (the
    /// others wait for it).
    const void* panelsFor(const Weight& w, int nr) const;
    /// Makes the copy now, if it is not made yet, and drops the mapped pages it replaces once no product reads
    /// them in place. The packer's entry point; `stop` (may be null) ends the wait for in-place readers early.
    void pack(const std::atomic<bool>* stop = nullptr) const;
    /// Bytes of the copy once packed (0 before, or when it could not be allocated).
    size_t packedBytes() const;
    /// Where `w` lies in the packed copy, for reading its values from there instead of from the file pages
    /// the copy replaced (Weight::toMatrix, copyRow): the copy, with (r0, c0) the position of w's element
    /// (0, 0) in the recorded weight [inner, cols] and nr its micro-panel width, when the copy is packed and
    /// `w` is the recorded weight or a block of it (colBlock/rowBlock: same type, layout and stride, inside
    /// it); nullptr otherwise. Element (r, c) of w is then element ((c0+c)/nr·inner + r0+r)·nr + (c0+c)%nr.
    const void* packedBlock(const Weight& w, Eigen::Index& r0, Eigen::Index& c0, Eigen::Index& inner, int& nr) const;

private:
    friend class PanelsLease;
    bool sameWeight(const Weight& w) const;
    void packOnce() const;

    Weight source_;
    int nr_;
    PackingMode mode_;
    mutable std::once_flag once_;
    mutable void* data_ = nullptr;
    mutable std::atomic<const void*> published_ = nullptr; ///< data_ once packed
    mutable std::atomic<size_t> bytes_ = 0;
    mutable std::atomic<int> inPlaceReaders_ = 0; ///< products reading the weight in place (Background mode)
    mutable std::atomic<bool> dropped_ = false;   ///< the replaced mapped pages were dropped
    mutable std::atomic<bool> populated_ = false; ///< a product mapped the pages to read them in place
    std::atomic<long long>* lastInPlaceRead_;     ///< the packer's record of in-place reads, or null
};

/// What a product reads a weight from: the packed copy (data() non-null), or the weight in place, in which
/// case the lease counts the product as an in-place reader of a Background-mode copy until it is destroyed.
/// Movable, not copyable.
class PanelsLease {
public:
    PanelsLease() = default;
    /// Asks `panels` (may be null) for the copy of `w` with micro-panel width nr.
    PanelsLease(const WeightPanels* panels, const Weight& w, int nr);
    PanelsLease(PanelsLease&& o) noexcept : data_(o.data_), reader_(o.reader_) { o.reader_ = nullptr; }
    PanelsLease& operator=(PanelsLease&& o) noexcept;
    PanelsLease(const PanelsLease&) = delete;
    PanelsLease& operator=(const PanelsLease&) = delete;
    ~PanelsLease();
    /// The packed copy, or nullptr: read the weight in place.
    const void* data() const { return data_; }

private:
    const void* data_ = nullptr;
    const WeightPanels* reader_ = nullptr; ///< whose in-place reader count this lease holds
};

} // namespace attnscope
