// The AVX-512 kernels (F, BW, DQ, VL: Intel Skylake-X and later, AMD Zen 4 and later). 32 zmm
// registers: a 14×32 GEMM register tile (28 accumulators + 2 W vectors + 1 broadcast) and dotRows tiles
// of 4 rows × 4 (16 accumulators). The int8 candidate pass is not here: kernel_choice.cpp gives this
// table the AVX512-VNNI one (kernels_avx512_vnni.cpp) or, without VNNI, the AVX2 one. Compiled with
// -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma -mf16c (model/CMakeLists.txt); see
// simd_kernels.h for why this file includes nothing else.

#include "model/core/kernels/kernel_tables.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace attnscope::kernels::avx512 {
namespace {

constexpr int kLanes = 16;
constexpr int kMr = 14;
constexpr int kDotRows = 4;
constexpr int kFmaChains = 16; // ≥ FMA latency (4 cycles) × 2 FMA ports, with room
// The 32 KiB L1 copy of a packed float32 micro-panel cost 4–5 % of a gpt2-small pass at S = 20 on Zen 5
// (20.8–21.1 against 21.9–22.1 ms; probably because the copy and the streamed panel overflow the 48 KiB L1);
// S = 128 unchanged (68.3–68.7 against 68.6–69.0 ms)
constexpr bool kReadPackedInPlace = true;
#define ATTNSCOPE_KERNEL_F16C(p) _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))

#include "model/core/kernels/simd_kernels.h"

} // namespace
} // namespace attnscope::kernels::avx512

namespace attnscope::kernels {

extern const ComputeKernels kAvx512Kernels = {
    KernelIsa::Avx512, "avx512", "AVX-512F/BW/DQ/VL, 14\u00d732 register tile",
    avx512::kMr, avx512::kNr, avx512::kBlockRows, 64, 2, &avx512::packPanel, &avx512::gemmColumns, &avx512::gemmPanels, &avx512::dotRows,
    &avx512::causalSoftmaxRow, &avx512::geluNew, &avx512::silu, &avx512::sumExp,
    0, 0, 127, 127, nullptr, nullptr,
    avx512::kLanes, &avx512::fmaChains, avx512::kFmaChains, &avx512::sumFloats};

} // namespace attnscope::kernels
#endif
