// The int8 candidate pass with AVX512-VNNI (vpdpbusd: u8 × s8 products summed by fours into int32, one
// instruction per 64 byte pairs), for the AVX-512 table on CPUs that have it (Intel Cascade Lake and
// later, AMD Zen 4 and later). Compiled with -mavx512f -mavx512bw -mavx512vnni (model/CMakeLists.txt);
// see simd_kernels.h for why this file includes nothing else.

#include "model/core/kernels/kernel_tables.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace attnscope::kernels::avx512vnni {
namespace {

constexpr int kInt8Never = 1 << 30; // compute_kernels.h: a thrDot this high means the row never hits

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

/// compute_kernels.h, int8FirstHit, for b̃ + 128 stored as unsigned bytes. Register tile 6 rows × 64
/// columns (24 accumulators): acc = ã·(b̃ + 128) = ã·b̃ + 128·Σã, compared with the row's threshold +
/// 128·Σã; only a group with a hit is reported (the caller rescores it).
long int8FirstHit(const int8_t* a, long aStride, const uint8_t* bPacked, int nkg, long g0, long g1,
                  const int* thrDot, const int* rowSum) {
    int thr[6];
    for (int r = 0; r < 6; ++r) thr[r] = thrDot[r] >= kInt8Never ? kInt8Never : thrDot[r] + 128 * rowSum[r];
    for (long g = g0; g < g1; ++g) {
        const uint8_t* bg = bPacked + g * long(nkg) * 256;
        // 24 named accumulators: GCC spills an __m512i[6][4] array to the stack.
#define ATTNSCOPE_ROW(R) __m512i a##R##0 = _mm512_setzero_si512(), a##R##1 = a##R##0, a##R##2 = a##R##0, a##R##3 = a##R##0;
        ATTNSCOPE_ROW(0) ATTNSCOPE_ROW(1) ATTNSCOPE_ROW(2) ATTNSCOPE_ROW(3) ATTNSCOPE_ROW(4) ATTNSCOPE_ROW(5)
#undef ATTNSCOPE_ROW
        for (int kg = 0; kg < nkg; ++kg) {
            const uint8_t* bk = bg + kg * 256;
            const __m512i b0 = _mm512_load_si512(bk), b1 = _mm512_load_si512(bk + 64);
            const __m512i b2 = _mm512_load_si512(bk + 128), b3 = _mm512_load_si512(bk + 192);
#define ATTNSCOPE_ROW(R)                                                                                   \
    {                                                                                                      \
        int word;                                                                                          \
        __builtin_memcpy(&word, a + R * aStride + kg * 4, 4);                                              \
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
        const unsigned any = unsigned(_mm512_cmpge_epi32_mask(x0, _mm512_set1_epi32(thr[0])))
                             | _mm512_cmpge_epi32_mask(x1, _mm512_set1_epi32(thr[1]))
                             | _mm512_cmpge_epi32_mask(x2, _mm512_set1_epi32(thr[2]))
                             | _mm512_cmpge_epi32_mask(x3, _mm512_set1_epi32(thr[3]))
                             | _mm512_cmpge_epi32_mask(x4, _mm512_set1_epi32(thr[4]))
                             | _mm512_cmpge_epi32_mask(x5, _mm512_set1_epi32(thr[5]));
        if (any != 0) return g;
    }
    return g1;
}

} // namespace
} // namespace attnscope::kernels::avx512vnni

namespace attnscope::kernels {

extern const Int8Kernel kAvx512VnniInt8 = {128, "AVX512-VNNI vpdpbusd", &avx512vnni::int8FirstHit};

} // namespace attnscope::kernels
#endif
