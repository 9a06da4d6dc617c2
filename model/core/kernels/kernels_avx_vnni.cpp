// The int8 candidate pass with AVX-VNNI (vpdpbusd on ymm, VEX-encoded) for the avx2 table on CPUs that
// have it without AVX-512 (Intel Alder Lake, Raptor Lake, Meteor Lake and later; AMD Zen 5 client parts):
// one instruction per 32 byte pairs instead of vpmaddubsw + vpaddw + vpmaddwd + vpaddd per 64, and 8-bit
// operands instead of 7. The code is vnni_ymm_pass.h; compiled with -mavx2 -mavxvnni
// (model/CMakeLists.txt). See simd_kernels.h for why this file includes nothing else.

#include "model/core/kernels/kernel_tables.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace attnscope::kernels::avxvnni {
namespace {
#define ATTNSCOPE_DPBUSD "%{vex%} vpdpbusd" // %{ %}: literal braces in GCC inline assembly
#include "model/core/kernels/vnni_ymm_pass.h"
#undef ATTNSCOPE_DPBUSD
} // namespace
} // namespace attnscope::kernels::avxvnni

namespace attnscope::kernels {

extern const Int8Pass kAvxVnniInt8 = {0, 128, 127, 127, "AVX-VNNI vpdpbusd (ymm)", &avxvnni::int8FirstHit};

} // namespace attnscope::kernels
#endif
