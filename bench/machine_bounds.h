#pragma once
// The machine's two bounds for the benchmarks' "ours / bound" columns, measured in the same run with the
// compute kernel being benchmarked (model/core/kernels): float32 FMA throughput of all OpenMP threads on
// registers only, at that kernel's vector width (what no GEMM of that kernel can exceed; a large GEMM
// reaches 0.8–0.95 of it), and the read bandwidth from DRAM (what streaming the weights once at S = 20
// cannot beat). docs/performance.md.

#include "model/core/kernels/compute_kernels.h"

namespace attnscope::bench {

/// GFLOP/s of independent float32 FMA chains (kernel.fmaChains: kernel.fmaChainCount chains of
/// kernel.lanes-wide vectors; a multiply and an add where the instruction set has no FMA) on every
/// OpenMP thread. Best of `runs` runs of about 0.1 s each (a bound: this VM's speed drifts with its
/// host's load). One FMA counts 2 FLOP.
double fmaPeakGflops(const ComputeKernels& kernel, int runs);

/// GB/s (10⁹ bytes) of all OpenMP threads summing a 512 MiB buffer (far beyond the last-level cache)
/// with the kernel's vector loads (kernel.sumFloats), each thread a contiguous part: the rate at which a
/// pass can stream weights. Best of `runs` passes over a buffer written (faulted in) once before; 0 if
/// it cannot be mapped.
double readBandwidthGBs(const ComputeKernels& kernel, int runs);

} // namespace attnscope::bench
