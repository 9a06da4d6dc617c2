#include "model/core/weight_panels.h"

#include "model/core/file_mappings.h"
#include "model/core/team_loop.h"

#include <algorithm>
#include <chrono>
#include <thread>
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

void packPanels(const Weight& W, int nr, void* dst, bool team) {
    if (W.type == WeightType::Blocks) throw std::logic_error("packPanels: block-quantized weights are not packed");
    if (W.empty() || W.rows == 0 || W.cols == 0) return;
    const Index panels = (W.cols + nr - 1) / nr;
    const int bytes = W.elementBytes();
    auto* out = static_cast<unsigned char*>(dst);
    // on the OpenMP team unless a parallel region is already running (teamFor)
    if (W.transposed) {
        teamFor<TeamSchedule::Static>(panels, team, [&](Index p) { packTransposedPanel(W, nr, p, bytes, out); });
        return;
    }
    // [inner, cols] stored: blocks of whole stored rows, read in order (the prefetchers follow them) and
    // written out as one stretch per panel
    constexpr Index kRowsPerBlock = 16;
    const Index blocks = (W.rows + kRowsPerBlock - 1) / kRowsPerBlock;
    teamFor<TeamSchedule::Static>(blocks, team, [&](Index blk) {
        packRowBlock(W, nr, blk * kRowsPerBlock, std::min(W.rows, (blk + 1) * kRowsPerBlock), bytes, out);
    });
}

WeightPanels::WeightPanels(const Weight& source, int nr, PackingMode mode, std::atomic<long long>* lastInPlaceRead)
    : source_(source), nr_(nr), mode_(mode), lastInPlaceRead_(lastInPlaceRead) {
    source_.panels = nullptr;
}

WeightPanels::~WeightPanels() {
    if (data_) freeCopy(data_, bytes_.load());
}

bool WeightPanels::sameWeight(const Weight& w) const {
    return w.ptr == source_.ptr && w.rows == source_.rows && w.cols == source_.cols && w.stride == source_.stride &&
           w.type == source_.type && w.transposed == source_.transposed;
}

void WeightPanels::packOnce() const {
    std::call_once(once_, [&] {
        if (source_.type == WeightType::Blocks || source_.empty()) return;
        const size_t bytes = panelBytes(source_, nr_);
        if (bytes == 0) return;
        void* data = allocateCopy(bytes);
        if (!data) return; // read in place
        // when the stored rows are pages of a mapped file: mapped in one call before the copy reads them
        populateMappedPages(source_.ptr, source_.storedSpanBytes());
        // the packer is one thread at idle priority; a first use packs on the OpenMP team
        packPanels(source_, nr_, data, mode_ == PackingMode::OnFirstUse);
        data_ = data;
        bytes_.store(bytes);
        published_.store(data); // sequentially consistent: see PanelsLease
    });
}

void WeightPanels::pack(const std::atomic<bool>* stop) const {
    packOnce();
    if (!published_.load() || dropped_.load()) return;
    // The mapped pages the copy replaces are no longer read by new products; those that started reading
    // them in place before the copy was published finish first (else they would map the pages back in, for
    // good). Products are short: this waits at most one product's time.
    while (inPlaceReaders_.load() != 0) {
        if (stop && stop->load()) return;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (!dropped_.exchange(true)) dropMappedPages(source_.ptr, source_.storedSpanBytes());
}

const void* WeightPanels::panelsFor(const Weight& w, int nr) const {
    if (nr != nr_ || !sameWeight(w) || source_.type == WeightType::Blocks || source_.empty()) return nullptr;
    if (mode_ == PackingMode::OnFirstUse) pack();
    return published_.load(std::memory_order_acquire);
}

PanelsLease::PanelsLease(const WeightPanels* panels, const Weight& w, int nr) {
    if (!panels) return;
    if (panels->mode_ == PackingMode::OnFirstUse) {
        data_ = panels->panelsFor(w, nr);
        return;
    }
    // Counted before looking at the copy, both sequentially consistent: either the packer's count (after it
    // published) sees this reader and waits for it, or this load sees the published copy.
    panels->inPlaceReaders_.fetch_add(1);
    data_ = panels->panelsFor(w, nr);
    if (data_) {
        panels->inPlaceReaders_.fetch_sub(1);
        return;
    }
    reader_ = panels;
    if (panels->lastInPlaceRead_)
        panels->lastInPlaceRead_->store(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count(),
            std::memory_order_relaxed);
    // The first product to read the weight in place (a model's first forward pass) maps its file pages in one
    // call instead of taking a page fault every 16 pages: 475 MiB of gpt2-small's pages in 2.4–9.7 ms against
    // 40–46 ms touched page by page (Zen 5, page cache warm).
    if (!panels->populated_.exchange(true)) populateMappedPages(panels->source_.ptr, panels->source_.storedSpanBytes());
}

PanelsLease& PanelsLease::operator=(PanelsLease&& o) noexcept {
    if (this != &o) {
        if (reader_) reader_->inPlaceReaders_.fetch_sub(1);
        data_ = o.data_;
        reader_ = o.reader_;
        o.reader_ = nullptr;
    }
    return *this;
}

PanelsLease::~PanelsLease() {
    if (reader_) reader_->inPlaceReaders_.fetch_sub(1);
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
