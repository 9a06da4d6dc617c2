#pragma once
// The tables the kernel translation units define, for kernel_choice.cpp only (declarations: this header
// is included by the kernel translation units too; see compute_kernels.h).

#include "model/core/kernels/compute_kernels.h"

namespace attnscope::kernels {

extern const ComputeKernels kPortableKernels; ///< kernels_portable.cpp
#if defined(__x86_64__) || defined(_M_X64)
extern const ComputeKernels kAvx2Kernels;   ///< kernels_avx2.cpp
extern const ComputeKernels kAvx512Kernels; ///< kernels_avx512.cpp; int8 members empty: kernel_choice.cpp takes
                                            ///< kAvx512VnniInt8 when the CPU has VNNI, else the AVX2 table's
extern const Int8Pass kAvx512VnniInt8;    ///< kernels_avx512_vnni.cpp, for CPUs with AVX512-VNNI
extern const Int8Pass kAvxVnniInt8;         ///< kernels_avx_vnni.cpp: the avx2 table's on CPUs with AVX-VNNI
extern const Int8Pass kAvx512YmmVnniInt8; ///< kernels_avx512_ymm_vnni.cpp: the same code, EVEX (tests only)
#endif

} // namespace attnscope::kernels
