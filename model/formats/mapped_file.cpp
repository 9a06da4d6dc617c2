#include "model/formats/mapped_file.h"

#include "model/core/errors.h"
#include "model/core/file_mappings.h"

#include <QFileInfo>

namespace attnscope {

QString MappedFile::labelFor(const QString& path, const QString& label) {
    return label.isEmpty() ? QFileInfo(path).fileName() : label;
}

void MappedFile::open(const QString& path, const QString& label) {
    path_ = path;
    label_ = labelFor(path, label);
    file_.setFileName(path);
    if (!file_.open(QIODevice::ReadOnly))
        throw ModelError(label_, QStringLiteral("cannot open for reading: %1").arg(file_.errorString()));
    size_ = file_.size();
    if (size_ == 0) return;
    base_ = file_.map(0, size_);
    mapped_ = base_ != nullptr;
    if (mapped_) {
        // a Qt resource "maps" into the executable's data: not a mapping of its own to drop pages of
        if (!path.startsWith(QLatin1Char(':'))) registerFileMapping(base_, size_t(size_));
        return;
    }
    if (!path.startsWith(QLatin1Char(':')))
        throw ModelError(label_, QStringLiteral("cannot memory-map the file: %1").arg(file_.errorString()));
    memory_ = file_.readAll(); // compressed Qt resource: no mapping possible
    if (memory_.size() != size_) throw ModelError(label_, QStringLiteral("cannot read the resource"));
    base_ = reinterpret_cast<const uchar*>(memory_.constData());
}

void MappedFile::adopt(const QByteArray& bytes, const QString& label) {
    label_ = label;
    memory_ = bytes;
    size_ = bytes.size();
    base_ = reinterpret_cast<const uchar*>(memory_.constData());
}

MappedFile::~MappedFile() {
    if (!mapped_) return;
    unregisterFileMapping(base_);
    file_.unmap(const_cast<uchar*>(base_));
}

} // namespace attnscope
