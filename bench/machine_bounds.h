#pragma once
// The machine's two bounds for the benchmarks' "ours / bound" columns, measured in the same run:
// float32 FMA throughput of all OpenMP threads on registers only (what no GEMM can exceed; a large Eigen
// GEMM reaches 0.8–0.95 of it), and the read bandwidth from DRAM (what streaming the weights once at
// S = 20 cannot beat). README "Benchmarks".

namespace attnscope::bench {

/// GFLOP/s of independent float32 FMA chains on every OpenMP thread (16-lane vectors: AVX-512 under
/// -march=native; narrower SIMD elsewhere, which then gives that ISA's bound). Best of `runs` runs of
/// about 0.1 s each (a bound: this VM's speed drifts with its host's load). One FMA counts 2 FLOP.
double fmaPeakGflops(int runs);

/// GB/s (10⁹ bytes) of all OpenMP threads summing a 512 MiB buffer (far beyond the last-level cache)
/// with 64-byte vector loads, each thread a contiguous part: the rate at which a pass can stream weights.
/// Best of `runs` passes over a buffer written (faulted in) once before; 0 if it cannot be mapped.
double readBandwidthGBs(int runs);

} // namespace attnscope::bench
