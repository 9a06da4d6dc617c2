// The thresholds of the int8 candidate passes (compute_kernels.h int8FirstHit), shared by every kernel
// translation unit: included inside each one's own anonymous namespace, like simd_kernels.h, so that no
// copy compiled for one instruction set can be linked into another. No #pragma once and no #include.

constexpr int kInt8Never = 1 << 30; // compute_kernels.h: a thrDot this high means the row never hits

/// An integer ≥ ‖ã_row,tail‖₂·max_{j∈g}‖b̃_j,tail‖₂ (0 without a tail): what the tail dims can add at most.
inline long int8TailBound(const Int8Operands& o, long row, long g) {
    return o.nkgHead >= o.nkg ? 0 : long(o.aTailNorm[row]) * o.bTailNormMax[g];
}

/// The threshold a cell's head dot product must reach in group g for the cell to be able to reach thrDot.
inline int int8HeadThreshold(const Int8Operands& o, long row, long g, int thrDot) {
    if (thrDot >= kInt8Never) return kInt8Never;
    const long t = long(thrDot) - int8TailBound(o, row, g);
    return int(t < -kInt8Never ? -kInt8Never : t);
}

/// For the vpdpbusd passes, whose accumulators hold ã·(b̃ + 128) = ã·b̃ + 128·Σ_k ã_k: the thresholds of
/// the full accumulator and of group g's head accumulator for row `row`.
inline int int8FullThreshold128(const Int8Operands& o, long row, int thrDot) {
    return thrDot >= kInt8Never ? kInt8Never : thrDot + 128 * o.aSum[row];
}
inline int int8HeadThreshold128(const Int8Operands& o, long row, long g, int thrDot) {
    return thrDot >= kInt8Never ? kInt8Never : int8HeadThreshold(o, row, g, thrDot) + 128 * o.aSumHead[row];
}
