// The AVX2 + FMA + F16C kernels (Intel Haswell and later, AMD Zen and later; most laptops and desktops
// without AVX-512). 16 ymm registers: a 6×16 GEMM register tile (12 accumulators + 2 W vectors + 1
// broadcast), dotRows tiles of 3 rows × 4 (12 accumulators), and the int8 candidate pass through
// vpmaddubsw/vpmaddwd. Compiled with -mavx2 -mfma -mf16c (model/CMakeLists.txt), which nothing else
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

#include "model/core/kernels/simd_kernels.h"

/// compute_kernels.h, int8FirstHit, for b̃ stored as signed bytes (offset 0). vpmaddubsw multiplies u8 by
/// s8 and adds pairs into saturating int16, so it gets |ã| and b̃·sign(ã) (vpsignb): the products are
/// ã·b̃ exactly and a pair sums to at most 2·127·127 < 2¹⁵ (no saturation: both are in [−127, 127]);
/// vpmaddwd by 1 adds the pairs into int32. Tiles of 2 rows × 32 columns (8 accumulators) over the
/// group's two halves; returns at the first tile with a hit (the caller rescores the whole group).
long int8FirstHit(const int8_t* a, long aStride, const uint8_t* bPacked, int nkg, long g0, long g1,
                  const int* thrDot, const int* /*rowSum*/) {
    const __m256i ones = _mm256_set1_epi16(1);
    for (long g = g0; g < g1; ++g) {
        const uint8_t* bg = bPacked + g * long(nkg) * 256;
        for (int r = 0; r < 6; r += 2) {
            if (thrDot[r] >= kInt8Never && thrDot[r + 1] >= kInt8Never) continue;
            const __m256i t0 = _mm256_set1_epi32(thrDot[r] - 1), t1 = _mm256_set1_epi32(thrDot[r + 1] - 1);
            const int8_t* a0 = a + r * aStride;
            const int8_t* a1 = a0 + aStride;
            for (int half = 0; half < 2; ++half) {
                const uint8_t* bh = bg + half * 128;
                __m256i c00 = _mm256_setzero_si256(), c01 = c00, c02 = c00, c03 = c00;
                __m256i c10 = c00, c11 = c00, c12 = c00, c13 = c00;
                for (int kg = 0; kg < nkg; ++kg) {
                    int w0, w1;
                    __builtin_memcpy(&w0, a0 + 4 * kg, 4);
                    __builtin_memcpy(&w1, a1 + 4 * kg, 4);
                    const __m256i s0 = _mm256_set1_epi32(w0), s1 = _mm256_set1_epi32(w1);
                    const __m256i u0 = _mm256_abs_epi8(s0), u1 = _mm256_abs_epi8(s1);
                    const uint8_t* bk = bh + kg * 256;
#define ATTNSCOPE_INT8_STEP(C)                                                                                    \
    {                                                                                                            \
        const __m256i b = _mm256_load_si256(reinterpret_cast<const __m256i*>(bk + 32 * C));                      \
        c0##C = _mm256_add_epi32(c0##C, _mm256_madd_epi16(_mm256_maddubs_epi16(u0, _mm256_sign_epi8(b, s0)), ones)); \
        c1##C = _mm256_add_epi32(c1##C, _mm256_madd_epi16(_mm256_maddubs_epi16(u1, _mm256_sign_epi8(b, s1)), ones)); \
    }
                    ATTNSCOPE_INT8_STEP(0) ATTNSCOPE_INT8_STEP(1) ATTNSCOPE_INT8_STEP(2) ATTNSCOPE_INT8_STEP(3)
#undef ATTNSCOPE_INT8_STEP
                }
                const __m256i m0 = _mm256_max_epi32(_mm256_max_epi32(c00, c01), _mm256_max_epi32(c02, c03));
                const __m256i m1 = _mm256_max_epi32(_mm256_max_epi32(c10, c11), _mm256_max_epi32(c12, c13));
                const __m256i hit = _mm256_or_si256(_mm256_cmpgt_epi32(m0, t0), _mm256_cmpgt_epi32(m1, t1));
                if (!_mm256_testz_si256(hit, hit)) return g;
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
    avx2::kMr, avx2::kNr, avx2::kBlockRows, &avx2::packPanel, &avx2::gemmColumns, &avx2::dotRows,
    &avx2::causalSoftmaxRow, &avx2::geluNew, &avx2::silu, &avx2::sumExp,
    0, "AVX2 vpmaddubsw/vpmaddwd", &avx2::int8FirstHit,
    avx2::kLanes, &avx2::fmaChains, avx2::kFmaChains, &avx2::sumFloats};

} // namespace attnscope::kernels
#endif
