// The int8 candidate pass with vpdpbusd on ymm registers (u8 × s8 products summed by fours into int32),
// written once and compiled twice (see simd_kernels.h for the pattern): kernels_avx_vnni.cpp in the VEX
// encoding of AVX-VNNI, for the avx2 table on CPUs that have it (Intel Alder Lake and later, AMD Zen 5),
// and kernels_avx512_ymm_vnni.cpp in the EVEX encoding of AVX512-VNNI + VL, the same arithmetic on CPUs
// with AVX-512 VNNI, where the tests check it (no machine here has AVX-VNNI, and qemu 7.2 lacks it).
// The including file defines ATTNSCOPE_DPBUSD (the mnemonic: {vex} vpdpbusd or vpdpbusd) inside its
// own namespace and an anonymous one, after <immintrin.h> ("%{vex%} vpdpbusd" in inline-assembly syntax);
// no #pragma once and no #include here.

#include "model/core/kernels/int8_thresholds.h"

/// acc + Σ_{4 bytes} u8(b)·s8(a) per int32 lane; inline assembly, as kernels_avx512_vnni.cpp (GCC 12 spills
/// the accumulators around the builtin), and to choose the encoding.
inline __m256i dpbusd(__m256i acc, __m256i b, __m256i a) {
    asm(ATTNSCOPE_DPBUSD " %2, %1, %0" : "+x"(acc) : "x"(b), "x"(a));
    return acc;
}

/// The broadcast bytes of k-group kg of a row (4 bytes repeated).
inline __m256i broadcastGroup(const uint8_t* a, int kg) {
    int w;
    __builtin_memcpy(&w, a + 4 * kg, 4);
    return _mm256_set1_epi32(w);
}

/// Σ over k-groups [0, nkg) of ã·(b̃ + 128) for the 8 columns at bh + 32·c of one row.
inline __m256i fullDots(const uint8_t* a, const uint8_t* bh, int c, int nkg) {
    __m256i acc = _mm256_setzero_si256();
    for (int kg = 0; kg < nkg; ++kg)
        acc = dpbusd(acc, _mm256_load_si256(reinterpret_cast<const __m256i*>(bh + kg * 256 + 32 * c)), broadcastGroup(a, kg));
    return acc;
}

/// compute_kernels.h, int8FirstHit, for ã as the signed operand (broadcast) and b̃ + 128 as the unsigned
/// one: acc = ã·(b̃ + 128) = ã·b̃ + 128·Σ_k ã_k, undone in the thresholds (as kernels_avx512_vnni.cpp). Tiles
/// of 2 rows × 32 columns (8 accumulators of 16 ymm) over the head dims; a row whose head passes its
/// threshold somewhere in the tile gets its full dot products there, and the first group with one at its
/// row's threshold is returned.
long int8FirstHit(const Int8Operands& o, long row0, long g0, long g1, const int* thrDot) {
    const int nkg = o.nkg, nkgHead = o.nkgHead;
    int full[6]; // per row: the threshold of the full accumulator, thrDot + 128·Σ_k ã_k
    for (int r = 0; r < 6; ++r) full[r] = int8FullThreshold128(o, row0 + r, thrDot[r]);
    for (long g = g0; g < g1; ++g) {
        const uint8_t* bg = o.b + g * long(nkg) * 256;
        int head[6]; // per row: the threshold of the head accumulator
        for (int r = 0; r < 6; ++r) head[r] = int8HeadThreshold128(o, row0 + r, g, thrDot[r]);
        for (int r = 0; r < 6; r += 2) {
            if (head[r] >= kInt8Never && head[r + 1] >= kInt8Never) continue;
            const uint8_t* a0 = o.a + (row0 + r) * o.aStride;
            const uint8_t* a1 = a0 + o.aStride;
            for (int half = 0; half < 2; ++half) {
                const uint8_t* bh = bg + half * 128;
                __m256i c00 = _mm256_setzero_si256(), c01 = c00, c02 = c00, c03 = c00;
                __m256i c10 = c00, c11 = c00, c12 = c00, c13 = c00;
                for (int kg = 0; kg < nkgHead; ++kg) {
                    const uint8_t* bk = bh + kg * 256;
                    const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(bk));
                    const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(bk + 32));
                    const __m256i b2 = _mm256_load_si256(reinterpret_cast<const __m256i*>(bk + 64));
                    const __m256i b3 = _mm256_load_si256(reinterpret_cast<const __m256i*>(bk + 96));
                    const __m256i x0 = broadcastGroup(a0, kg), x1 = broadcastGroup(a1, kg);
                    c00 = dpbusd(c00, b0, x0), c01 = dpbusd(c01, b1, x0), c02 = dpbusd(c02, b2, x0), c03 = dpbusd(c03, b3, x0);
                    c10 = dpbusd(c10, b0, x1), c11 = dpbusd(c11, b1, x1), c12 = dpbusd(c12, b2, x1), c13 = dpbusd(c13, b3, x1);
                }
                const __m256i m0 = _mm256_max_epi32(_mm256_max_epi32(c00, c01), _mm256_max_epi32(c02, c03));
                const __m256i m1 = _mm256_max_epi32(_mm256_max_epi32(c10, c11), _mm256_max_epi32(c12, c13));
                const __m256i p0 = _mm256_cmpgt_epi32(m0, _mm256_set1_epi32(head[r] - 1));
                const __m256i p1 = _mm256_cmpgt_epi32(m1, _mm256_set1_epi32(head[r + 1] - 1));
                const unsigned rowsPassing = unsigned(!_mm256_testz_si256(p0, p0)) | unsigned(!_mm256_testz_si256(p1, p1)) << 1;
                if (rowsPassing == 0) [[likely]]
                    continue;
                for (int i = 0; i < 2; ++i) {
                    if (!(rowsPassing >> i & 1)) continue;
                    const __m256i t = _mm256_set1_epi32(full[r + i] - 1);
                    for (int c = 0; c < 4; ++c) {
                        const __m256i hit = _mm256_cmpgt_epi32(fullDots(i ? a1 : a0, bh, c, nkg), t);
                        if (!_mm256_testz_si256(hit, hit)) return g;
                    }
                }
            }
        }
    }
    return g1;
}
