#pragma once
// Checked lookups of a checkpoint's tensors and views of them as Weights, shared by the weight resolvers
// of the safetensors families (GPT-2, Llama/Mistral/Qwen2): each tensor is found by name, its dtype and
// shape checked against what the config implies (errors name the file, the tensor and the config), and
// it is viewed in place in the mapped file in its own element type (F32, F16, BF16: the kernels widen
// 16-bit weights as they read them), copied only when its bytes are misaligned for their type.

#include "model/core/progress.h"
#include "model/core/tensor.h"
#include "model/formats/tensor_set.h"

#include <QStringList>
#include <cstdint>
#include <vector>

namespace attnscope {

class TensorChecker {
public:
    /// `prefixes`: name prefixes also tried for every tensor ("transformer." for GPT-2); `sourceLabel`
    /// names the checkpoint in "missing tensor" errors, `configLabel` the config in shape errors.
    TensorChecker(const TensorSet& tensors, QStringList prefixes, QString sourceLabel, QString configLabel,
                  const Progress* progress, qint64 progressDone, qint64 progressTotal);

    /// The tensor `name` (or a prefixed name) with dtype F32/F16/BF16 and shape `shape`; one progress step.
    /// Throws ModelError: missing ("missing tensor NAME (also looked for …)"), bad dtype, shape mismatch
    /// ("tensor NAME has shape [64, 190] but config.json implies [64, 192]").
    TensorRef require(const QString& name, const std::vector<std::int64_t>& shape);
    /// The same when present; an empty TensorRef when absent (no progress step).
    TensorRef optional(const QString& name, const std::vector<std::int64_t>& shape);
    bool has(const QString& name) const;
    /// One progress step without a tensor (e.g. "W_U tied to the embedding").
    void step(const QString& what);
    /// "F32", "F16", "BF16" or "mixed", over the tensors required so far.
    QString storageDtype() const;

private:
    const TensorRef* find(const QString& name) const;
    const TensorSet& tensors_;
    QStringList prefixes_;
    QString sourceLabel_, configLabel_;
    const Progress* progress_;
    qint64 done_, total_;
    QStringList dtypes_;
};

/// A Weight [rows, cols] over `ref` (stored row-major as [rows, cols], or with `transposed` as [cols, rows],
/// nn.Linear's [out, in]), in place in the file and in its own element type; a misaligned tensor is
/// copied into a buffer appended to `buffers` (kept by the caller).
Weight tensorWeight(const TensorRef& ref, Eigen::Index rows, Eigen::Index cols, bool transposed,
                    std::vector<std::vector<unsigned char>>& buffers);

} // namespace attnscope
