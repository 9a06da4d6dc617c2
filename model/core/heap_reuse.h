#pragma once
// Keeping freed memory for reuse: activation caches are hundreds of MiB, and a fresh page costs about
// 1.5 µs to fault in (0.4 s per GiB, ../shared/BASELINE.md §1), far more than rewriting a page that is
// already mapped. glibc by default returns large blocks to the OS on free (mmap'd chunks, heap trim).

namespace attnscope {

/// Tells glibc malloc never to serve allocations with fresh mmaps and never to trim the heap, so the
/// memory of a freed activation cache is reused by the next forward pass (the same setting as
/// GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=… for PyTorch). Call once at
/// start-up, before threads allocate. The cost: the process keeps its peak heap size until it exits.
/// Returns true when glibc took the settings, false on other C libraries (no-op there).
bool keepFreedMemoryForReuse();

} // namespace attnscope
