#pragma once
// Matrix types shared by the whole library. All matrices are row-major float32, the layout of
// Hugging Face / safetensors tensors, so a weight file's bytes can be used in place.

#include <Eigen/Core>

namespace attnscope {

/// Row-major float32 matrix: rows are the first axis (e.g. [pos, d_model]).
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXf;

/// Read-only view of row-major float32 data with an arbitrary row stride (in floats), used for
/// weights that live in a memory-mapped file or are column blocks of a fused matrix
/// (e.g. W_Q inside GPT-2's c_attn [d_model, 3*d_model]).
using MatrixView = Eigen::Map<const Matrix, Eigen::Unaligned, Eigen::OuterStride<>>;

/// A weight tensor as the model sees it: a 2-D row-major view (1-D tensors are 1×n).
/// Default-constructed = absent (e.g. no bias in a Llama model).
struct Weight {
    const float* data = nullptr;
    Eigen::Index rows = 0;
    Eigen::Index cols = 0;
    Eigen::Index stride = 0; ///< floats between the starts of consecutive rows

    bool empty() const { return data == nullptr; }
    MatrixView view() const { return MatrixView(data, rows, cols, Eigen::OuterStride<>(stride)); }
    /// Columns [c0, c0+n) as a new view (no copy).
    Weight colBlock(Eigen::Index c0, Eigen::Index n) const { return Weight{data + c0, rows, n, stride}; }
    /// Rows [r0, r0+n) as a new view (no copy).
    Weight rowBlock(Eigen::Index r0, Eigen::Index n) const { return Weight{data + r0 * stride, n, cols, stride}; }
};

} // namespace attnscope
