// The int8 candidate pass with AVX512-VNNI (vpdpbusd: u8 × s8 products summed by fours into int32, one
// instruction per 64 byte pairs), for the AVX-512 table on CPUs that have it (Intel Cascade Lake and
// later, AMD Zen 4 and later). Compiled with -mavx512f -mavx512bw -mavx512vnni (model/CMakeLists.txt);
// see simd_kernels.h for why this file includes nothing else.

#include "model/core/kernels/kernel_tables.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace attnscope::kernels::avx512vnni {
namespace {

#include "model/core/kernels/int8_thresholds.h"

/// acc + Σ_{4 bytes} u8(b)·s8(a) per int32 lane (vpdpbusd). GCC 12 spills the accumulators of a register
/// tile around the _mm512_dpbusd_epi32 builtin, so GCC/Clang get the instruction through inline asm.
inline __m512i dpbusd(__m512i acc, __m512i b, __m512i a) {
#if defined(__GNUC__)
    asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(b), "v"(a));
    return acc;
#else
    return _mm512_dpbusd_epi32(acc, b, a);
#endif
}

/// compute_kernels.h, int8FirstHit, for ã as the signed operand (broadcast) and b̃ + 128 as the unsigned
/// one: acc = ã·(b̃ + 128) = ã·b̃ + 128·Σ_k ã_k, undone in the thresholds. Register tile 6 rows × 64
/// columns (24 accumulators) over the head dims; a row whose head passes its threshold somewhere in the
/// group gets its full dot products, and the first group with one at its row's threshold is returned.
long int8FirstHit(const Int8Operands& o, long row0, long g0, long g1, const int* thrDot) {
    const int nkg = o.nkg, nkgHead = o.nkgHead;
    int full[6]; // per row: the threshold of the full accumulator, thrDot + 128·Σ_k ã_k
    for (int r = 0; r < 6; ++r) full[r] = int8FullThreshold128(o, row0 + r, thrDot[r]);
    const uint8_t* a = o.a;
    const long aStride = o.aStride;
    for (long g = g0; g < g1; ++g) {
        const uint8_t* bg = o.b + g * long(nkg) * 256;
        int head[6]; // per row: the threshold of the head accumulator, headThreshold + 128·Σ_head ã_k
        for (int r = 0; r < 6; ++r) head[r] = int8HeadThreshold128(o, row0 + r, g, thrDot[r]);
        // 24 named accumulators: GCC spills an __m512i[6][4] array to the stack.
#define ATTNSCOPE_ROW(R) __m512i a##R##0 = _mm512_setzero_si512(), a##R##1 = a##R##0, a##R##2 = a##R##0, a##R##3 = a##R##0;
        ATTNSCOPE_ROW(0) ATTNSCOPE_ROW(1) ATTNSCOPE_ROW(2) ATTNSCOPE_ROW(3) ATTNSCOPE_ROW(4) ATTNSCOPE_ROW(5)
#undef ATTNSCOPE_ROW
        for (int kg = 0; kg < nkgHead; ++kg) {
            const uint8_t* bk = bg + kg * 256;
            const __m512i b0 = _mm512_load_si512(bk), b1 = _mm512_load_si512(bk + 64);
            const __m512i b2 = _mm512_load_si512(bk + 128), b3 = _mm512_load_si512(bk + 192);
#define ATTNSCOPE_ROW(R)                                                                                   \
    {                                                                                                      \
        int word;                                                                                          \
        __builtin_memcpy(&word, a + (row0 + R) * aStride + kg * 4, 4);                                     \
        const __m512i av = _mm512_set1_epi32(word);                                                        \
        a##R##0 = dpbusd(a##R##0, b0, av);                                                                 \
        a##R##1 = dpbusd(a##R##1, b1, av);                                                                 \
        a##R##2 = dpbusd(a##R##2, b2, av);                                                                 \
        a##R##3 = dpbusd(a##R##3, b3, av);                                                                 \
    }
            ATTNSCOPE_ROW(0) ATTNSCOPE_ROW(1) ATTNSCOPE_ROW(2) ATTNSCOPE_ROW(3) ATTNSCOPE_ROW(4) ATTNSCOPE_ROW(5)
#undef ATTNSCOPE_ROW
        }
        // one compare per row against the max of its 4 vectors
#define ATTNSCOPE_ROW(R) const __m512i x##R = _mm512_max_epi32(_mm512_max_epi32(a##R##0, a##R##1), _mm512_max_epi32(a##R##2, a##R##3));
        ATTNSCOPE_ROW(0) ATTNSCOPE_ROW(1) ATTNSCOPE_ROW(2) ATTNSCOPE_ROW(3) ATTNSCOPE_ROW(4) ATTNSCOPE_ROW(5)
#undef ATTNSCOPE_ROW
        const unsigned rowsPassing = unsigned(_mm512_cmpge_epi32_mask(x0, _mm512_set1_epi32(head[0])) != 0)
                                     | unsigned(_mm512_cmpge_epi32_mask(x1, _mm512_set1_epi32(head[1])) != 0) << 1
                                     | unsigned(_mm512_cmpge_epi32_mask(x2, _mm512_set1_epi32(head[2])) != 0) << 2
                                     | unsigned(_mm512_cmpge_epi32_mask(x3, _mm512_set1_epi32(head[3])) != 0) << 3
                                     | unsigned(_mm512_cmpge_epi32_mask(x4, _mm512_set1_epi32(head[4])) != 0) << 4
                                     | unsigned(_mm512_cmpge_epi32_mask(x5, _mm512_set1_epi32(head[5])) != 0) << 5;
        if (rowsPassing == 0) [[likely]]
            continue;
        // a row whose head passes somewhere: its full dot products, recomputed (the head accumulators are
        // not kept, so the fast path above needs no more than the 32 registers)
        for (int r = 0; r < 6; ++r) {
            if (!(rowsPassing >> r & 1)) continue;
            __m512i f0 = _mm512_setzero_si512(), f1 = f0, f2 = f0, f3 = f0;
            for (int kg = 0; kg < nkg; ++kg) {
                int word;
                __builtin_memcpy(&word, a + (row0 + r) * aStride + kg * 4, 4);
                const __m512i av = _mm512_set1_epi32(word);
                const uint8_t* bk = bg + kg * 256;
                f0 = dpbusd(f0, _mm512_load_si512(bk), av);
                f1 = dpbusd(f1, _mm512_load_si512(bk + 64), av);
                f2 = dpbusd(f2, _mm512_load_si512(bk + 128), av);
                f3 = dpbusd(f3, _mm512_load_si512(bk + 192), av);
            }
            const __m512i m = _mm512_max_epi32(_mm512_max_epi32(f0, f1), _mm512_max_epi32(f2, f3));
            if (_mm512_cmpge_epi32_mask(m, _mm512_set1_epi32(full[r]))) return g;
        }
    }
    return g1;
}

} // namespace
} // namespace attnscope::kernels::avx512vnni

namespace attnscope::kernels {

extern const Int8Pass kAvx512VnniInt8 = {0, 128, 127, 127, "AVX512-VNNI vpdpbusd", &avx512vnni::int8FirstHit};

} // namespace attnscope::kernels
#endif
