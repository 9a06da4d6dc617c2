#pragma once
// When a product is worth the OpenMP team: below about half a million multiply-adds (≈ 10 µs on one
// core), forking, the barrier and, on a busy machine, waiting for a descheduled team thread cost more than
// the second core gives. Tiny models (stories260K: d_model 64; the test checkpoints) then run on the
// calling thread, and ctest's parallel suites do not spin against each other (a patching test ran 0.3 s
// alone and 113 s beside another suite with every small product threaded).

namespace attnscope {

/// Multiply-adds from which a parallel region pays (measured on Zen 4: a fork/join of two threads is
/// 2–5 µs when both cores are free, and up to a scheduler time slice when another process holds one).
inline constexpr double kMinParallelMacs = double(1 << 19);

/// Whether work of `macs` multiply-adds should run on the OpenMP team.
inline bool worthThreads(double macs) { return macs >= kMinParallelMacs; }

/// Elements from which a row-wise elementwise pass (a norm, RoPE: a few operations per element, memory
/// bound) pays for the team: 64 Ki floats, about the same ≈ 10 µs on one core as kMinParallelMacs.
inline constexpr double kMinParallelElements = double(1 << 16);

/// Whether an elementwise pass over `elements` floats should run on the OpenMP team.
inline bool worthThreadsElementwise(double elements) { return elements >= kMinParallelElements; }

} // namespace attnscope
