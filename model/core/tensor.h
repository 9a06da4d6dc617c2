#pragma once
// Matrix types shared by the whole library. All matrices are row-major float32, the layout of
// Hugging Face / safetensors tensors, so a weight file's bytes can be used in place.

#include "model/core/weight_type.h"

#include <Eigen/Core>

namespace attnscope {

class WeightPanels;

/// Row-major float32 matrix: rows are the first axis (e.g. [pos, d_model]).
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXf;

/// Read-only view of row-major float32 data with an arbitrary row stride (in floats), used for
/// weights that live in a memory-mapped file or are column blocks of a fused matrix
/// (e.g. W_Q inside GPT-2's c_attn [d_model, 3*d_model]).
using MatrixView = Eigen::Map<const Matrix, Eigen::Unaligned, Eigen::OuterStride<>>;

/// A weight tensor as the model sees it: a 2-D matrix [rows, cols] (1-D tensors are 1×n; matrices are
/// [in, out], so a block computes x·W) over memory it does not own (a mapped file, a buffer of the
/// weight resolver), in the element type and layout the file stores:
///  - `type`: F32, F16, BF16 or Blocks (model/core/weight_type.h); the compute kernels widen 16-bit weights
///    as they read them and decode block-quantized rows with `decoder` (stored [out, in] only: the blocks
///    run along the stored rows);
///  - `transposed` false: stored row-major [rows, cols], element (r, c) at ptr[r·stride + c] (GPT-2's
///    Conv1D); true: stored as [cols, rows], element (r, c) at ptr[c·stride + r] (nn.Linear's [out, in]:
///    HF Llama, GGUF, llama2.c).
/// Default-constructed = absent (e.g. no bias in a Llama model).
struct Weight {
    const void* ptr = nullptr;
    Eigen::Index rows = 0;
    Eigen::Index cols = 0;
    Eigen::Index stride = 0; ///< elements between the starts of consecutive stored rows
    WeightType type = WeightType::F32;
    bool transposed = false;
    const BlockDecoder* decoder = nullptr; ///< for type Blocks
    /// The weight's packed copy for the GEMM kernel (model/core/weight_panels.h), made on first use, or
    /// nullptr. Views derived from this one (colBlock, rowBlock, t) keep the pointer, which then does not
    /// match their geometry: weightGemm reads those in place. Once packed, toMatrix() and copyRow() of the
    /// weight and of its blocks read the copy (the same values) instead of the file pages it replaced.
    const WeightPanels* panels = nullptr;

    bool empty() const { return ptr == nullptr; }
    /// True when the weight is float32 stored [rows, cols]: view() and data() apply.
    bool isF32View() const { return type == WeightType::F32 && !transposed; }
    /// The float32 data of an F32, non-transposed weight (std::logic_error for another: a programming error).
    const float* data() const;
    /// A view of an F32, non-transposed weight (std::logic_error for another); others: toMatrix().
    MatrixView view() const;
    /// The weight as a float32 matrix [rows, cols] (a copy; any type and layout).
    Matrix toMatrix() const;
    /// Element (r, c) as float32.
    float at(Eigen::Index r, Eigen::Index c) const;
    /// Row r as float32 into out[0, cols).
    void copyRow(Eigen::Index r, float* out) const;
    /// Row r as a float32 row vector.
    RowVector rowVector(Eigen::Index r) const;
    /// True when no element is NaN or ±Inf (F32/F16/BF16 from the stored bits; block-quantized weights from
    /// their decoded values).
    bool allFinite() const;
    /// Columns [c0, c0+n) as a new view (no copy). Of a block-quantized weight, only whole blocks along the stored rows
    /// (std::logic_error otherwise: a programming error; loaders decode what must be sliced inside blocks).
    Weight colBlock(Eigen::Index c0, Eigen::Index n) const;
    /// Rows [r0, r0+n) as a new view (no copy).
    Weight rowBlock(Eigen::Index r0, Eigen::Index n) const;
    /// The logical transpose [cols, rows] of the same memory (no copy).
    Weight t() const;
    /// Bytes from one stored element to the next (4 or 2; not for Blocks).
    int elementBytes() const { return type == WeightType::F32 ? 4 : 2; }
    /// The address of stored element i of stored row `row` (for Blocks, i a multiple of the block size).
    const void* storedAt(Eigen::Index row, Eigen::Index i) const;
    /// Bytes from ptr to the end of the last stored element: the memory the weight's values lie in (with
    /// the gaps of a strided view). 0 for an empty weight.
    size_t storedSpanBytes() const;
};

/// An F32 row-major view of float data [rows, cols] with row stride `stride` (default cols).
inline Weight f32Weight(const float* data, Eigen::Index rows, Eigen::Index cols, Eigen::Index stride = -1) {
    return Weight{data, rows, cols, stride < 0 ? cols : stride, WeightType::F32, false};
}

} // namespace attnscope
