// The AVX-VNNI int8 pass's code (vnni_ymm_pass.h) in the EVEX encoding of AVX512-VNNI + AVX512VL: the same
// ymm arithmetic, which CPUs with AVX-512 VNNI run. No table uses it (the avx512 table has the zmm pass,
// and the avx2 table must not run AVX-512 instructions); it lets the tests check the ymm pass on machines
// without AVX-VNNI (tests/core/tst_compute_kernels.cpp, every pass of runnableInt8Passes()). Compiled with
// -mavx2 -mavx512f -mavx512vl -mavx512vnni (model/CMakeLists.txt); see simd_kernels.h.

#include "model/core/kernels/kernel_tables.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace attnscope::kernels::avx512ymmvnni {
namespace {
#define ATTNSCOPE_DPBUSD "vpdpbusd"
#include "model/core/kernels/vnni_ymm_pass.h"
#undef ATTNSCOPE_DPBUSD
} // namespace
} // namespace attnscope::kernels::avx512ymmvnni

namespace attnscope::kernels {

extern const Int8Pass kAvx512YmmVnniInt8 = {0, 128, 127, 127, "AVX512-VNNI vpdpbusd (ymm, EVEX)",
                                            &avx512ymmvnni::int8FirstHit};

} // namespace attnscope::kernels
#endif
