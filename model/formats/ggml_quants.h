#pragma once
// Dequantization of ggml's block formats to float32, exactly as ggml defines it, with a check for
// non-finite block scales; and ggml's reference Q8_0 quantizer.
// Block layouts: ggml src/ggml-common.h (block_q4_0 ... block_q6_K); the arithmetic of each type:
// ggml src/ggml-quants.c dequantize_row_* and get_scale_min_k4. All fields are little-endian and
// blocks are packed (no padding), so data may have any alignment.

#include "model/core/weight_type.h"
#include "model/formats/ggml_type.h"

#include <cstdint>
#include <optional>

namespace attnscope {

/// A block whose f16 scale is NaN or ±Inf.
struct GgmlBadScale {
    std::int64_t block = 0;      ///< block index, counted from the start of the data passed in
    const char* field = "d";     ///< the block field: "d" (scale), "m" (Q4_1/Q5_1 minimum) or "dmin" (K-quants)
    float value = 0;             ///< its value (NaN or ±Inf)
};

/// Bytes of n elements of type t: n / ggmlBlockSize(t) * ggmlBlockBytes(t). n must be a multiple of
/// the block size and small enough not to overflow (the GGUF reader checks both for every tensor).
std::int64_t ggmlRowBytes(GgmlType t, std::int64_t n);

/// Dequantizes n elements of type t stored at src into dst[0, n). n must be a multiple of
/// ggmlBlockSize(t). Per block, as ggml (x = element, q = stored quant, all products in float32):
///   Q8_0: x = q·d, q int8.                 Q4_0: x = (q − 8)·d; low nibbles of qs[0..15] are
///   Q4_1: x = q·d + m.                           elements 0..15, high nibbles 16..31.
///   Q5_0: x = (q − 16)·d, q = nibble | bit of qh (bit j for element j) << 4.   Q5_1: x = q·d + m.
///   Q4_K: 8 sub-blocks of 32, x = (d·sc)·q − dmin·mn with 6-bit sc/mn packed in 12 bytes
///         (get_scale_min_k4); each 32 bytes of qs hold sub-block 2c in the low and 2c+1 in the high nibbles.
///   Q5_K: as Q4_K with a fifth bit from qh (bits 2c and 2c+1 of qh[l]).
///   Q6_K: 16 sub-blocks of 16, x = (d·sc)·(q − 32), sc int8, q = 4 bits of ql | 2 bits of qh << 4.
///   F32/F16/BF16: converted (convertToF32).
/// Returns the first block whose scale is NaN or ±Inf (its outputs are still written, as ggml would
/// compute them), or nullopt when every scale is finite.
std::optional<GgmlBadScale> dequantizeGgml(GgmlType t, const void* src, std::int64_t n, float* dst);

/// The first block among the n elements at src whose f16 scale (d, m or dmin) is NaN or ±Inf, reading
/// only the scales; nullopt if all are finite, and always for F32/F16/BF16 (which have no scales).
std::optional<GgmlBadScale> findNonFiniteScale(GgmlType t, const void* src, std::int64_t n);

/// The decoder the compute kernels read a block-quantized weight of type t with (model/core/weight_type.h):
/// dequantizeGgml by blocks. nullptr for F32/F16/BF16, which the kernels read themselves.
const BlockDecoder* blockDecoder(GgmlType t);

/// ggml's reference Q8_0 quantizer (quantize_row_q8_0_ref): per block of 32, d = max|x| / 127 stored
/// as f16 (round to nearest even), q = round(x / d) computed with the unrounded 1/d (0 when d = 0).
/// n must be a multiple of 32; dst receives n / 32 * 34 bytes. A block holding NaN or ±Inf gets a
/// non-finite scale (NaN or Inf) and zero quants, and one whose max|x| / 127 exceeds the f16 range
/// (65504) an Inf scale, so findNonFiniteScale reports both.
void quantizeRowQ8_0(const float* src, std::int64_t n, void* dst);

} // namespace attnscope
