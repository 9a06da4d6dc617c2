// The AVX2 + FMA + F16C kernels (Intel Haswell and later, AMD Zen and later; most laptops and desktops
// without AVX-512). 16 ymm registers: a 6×16 GEMM register tile (12 accumulators + 2 W vectors + 1
// broadcast), dotRows tiles of 3 rows × 4 (12 accumulators), and the int8 candidate pass through
// vpmaddubsw/vpmaddwd (7-bit operands, int16 sums of two k-groups). Compiled with -mavx2 -mfma -mf16c (model/CMakeLists.txt), which nothing else
// in the build is; see simd_kernels.h for why this file includes nothing else.

#include "model/core/kernels/kernel_tables.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace attnscope::kernels::avx2 {
namespace {

constexpr int kLanes = 8;
constexpr int kMr = 6;
constexpr int kDotRows = 3;
constexpr int kFmaChains = 12; // ≥ FMA latency (4–5 cycles) × 2 FMA ports
// the 16 KiB L1 copy of a packed float32 micro-panel: reading the panel in place instead measured about 1 %
// slower at S = 20 on Zen 5 (best passes 30.6–31.0 against 30.1–30.7 ms, 4 pairs)
constexpr bool kReadPackedInPlace = false;
#define ATTNSCOPE_KERNEL_F16C(p) _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))

#include "model/core/kernels/simd_kernels.h"

// The int8 pass: ã ∈ [−63, 63] + 64 as the unsigned operand of vpmaddubsw (broadcast), b̃ ∈ [−63, 63] as the
// signed one. A pair of products is at most 2·126·63 < 2¹⁴, so the int16 results of two k-groups (8 dims)
// can be added before vpmaddwd widens them to int32: 2 vpmaddubsw + vpaddw + vpmaddwd + vpaddd per 8
// columns × 8 dims. The offset adds 64·Σ_k b̃_jk to each column, undone in the thresholds.

/// c0 += the two k-groups at b and b + 256 times a0 (its broadcast bytes for each: a0k0, a0k1), c1 likewise
/// for a1; in inline assembly: GCC 12 schedules all products of a step first and spills accumulators.
inline void step2(__m256i& c0, __m256i& c1, __m256i a0k0, __m256i a0k1, __m256i a1k0, __m256i a1k1, const uint8_t* b) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i t0, t1;
    asm("vpmaddubsw %[b0], %[a0k0], %[t0]\n\t"
        "vpmaddubsw %[b1], %[a0k1], %[t1]\n\t"
        "vpaddw %[t1], %[t0], %[t0]\n\t"
        "vpmaddwd %[ones], %[t0], %[t0]\n\t"
        "vpaddd %[t0], %[c0], %[c0]\n\t"
        "vpmaddubsw %[b0], %[a1k0], %[t0]\n\t"
        "vpmaddubsw %[b1], %[a1k1], %[t1]\n\t"
        "vpaddw %[t1], %[t0], %[t0]\n\t"
        "vpmaddwd %[ones], %[t0], %[t0]\n\t"
        "vpaddd %[t0], %[c1], %[c1]"
        : [c0] "+x"(c0), [c1] "+x"(c1), [t0] "=&x"(t0), [t1] "=&x"(t1)
        : [a0k0] "x"(a0k0), [a0k1] "x"(a0k1), [a1k0] "x"(a1k0), [a1k1] "x"(a1k1),
          [b0] "m"(*reinterpret_cast<const __m256i*>(b)), [b1] "m"(*reinterpret_cast<const __m256i*>(b + 256)),
          [ones] "x"(ones));
}

/// The broadcast bytes of k-group kg of a row (4 bytes repeated).
inline __m256i broadcastGroup(const uint8_t* a, int kg) {
    int w;
    __builtin_memcpy(&w, a + 4 * kg, 4);
    return _mm256_set1_epi32(w);
}

/// Σ over k-groups [kg0, kg1) of (ã + 64)·b̃ per int32 lane for the 8 columns at bg + 32·c of one row.
inline __m256i dotVector(const uint8_t* a, const uint8_t* bg, int c, int kg0, int kg1) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc = _mm256_setzero_si256();
    for (int kg = kg0; kg < kg1; kg += 2) {
        const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(bg + kg * 256 + 32 * c));
        __m256i p = _mm256_maddubs_epi16(broadcastGroup(a, kg), b0);
        if (kg + 1 < kg1) {
            const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(bg + (kg + 1) * 256 + 32 * c));
            p = _mm256_add_epi16(p, _mm256_maddubs_epi16(broadcastGroup(a, kg + 1), b1));
        }
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, ones));
    }
    return acc;
}

/// compute_kernels.h, int8FirstHit (see above for the arithmetic). Tiles of 2 rows × 32 columns (8
/// accumulators) over the head dims; a row whose head passes its threshold somewhere in the tile gets its
/// full dot products there, and the first group with one at its row's threshold is returned.
long int8FirstHit(const Int8Operands& o, long row0, long g0, long g1, const int* thrDot) {
    const int nkg = o.nkg, nkgHead = o.nkgHead;
    for (long g = g0; g < g1; ++g) {
        const uint8_t* bg = o.b + g * long(nkg) * 256;
        for (int r = 0; r < 6; r += 2) {
            if (thrDot[r] >= kInt8Never && thrDot[r + 1] >= kInt8Never) continue;
            const uint8_t* a0 = o.a + (row0 + r) * o.aStride;
            const uint8_t* a1 = a0 + o.aStride;
            const __m256i h0 = _mm256_set1_epi32(int8HeadThreshold(o, row0 + r, g, thrDot[r]) - 1);
            const __m256i h1 = _mm256_set1_epi32(int8HeadThreshold(o, row0 + r + 1, g, thrDot[r + 1]) - 1);
            for (int half = 0; half < 2; ++half) {
                const uint8_t* bh = bg + half * 128;
                __m256i c00 = _mm256_setzero_si256(), c01 = c00, c02 = c00, c03 = c00;
                __m256i c10 = c00, c11 = c00, c12 = c00, c13 = c00;
                int kg = 0;
                for (; kg + 2 <= nkgHead; kg += 2) {
                    const __m256i a0k0 = broadcastGroup(a0, kg), a0k1 = broadcastGroup(a0, kg + 1);
                    const __m256i a1k0 = broadcastGroup(a1, kg), a1k1 = broadcastGroup(a1, kg + 1);
                    const uint8_t* bk = bh + kg * 256;
                    step2(c00, c10, a0k0, a0k1, a1k0, a1k1, bk);
                    step2(c01, c11, a0k0, a0k1, a1k0, a1k1, bk + 32);
                    step2(c02, c12, a0k0, a0k1, a1k0, a1k1, bk + 64);
                    step2(c03, c13, a0k0, a0k1, a1k0, a1k1, bk + 96);
                }
                if (kg < nkgHead) { // an odd head: its last k-group alone
                    c00 = _mm256_add_epi32(c00, dotVector(a0, bh, 0, kg, kg + 1));
                    c01 = _mm256_add_epi32(c01, dotVector(a0, bh, 1, kg, kg + 1));
                    c02 = _mm256_add_epi32(c02, dotVector(a0, bh, 2, kg, kg + 1));
                    c03 = _mm256_add_epi32(c03, dotVector(a0, bh, 3, kg, kg + 1));
                    c10 = _mm256_add_epi32(c10, dotVector(a1, bh, 0, kg, kg + 1));
                    c11 = _mm256_add_epi32(c11, dotVector(a1, bh, 1, kg, kg + 1));
                    c12 = _mm256_add_epi32(c12, dotVector(a1, bh, 2, kg, kg + 1));
                    c13 = _mm256_add_epi32(c13, dotVector(a1, bh, 3, kg, kg + 1));
                }
                // head thresholds per lane: the row's, plus 64·Σ_head b̃ of the column
                const int* sumHead = o.bSumHead + g * 64 + half * 32;
                auto off = [&](int c) {
                    return _mm256_slli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sumHead + 8 * c)), 6);
                };
                const __m256i o0 = off(0), o1 = off(1), o2 = off(2), o3 = off(3);
                auto passes = [](__m256i acc, __m256i thr) { return _mm256_cmpgt_epi32(acc, thr); };
                const __m256i p0 = _mm256_or_si256(
                    _mm256_or_si256(passes(c00, _mm256_add_epi32(h0, o0)), passes(c01, _mm256_add_epi32(h0, o1))),
                    _mm256_or_si256(passes(c02, _mm256_add_epi32(h0, o2)), passes(c03, _mm256_add_epi32(h0, o3))));
                const __m256i p1 = _mm256_or_si256(
                    _mm256_or_si256(passes(c10, _mm256_add_epi32(h1, o0)), passes(c11, _mm256_add_epi32(h1, o1))),
                    _mm256_or_si256(passes(c12, _mm256_add_epi32(h1, o2)), passes(c13, _mm256_add_epi32(h1, o3))));
                const unsigned rowsPassing = unsigned(!_mm256_testz_si256(p0, p0)) | unsigned(!_mm256_testz_si256(p1, p1)) << 1;
                if (rowsPassing == 0) [[likely]]
                    continue;
                // a row whose head passes somewhere in this half: its full dot products, recomputed
                const int* sumAll = o.bSum + g * 64 + half * 32;
                for (int i = 0; i < 2; ++i) {
                    if (!(rowsPassing >> i & 1)) continue;
                    const __m256i t = _mm256_set1_epi32(thrDot[r + i] - 1);
                    for (int c = 0; c < 4; ++c) {
                        const __m256i f = dotVector(i ? a1 : a0, bh, c, 0, nkg);
                        const __m256i tc = _mm256_add_epi32(
                            t, _mm256_slli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sumAll + 8 * c)), 6));
                        const __m256i hit = _mm256_cmpgt_epi32(f, tc);
                        if (!_mm256_testz_si256(hit, hit)) return g;
                    }
                }
            }
        }
    }
    return g1;
}

} // namespace
} // namespace attnscope::kernels::avx2

namespace attnscope::kernels {

extern const ComputeKernels kAvx2Kernels = {
    KernelIsa::Avx2, "avx2", "AVX2+FMA, 6\u00d716 register tile",
    avx2::kMr, avx2::kNr, avx2::kBlockRows, 16, 2, &avx2::packPanel, &avx2::gemmColumns, &avx2::gemmPanels, &avx2::dotRows,
    &avx2::causalSoftmaxRow, &avx2::geluNew, &avx2::silu, &avx2::sumExp,
    64, 0, 63, 63, "AVX2 vpmaddubsw/vpmaddwd", &avx2::int8FirstHit,
    avx2::kLanes, &avx2::fmaChains, avx2::kFmaChains, &avx2::sumFloats};

} // namespace attnscope::kernels
#endif
