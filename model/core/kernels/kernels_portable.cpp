// The portable kernels: GCC/Clang vector extensions of 4 floats at the target's baseline, with no
// intrinsics: SSE2 on x86-64 (mul + add, no FMA), NEON on arm64 (fused multiply-add). Register tiles
// of 6×8 (x86-64: 12 of 16 xmm accumulators) or 8×8 (arm64: 16 of 32), and the int8 candidate pass as
// a loop of int16 multiply-adds that the compiler vectorises (pmaddwd on SSE2, smlal on NEON). The
// fallback every CPU runs; see simd_kernels.h for why this file includes nothing else.

#include "model/core/kernels/kernel_tables.h"

namespace attnscope::kernels::portable {
namespace {

constexpr int kLanes = 4;
#if defined(__aarch64__)
constexpr int kMr = 8;
constexpr int kFmaChains = 16; // FMA latency 4 × up to 4 pipes
#else
constexpr int kMr = 6;
constexpr int kFmaChains = 14; // a multiply and an add per step: (4 + 3) cycles latency × 2 ports
#endif
constexpr int kDotRows = 2;
// packed float32 micro-panels read in place, not from an L1 copy: on x86-64 (Zen 5) a gpt2-small pass at
// S = 20 took 57.9 ms against 62.4–62.6 with the copy (best passes, 3 pairs; not measured on arm64)
constexpr bool kReadPackedInPlace = true;

#include "model/core/kernels/simd_kernels.h"

} // namespace
} // namespace attnscope::kernels::portable

namespace attnscope::kernels {

extern const ComputeKernels kPortableKernels = {
    KernelIsa::Portable, "portable",
#if defined(__aarch64__)
    "NEON vectors, 8\u00d78 register tile",
#else
    "SSE2 vectors without FMA, 6\u00d78 register tile",
#endif
    portable::kMr, portable::kNr, portable::kBlockRows, 64, 64, &portable::packPanel, &portable::gemmColumns, &portable::gemmPanels,
    &portable::dotRows, &portable::causalSoftmaxRow, &portable::geluNew, &portable::silu, &portable::sumExp,
    0, 0, 127, 127, "int16 multiply-add loop", &portable::int8FirstHitLoop,
    portable::kLanes, &portable::fmaChains, portable::kFmaChains, &portable::sumFloats};

} // namespace attnscope::kernels
