#pragma once
// The tensors of one dictionary file, whichever container holds them (safetensors, or a .npz of .npy
// arrays), looked up by name with their dtype and shape checked and viewed in place as Weights.

#include "model/core/tensor.h"
#include "model/formats/dtype.h"
#include "model/formats/safetensors_file.h"
#include "model/features/npz_archive.h"

#include <QString>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace attnscope {

class DictionaryTensors {
public:
    explicit DictionaryTensors(std::shared_ptr<const SafetensorsFile> file);
    explicit DictionaryTensors(std::shared_ptr<const NpzArchive> archive);

    /// How errors name the file.
    QString label() const;
    bool has(const QString& name) const;
    /// The shape of `name`, or nullopt when absent.
    std::optional<std::vector<std::int64_t>> shape(const QString& name) const;
    /// The names present (for messages).
    QStringList names() const;

    /// `name` as a Weight [rows, cols] (a 1-D tensor of n elements is [1, n]; `transposed`: stored [cols, rows]).
    /// Checks: present ("missing tensor NAME (has: …)"), F32/F16/BF16 (F64 is converted to float32), shape
    /// equal to `shape` ("tensor NAME has shape [a, b] but CONTEXT implies [c, d]"), every value finite unless
    /// `allowNonFinite`. Throws ModelError(label()). The Weight points into the file (or an aligned copy kept
    /// by this object).
    Weight weight(const QString& name, const std::vector<std::int64_t>& shape, Eigen::Index rows, Eigen::Index cols,
                  bool transposed, const QString& context, bool allowNonFinite = false);
    /// The same, or an empty Weight when absent.
    Weight optionalWeight(const QString& name, const std::vector<std::int64_t>& shape, Eigen::Index rows,
                          Eigen::Index cols, bool transposed, const QString& context);

    /// Keeps the file (and copies) alive: store it in SparseCoder::owners.
    std::shared_ptr<const void> owner() const;

private:
    struct Entry {
        DType dtype;
        std::vector<std::int64_t> shape;
        const uchar* data;
    };
    std::optional<Entry> entry(const QString& name) const;

    std::shared_ptr<const SafetensorsFile> file_;
    std::shared_ptr<const NpzArchive> archive_;
    std::shared_ptr<std::vector<std::vector<uchar>>> copies_ = std::make_shared<std::vector<std::vector<uchar>>>();
};

} // namespace attnscope
