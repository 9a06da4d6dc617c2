#include "model/core/weight_panels.h"

#include "model/core/file_mappings.h"
#include "model/core/team_loop.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace attnscope {

namespace {

using Index = Eigen::Index;

/// Copies stored rows [k0, k1) of W ([inner, cols], not transposed) into every panel of dst.
void packRowBlock(const Weight& W, int nr, Index k0, Index k1, int bytes, unsigned char* dst) {
    const auto* src = static_cast<const unsigned char*>(W.ptr);
    const size_t rowBytes = size_t(nr) * size_t(bytes), panelStride = size_t(W.rows) * rowBytes;
    const Index panels = (W.cols + nr - 1) / nr;
    for (Index p = 0; p < panels; ++p) {
        const Index c0 = p * nr, w = std::min<Index>(nr, W.cols - c0);
        for (Index k = k0; k < k1; ++k) {
            unsigned char* row = dst + size_t(p) * panelStride + size_t(k) * rowBytes;
            std::memcpy(row, src + (size_t(k) * size_t(W.stride) + size_t(c0)) * size_t(bytes), size_t(w) * size_t(bytes));
            if (w < nr) std::memset(row + size_t(w) * size_t(bytes), 0, size_t(nr - w) * size_t(bytes));
        }
    }
}

/// Copies panel p of W (stored transposed) into dst (inner rows of nr elements of `bytes` each).
void packTransposedPanel(const Weight& W, int nr, Index p, int bytes, unsigned char* dst) {
    const Index inner = W.rows, c0 = p * nr, w = std::min<Index>(nr, W.cols - c0);
    const auto* src = static_cast<const unsigned char*>(W.ptr);
    unsigned char* panel = dst + size_t(p) * size_t(inner) * size_t(nr) * size_t(bytes);
    const size_t rowBytes = size_t(nr) * size_t(bytes);
    // element (k, c) at ptr[c·stride + k]: stored rows c0 … c0 + w − 1 read in stretches of 64 k, written
    // as columns of the panel (which stays in L2 while it is written)
    if (w < nr)
        for (Index k = 0; k < inner; ++k)
            std::memset(panel + size_t(k) * rowBytes + size_t(w) * size_t(bytes), 0, size_t(nr - w) * size_t(bytes));
    constexpr Index kStretch = 64;
    for (Index k0 = 0; k0 < inner; k0 += kStretch) {
        const Index k1 = std::min(inner, k0 + kStretch);
        for (Index c = 0; c < w; ++c) {
            const unsigned char* s = src + (size_t(c0 + c) * size_t(W.stride) + size_t(k0)) * size_t(bytes);
            unsigned char* d = panel + size_t(k0) * rowBytes + size_t(c) * size_t(bytes);
            if (bytes == 4)
                for (Index k = k0; k < k1; ++k, s += 4, d += rowBytes) std::memcpy(d, s, 4);
            else
                for (Index k = k0; k < k1; ++k, s += 2, d += rowBytes) std::memcpy(d, s, 2);
        }
    }
}

/// Memory for a copy of `bytes`, or nullptr. On Linux an anonymous mapping aligned to 2 MiB and advised
/// MADV_HUGEPAGE (transparent huge pages where the system allows them: "always" or "madvise" in
/// /sys/kernel/mm/transparent_hugepage/enabled), then populated in one call (MADV_POPULATE_WRITE, Linux
/// 5.14; on older kernels the pages fault in while the copy is written). Measured on Zen 5 (2026-12-04,
/// gpt2-small, passes alternating between 4 KiB and huge pages, best pass of 5–6): S = 1024 avx2 1136–1161
/// against 1206–1223 ms, avx512 689–716 against 697–741 ms; S = 20 and 128 unchanged; the first pass (which packs)
/// 442–738 against 595–657 ms with 28k page faults instead of 102k. Probably because in huge pages a micro-panel
/// crosses no 4 KiB page boundary, where hardware prefetchers stop (no counters here to confirm it).
void* allocateCopy(size_t bytes) {
#ifdef __linux__
    constexpr size_t huge = size_t(2) << 20;
    void* raw = mmap(nullptr, bytes + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    // keep the 2 MiB-aligned `bytes` of the mapping; freeCopy unmaps exactly those
    const uintptr_t start = reinterpret_cast<uintptr_t>(raw), aligned = (start + huge - 1) & ~uintptr_t(huge - 1);
    if (aligned > start) munmap(raw, aligned - start);
    if (const size_t tail = start + huge - aligned; tail > 0) // what lies past aligned + bytes
        munmap(reinterpret_cast<void*>(aligned + bytes), tail);
    void* p = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE); // advice only: without THP the copy keeps 4 KiB pages
#endif
#ifdef MADV_POPULATE_WRITE
    madvise(p, bytes, MADV_POPULATE_WRITE); // fails with EINVAL before Linux 5.14: then pages fault in
#endif
    return p;
#else
    return ::operator new(bytes, std::align_val_t(64), std::nothrow);
#endif
}

void freeCopy(void* p, size_t bytes) {
#ifdef __linux__
    munmap(p, bytes);
#else
    (void)bytes;
    ::operator delete(p, std::align_val_t(64));
#endif
}

} // namespace

size_t panelBytes(const Weight& W, int nr) {
    if (W.type == WeightType::Blocks || W.empty() || nr <= 0) return 0;
    const size_t panels = size_t((W.cols + nr - 1) / nr);
    return panels * size_t(nr) * size_t(W.rows) * size_t(W.elementBytes());
}

void packPanels(const Weight& W, int nr, void* dst) {
    if (W.type == WeightType::Blocks) throw std::logic_error("packPanels: block-quantized weights are not packed");
    if (W.empty() || W.rows == 0 || W.cols == 0) return;
    const Index panels = (W.cols + nr - 1) / nr;
    const int bytes = W.elementBytes();
    auto* out = static_cast<unsigned char*>(dst);
    // on the OpenMP team unless a parallel region is already running (teamFor)
    if (W.transposed) {
        teamFor<TeamSchedule::Static>(panels, true, [&](Index p) { packTransposedPanel(W, nr, p, bytes, out); });
        return;
    }
    // [inner, cols] stored: blocks of whole stored rows, read in order (the prefetchers follow them) and
    // written out as one stretch per panel
    constexpr Index kRowsPerBlock = 16;
    const Index blocks = (W.rows + kRowsPerBlock - 1) / kRowsPerBlock;
    teamFor<TeamSchedule::Static>(blocks, true, [&](Index blk) {
        packRowBlock(W, nr, blk * kRowsPerBlock, std::min(W.rows, (blk + 1) * kRowsPerBlock), bytes, out);
    });
}

WeightPanels::WeightPanels(const Weight& source) : source_(source) { source_.panels = nullptr; }

WeightPanels::~WeightPanels() {
    if (data_) freeCopy(data_, bytes_.load());
}

bool WeightPanels::sameWeight(const Weight& w) const {
    return w.ptr == source_.ptr && w.rows == source_.rows && w.cols == source_.cols && w.stride == source_.stride &&
           w.type == source_.type && w.transposed == source_.transposed;
}

const void* WeightPanels::panelsFor(const Weight& w, int nr) const {
    if (!sameWeight(w) || source_.type == WeightType::Blocks || source_.empty()) return nullptr;
    std::call_once(once_, [&] {
        const size_t bytes = panelBytes(source_, nr);
        if (bytes == 0) return;
        void* data = allocateCopy(bytes);
        if (!data) return; // read in place
        // the stored rows this copy replaces: when they are pages of a mapped file, mapped in one call before
        // the copy reads them, and afterwards dropped from this process's resident memory (no longer read by
        // the products; read back if something else reads them)
        const Index storedRows = source_.transposed ? source_.cols : source_.rows,
                    storedCols = source_.transposed ? source_.rows : source_.cols;
        const size_t span = size_t((storedRows - 1) * source_.stride + storedCols) * size_t(source_.elementBytes());
        populateMappedPages(source_.ptr, span);
        packPanels(source_, nr, data);
        dropMappedPages(source_.ptr, span);
        data_ = data;
        bytes_.store(bytes);
        nr_ = nr;
        published_.store(data, std::memory_order_release);
    });
    return nr == nr_ ? data_ : nullptr;
}

size_t WeightPanels::packedBytes() const { return bytes_.load(); }

const void* WeightPanels::packedBlock(const Weight& w, Index& r0, Index& c0, Index& inner, int& nr) const {
    const void* data = published_.load(std::memory_order_acquire);
    if (!data || w.type != source_.type || w.transposed != source_.transposed || w.stride != source_.stride) return nullptr;
    const auto* sp = static_cast<const unsigned char*>(source_.ptr);
    const auto* wp = static_cast<const unsigned char*>(w.ptr);
    if (wp < sp) return nullptr;
    const size_t bytes = size_t(wp - sp), eb = size_t(source_.elementBytes());
    if (bytes % eb != 0) return nullptr;
    const Index off = Index(bytes / eb);
    // colBlock/rowBlock move ptr by c0 elements within a stored row, or by whole stored rows
    const Index storedRow = off / source_.stride, inRow = off % source_.stride;
    r0 = source_.transposed ? inRow : storedRow;
    c0 = source_.transposed ? storedRow : inRow;
    if (r0 + w.rows > source_.rows || c0 + w.cols > source_.cols) return nullptr;
    inner = source_.rows;
    nr = nr_;
    return data;
}

} // namespace attnscope
