#pragma once
// The bytes of a weight file, memory-mapped read-only: the storage behind SafetensorsFile, GgufFile
// and Llama2cFile. The file is opened QIODevice::ReadOnly and never written.

#include <QByteArray>
#include <QByteArrayView>
#include <QFile>
#include <QString>
#include <cstdint>

namespace attnscope {

class MappedFile {
public:
    MappedFile() = default;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();

    /// `label`, or the file name of `path` when it is empty: how errors name the file.
    static QString labelFor(const QString& path, const QString& label);

    /// Opens `path` read-only and maps all of it (a 0-byte file gives empty bytes()). Qt resource paths
    /// (":/...") work; a compressed resource that cannot be mapped is read into memory instead. label()
    /// becomes labelFor(path, label). Throws ModelError(label(), "cannot open for reading: ...") or
    /// (label(), "cannot memory-map ...").
    void open(const QString& path, const QString& label);
    /// Uses `bytes` (shared, not copied) instead of a file; path() stays empty.
    void adopt(const QByteArray& bytes, const QString& label);

    const QString& path() const { return path_; }
    /// How errors name the file.
    const QString& label() const { return label_; }

    const uchar* data() const { return base_; }
    std::int64_t size() const { return size_; }
    QByteArrayView bytes() const { return {base_, base_ ? size_ : 0}; }

private:
    QString path_;
    QString label_;
    QFile file_;
    const uchar* base_ = nullptr; ///< the mapping, or memory_'s data
    std::int64_t size_ = 0;
    bool mapped_ = false;
    QByteArray memory_;            ///< adopt(), or an unmappable (compressed) Qt resource
};

} // namespace attnscope
