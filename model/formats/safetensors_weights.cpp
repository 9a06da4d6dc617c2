#include "model/formats/safetensors_weights.h"

#include "model/core/errors.h"

#include <cstring>

namespace attnscope {

TensorChecker::TensorChecker(const TensorSet& tensors, QStringList prefixes, QString sourceLabel, QString configLabel,
                             const Progress* progress, qint64 progressDone, qint64 progressTotal)
    : tensors_(tensors), prefixes_(std::move(prefixes)), sourceLabel_(std::move(sourceLabel)),
      configLabel_(std::move(configLabel)), progress_(progress), done_(progressDone), total_(progressTotal) {}

const TensorRef* TensorChecker::find(const QString& name) const {
    if (const TensorRef* r = tensors_.find(name)) return r;
    for (const QString& p : prefixes_)
        if (const TensorRef* r = tensors_.find(p + name)) return r;
    return nullptr;
}

bool TensorChecker::has(const QString& name) const { return find(name) != nullptr; }

void TensorChecker::step(const QString& what) {
    if (progress_) progress_->step(++done_, total_, what);
}

TensorRef TensorChecker::optional(const QString& name, const std::vector<std::int64_t>& shape) {
    const TensorRef* ref = find(name);
    if (!ref) return {};
    const SafetensorsTensor& t = *ref->tensor;
    if (!isWeightDtype(t.dtype))
        throw ModelError(ref->file->label(), QStringLiteral("tensor %1 has dtype %2; weights must be F32, F16 or BF16")
                                                 .arg(t.name, dtypeName(t.dtype)));
    if (t.shape != shape)
        throw ModelError(ref->file->label(), QStringLiteral("tensor %1 has shape %2 but %3 implies %4")
                                                 .arg(t.name, shapeString(t.shape), configLabel_, shapeString(shape)));
    const QString dt = dtypeName(t.dtype);
    if (!dtypes_.contains(dt)) dtypes_ << dt;
    return *ref;
}

TensorRef TensorChecker::require(const QString& name, const std::vector<std::int64_t>& shape) {
    if (!find(name)) {
        QStringList also;
        for (const QString& p : prefixes_) also << p + name;
        throw ModelError(sourceLabel_, also.isEmpty() ? QStringLiteral("missing tensor %1").arg(name)
                                                      : QStringLiteral("missing tensor %1 (also looked for %2)")
                                                            .arg(name, also.join(QStringLiteral(", "))));
    }
    const TensorRef ref = optional(name, shape);
    step(QStringLiteral("Checking tensor %1").arg(ref.tensor->name));
    return ref;
}

QString TensorChecker::storageDtype() const { return dtypes_.size() == 1 ? dtypes_.front() : QStringLiteral("mixed"); }

Weight tensorWeight(const TensorRef& ref, Eigen::Index rows, Eigen::Index cols, bool transposed,
                    std::vector<std::vector<unsigned char>>& buffers) {
    const DType dt = ref.tensor->dtype;
    const WeightType type = dt == DType::F32 ? WeightType::F32 : dt == DType::F16 ? WeightType::F16 : WeightType::BF16;
    const int bytes = dtypeSize(dt);
    const void* ptr = ref.data();
    static_assert(Q_BYTE_ORDER == Q_LITTLE_ENDIAN, "weights are read in place as little-endian");
    if (reinterpret_cast<std::uintptr_t>(ptr) % bytes != 0) { // misaligned for its type: an aligned copy
        std::vector<unsigned char>& buf = buffers.emplace_back(size_t(ref.tensor->byteSize()) + 8);
        unsigned char* p = buf.data();
        while (reinterpret_cast<std::uintptr_t>(p) % 8 != 0) ++p;
        std::memcpy(p, ptr, size_t(ref.tensor->byteSize()));
        ptr = p;
    }
    return Weight{ptr, rows, cols, transposed ? rows : cols, type, transposed};
}

} // namespace attnscope
