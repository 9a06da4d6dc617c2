#include "model/features/dictionary_tensors.h"

#include "model/core/errors.h"

#include <cstring>

namespace attnscope {

DictionaryTensors::DictionaryTensors(std::shared_ptr<const SafetensorsFile> file) : file_(std::move(file)) {}
DictionaryTensors::DictionaryTensors(std::shared_ptr<const NpzArchive> archive) : archive_(std::move(archive)) {}

QString DictionaryTensors::label() const { return file_ ? file_->label() : archive_->label(); }

std::optional<DictionaryTensors::Entry> DictionaryTensors::entry(const QString& name) const {
    if (file_) {
        const SafetensorsTensor* t = file_->find(name);
        if (!t) return std::nullopt;
        return Entry{t->dtype, t->shape, file_->tensorData(*t)};
    }
    const NpyArray* a = archive_->find(name);
    if (!a) return std::nullopt;
    return Entry{a->header.dtype, a->header.shape, a->data};
}

bool DictionaryTensors::has(const QString& name) const { return entry(name).has_value(); }

std::optional<std::vector<std::int64_t>> DictionaryTensors::shape(const QString& name) const {
    const auto e = entry(name);
    if (!e) return std::nullopt;
    return e->shape;
}

QStringList DictionaryTensors::names() const {
    QStringList n;
    if (file_)
        for (const SafetensorsTensor& t : file_->tensors()) n << t.name;
    else
        for (const NpyArray& a : archive_->arrays()) n << a.name;
    return n;
}

std::shared_ptr<const void> DictionaryTensors::owner() const {
    struct Owner {
        std::shared_ptr<const SafetensorsFile> f;
        std::shared_ptr<const NpzArchive> a;
        std::shared_ptr<std::vector<std::vector<uchar>>> c;
    };
    return std::make_shared<Owner>(Owner{file_, archive_, copies_});
}

Weight DictionaryTensors::weight(const QString& name, const std::vector<std::int64_t>& shape, Eigen::Index rows,
                                 Eigen::Index cols, bool transposed, const QString& context, bool allowNonFinite) {
    const auto e = entry(name);
    if (!e) throw ModelError(label(), QStringLiteral("missing tensor %1 (has: %2)").arg(name, names().join(QStringLiteral(", "))));
    if (e->shape != shape)
        throw ModelError(label(), QStringLiteral("tensor %1 has shape %2 but %3 implies %4")
                                      .arg(name, shapeString(e->shape), context, shapeString(shape)));
    const void* ptr = e->data;
    WeightType type = WeightType::F32;
    const std::int64_t n = rows * cols;
    if (e->dtype == DType::F64) { // numpy's default: converted once
        std::vector<uchar>& buf = copies_->emplace_back(size_t(n) * 4 + 8);
        uchar* p = buf.data();
        while (reinterpret_cast<std::uintptr_t>(p) % 8 != 0) ++p;
        for (std::int64_t i = 0; i < n; ++i) {
            double v;
            std::memcpy(&v, static_cast<const uchar*>(ptr) + 8 * i, 8);
            const float fv = float(v);
            std::memcpy(p + 4 * i, &fv, 4);
        }
        ptr = p;
    } else if (e->dtype == DType::F32 || e->dtype == DType::F16 || e->dtype == DType::BF16) {
        type = e->dtype == DType::F32 ? WeightType::F32 : e->dtype == DType::F16 ? WeightType::F16 : WeightType::BF16;
        const int bytes = dtypeSize(e->dtype);
        if (reinterpret_cast<std::uintptr_t>(ptr) % bytes != 0) { // misaligned inside a zip entry: an aligned copy
            std::vector<uchar>& buf = copies_->emplace_back(size_t(n) * bytes + 8);
            uchar* p = buf.data();
            while (reinterpret_cast<std::uintptr_t>(p) % 8 != 0) ++p;
            std::memcpy(p, ptr, size_t(n) * bytes);
            ptr = p;
        }
    } else {
        throw ModelError(label(), QStringLiteral("tensor %1 has dtype %2 (weights must be F32, F16 or BF16)").arg(name, dtypeName(e->dtype)));
    }
    const Weight w{ptr, rows, cols, transposed ? rows : cols, type, transposed};
    if (!allowNonFinite && !w.allFinite())
        throw ModelError(label(), QStringLiteral("tensor %1 holds NaN or infinite values").arg(name));
    return w;
}

Weight DictionaryTensors::optionalWeight(const QString& name, const std::vector<std::int64_t>& shape, Eigen::Index rows,
                                         Eigen::Index cols, bool transposed, const QString& context) {
    return has(name) ? weight(name, shape, rows, cols, transposed, context) : Weight{};
}

} // namespace attnscope
