#pragma once
// The element types weights are kept in, as the file stores them: the compute kernels widen F16 and
// BF16 to float32 as they read them, and decode block-quantized rows (GGUF's Q8_0, Q4_K, …) into
// float32 micro-panels as they need them (no float32 copy of the model). Plain declarations with no
// code, so that the kernel translation units (model/core/kernels) can include them.

namespace attnscope {

enum class WeightType : int {
    F32,    ///< IEEE binary32
    F16,    ///< IEEE binary16 (exact in float32)
    BF16,   ///< bfloat16, the upper half of a binary32 (exact in float32)
    Blocks, ///< block-quantized rows (ggml formats), decoded by a BlockDecoder; stored [out, in] only
};

/// How a block-quantized weight is decoded (model/formats/ggml_quants.cpp has one per ggml type): rows
/// are runs of blocks of `blockElements` elements in `blockBytes` bytes each, along the stored row.
struct BlockDecoder {
    int blockElements; ///< 32 or 256
    int blockBytes;
    /// Decodes nBlocks consecutive blocks at `blocks` into out[0, nBlocks·blockElements) (exactly, as ggml).
    void (*decode)(const void* blocks, long nBlocks, float* out);
    const char* name; ///< "Q8_0", "Q4_K", …
};

} // namespace attnscope
