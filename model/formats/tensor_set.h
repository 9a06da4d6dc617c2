#pragma once
// The tensors of a checkpoint that may span several safetensors files (shards), looked up by name.

#include "model/formats/safetensors_file.h"

#include <QHash>
#include <QString>
#include <memory>
#include <vector>

namespace attnscope {

/// A tensor entry together with the file that holds it.
struct TensorRef {
    const SafetensorsFile* file = nullptr;
    const SafetensorsTensor* tensor = nullptr;

    const uchar* data() const { return file->tensorData(*tensor); }
};

/// Owns the open files (so their mappings live as long as the set) and indexes their tensors by name.
class TensorSet {
public:
    /// Adds every tensor of `file`. Throws ModelError(file label) if a tensor name is already
    /// present in another file of the set.
    void add(std::shared_ptr<const SafetensorsFile> file);
    /// The tensor named `name`, or nullptr.
    const TensorRef* find(const QString& name) const;
    const std::vector<std::shared_ptr<const SafetensorsFile>>& files() const { return files_; }

private:
    std::vector<std::shared_ptr<const SafetensorsFile>> files_;
    QHash<QString, TensorRef> byName_;
};

} // namespace attnscope
