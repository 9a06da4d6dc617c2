#pragma once
// Resident-set-size readings of this process (Linux /proc and getrusage): the benchmarks' peak RSS and the tests of
// memory estimates against it. On systems without /proc they read 0.

namespace attnscope {

/// Current RSS in MiB (/proc/self/statm).
double currentRssMiB();
/// Peak RSS since the last resetPeakRss (VmHWM in /proc/self/status), MiB.
double peakRssMiB();
/// Resets the kernel's high-water mark (writes 5 to /proc/self/clear_refs); no-op if not permitted.
void resetPeakRss();
/// Peak RSS over the whole process lifetime (getrusage ru_maxrss), MiB.
double maxRssMiB();

} // namespace attnscope
