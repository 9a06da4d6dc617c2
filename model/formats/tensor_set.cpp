#include "model/formats/tensor_set.h"

#include "model/core/errors.h"

namespace attnscope {

void TensorSet::add(std::shared_ptr<const SafetensorsFile> file) {
    for (const SafetensorsTensor& t : file->tensors()) {
        const auto it = byName_.constFind(t.name);
        if (it != byName_.constEnd())
            throw ModelError(file->label(), QStringLiteral("tensor %1 is also in %2").arg(t.name, it->file->label()));
        byName_.insert(t.name, TensorRef{file.get(), &t});
    }
    files_.push_back(std::move(file));
}

const TensorRef* TensorSet::find(const QString& name) const {
    const auto it = byName_.constFind(name);
    return it == byName_.constEnd() ? nullptr : &*it;
}

} // namespace attnscope
