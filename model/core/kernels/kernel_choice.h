#pragma once
// Which compute kernels this process runs (compute_kernels.h): what the CPU reports (cpuid) and what
// the OS has enabled (XCR0 through xgetbv: a CPU with AVX-512 under an OS or hypervisor that does not
// save the zmm and opmask registers must not run AVX-512 code), the ATTNSCOPE_ISA override, and the
// names shown by --version, the About box and the bench.

#include "model/core/kernels/compute_kernels.h"

#include <QString>
#include <optional>
#include <vector>

namespace attnscope {

/// What the CPU and the OS allow, as read at start-up (all false on a non-x86 CPU but `neon`).
struct CpuFeatures {
    bool avx = false, avx2 = false, fma = false, f16c = false;
    bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false, avx512vnni = false;
    bool avxvnni = false;     ///< AVX-VNNI (CPUID 7.1 EAX bit 4): vpdpbusd on ymm, VEX-encoded
    bool osSavesYmm = false;  ///< XCR0 bits 1–2 (SSE and AVX state): the OS saves the ymm registers
    bool osSavesZmm = false;  ///< XCR0 bits 5–7 (opmask, ZMM_Hi256, Hi16_ZMM) as well
    bool neon = false;        ///< arm64 (Advanced SIMD is part of the base architecture)
};

/// Reads the features with cpuid and xgetbv (nothing on other architectures).
CpuFeatures detectCpuFeatures();

/// Whether kernels for `isa` can run with these features (and are in this build).
bool canRun(KernelIsa isa, const CpuFeatures& f);

/// The fastest kernel set that can run: Avx512, else Avx2, else Portable.
KernelIsa bestKernelIsa(const CpuFeatures& f);

/// The kernel set named by `name` ("avx512", "avx2", "portable"; case-insensitive), or nothing.
std::optional<KernelIsa> kernelIsaFromName(const QString& name);

/// The name of a kernel set ("avx512", "avx2", "portable").
QString kernelIsaName(KernelIsa isa);

/// The outcome of choosing: the kernel set and, when `forced` could not be honoured, why.
struct KernelChoice {
    KernelIsa isa = KernelIsa::Portable;
    QString error; ///< e.g. "ATTNSCOPE_ISA=avx512: this CPU cannot run the avx512 kernels (…); it can run: avx2, portable"
};

/// Chooses from `forced` (the value of ATTNSCOPE_ISA; empty = automatic) and the features. An unknown
/// or unrunnable forced name gives the best runnable set plus an error that names the value, what is
/// missing and what the CPU can run.
KernelChoice chooseKernels(const QString& forced, const CpuFeatures& f);

/// The choice this process made (on first use, from the environment and detectCpuFeatures()).
/// computeKernels() runs what it names. The app and the tests check `.error` at start-up and stop
/// with it (a clear message, not a crash) before any work.
const KernelChoice& processKernelChoice();

/// Every kernel set this CPU can run, most portable first.
std::vector<KernelIsa> runnableKernelIsas();

/// Every int8 pass (compute_kernels.h Int8Pass) this CPU can run: each runnable table's, the AVX-VNNI one where present, and its
/// EVEX twin where AVX512-VNNI + VL are (for the tests: the twin runs the AVX-VNNI pass's code).
std::vector<Int8Pass> runnableInt8Passes();

/// One line for --version, the About box and the bench: the kernel in use, its tile and int8 path,
/// how it was chosen, and the OpenMP threads. E.g. "compute kernel avx2 (AVX2+FMA, 6×16 register tile;
/// int8 top-k: AVX2 vpmaddubsw/vpmaddwd), chosen automatically; 2 threads".
QString kernelSummary();

} // namespace attnscope
