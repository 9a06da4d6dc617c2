#pragma once
// The element types weights are kept in, as the file stores them: the compute kernels widen F16 and
// BF16 to float32 as they read them (no float32 copy of the model). A plain enum with no code, so that
// the kernel translation units (model/core/kernels) can include it.

namespace attnscope {

enum class WeightType : int {
    F32,  ///< IEEE binary32
    F16,  ///< IEEE binary16 (exact in float32)
    BF16, ///< bfloat16, the upper half of a binary32 (exact in float32)
};

} // namespace attnscope
