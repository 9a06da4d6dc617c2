#pragma once
// When work is worth the OpenMP team: one threshold for every parallel loop of the forward pass. Below about
// ten microseconds of work on one core, forking, the barrier and, on a busy machine, waiting for a descheduled
// team thread cost more than the second core gives. Tiny models (stories260K: d_model 64; the test checkpoints)
// then run on the calling thread, and ctest's parallel suites do not spin against each other (a patching test
// ran 0.3 s alone and 113 s beside another suite with every small product threaded).

namespace attnscope {

/// Multiply-adds from which a parallel region pays, ≈ 10 µs on one core (measured on Zen 4: a fork/join of two
/// threads is 2–5 µs when both cores are free, and up to a scheduler time slice when another process holds one).
inline constexpr double kMinParallelMacs = double(1 << 19);

/// Whether work of `macs` multiply-adds (a product, a head's attention) should run on the OpenMP team.
inline bool worthThreads(double macs) { return macs >= kMinParallelMacs; }

/// What one element of a row-wise elementwise pass (a norm, RoPE: a few operations per element, memory bound)
/// costs in multiply-adds of a product, for the same threshold: 8, so 64 Ki floats take the same ≈ 10 µs.
inline constexpr double kMacsPerElementwiseElement = 8;

/// Whether an elementwise pass over `elements` floats should run on the OpenMP team.
inline bool worthThreadsElementwise(double elements) { return worthThreads(elements * kMacsPerElementwiseElement); }

} // namespace attnscope
