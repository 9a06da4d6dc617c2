#pragma once
// Safetensors weight files: validated header, read-only memory map.
// Format (huggingface/safetensors, README "Format"): 8-byte little-endian u64 header length N,
// N bytes of UTF-8 JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {..}},
// then the data area; offsets are relative to the start of the data area.

#include "model/formats/dtype.h"
#include "model/formats/mapped_file.h"

#include <QByteArray>
#include <QByteArrayView>
#include <QHash>
#include <QMap>
#include <QString>
#include <cstdint>
#include <memory>
#include <vector>

namespace attnscope {

/// One tensor entry of a validated header.
struct SafetensorsTensor {
    QString name;
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape; ///< [] for a scalar
    std::int64_t numel = 0;          ///< product of shape (1 for a scalar)
    std::int64_t begin = 0;          ///< byte offset in the data area
    std::int64_t end = 0;            ///< one past the last byte; end - begin == numel * dtypeSize(dtype)

    std::int64_t byteSize() const { return end - begin; }
};

/// A safetensors header that passed every check in parseSafetensorsHeader.
struct SafetensorsHeader {
    std::int64_t headerBytes = 0;           ///< N, the JSON length
    std::int64_t dataOffset = 0;            ///< 8 + N: where the data area starts in the file
    std::int64_t dataBytes = 0;             ///< file size - dataOffset
    std::vector<SafetensorsTensor> tensors; ///< sorted by begin offset
    QMap<QString, QString> metadata;        ///< "__metadata__" (ignored by the loader)
};

/// Largest accepted JSON header, as in the reference implementation (safetensors MAX_HEADER_SIZE).
inline constexpr std::int64_t kMaxSafetensorsHeaderBytes = 100'000'000;

/// "[64, 192]" for messages.
QString shapeString(const std::vector<std::int64_t>& shape);

/// Validates a safetensors file from its first bytes (`prefix`, at least min(fileSize, 8 + N) bytes)
/// and its total size, without reading any tensor data. Checks, in order: file ≥ 8 bytes; 0 < N ≤ 100 MB
/// and N ≤ fileSize − 8; header is UTF-8 JSON object; "__metadata__" is an object of strings; each
/// entry is an object with a known dtype, a shape of non-negative integers whose element and byte
/// counts do not overflow, data_offsets [begin, end] with begin ≤ end ≤ data size and
/// end − begin = bytes of the shape; and the tensors tile the data area exactly (no gap, overlap or
/// trailing bytes). Throws ModelError(fileLabel, problem) naming the tensor and field on failure.
SafetensorsHeader parseSafetensorsHeader(QByteArrayView prefix, std::int64_t fileSize, const QString& fileLabel);

/// An open, validated safetensors file, memory-mapped read-only for the object's lifetime
/// (never written; F32 weights are used in place). Thread-safe for reading.
class SafetensorsFile {
public:
    /// Opens `path` read-only, maps it and validates the header (parseSafetensorsHeader).
    /// `label` names the file in errors (default: the file name). Qt resource paths (":/...") work;
    /// a compressed resource that cannot be mapped is read into memory instead.
    /// Throws ModelError if the file cannot be opened or is invalid.
    static std::shared_ptr<const SafetensorsFile> open(const QString& path, const QString& label = {});

    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;
    ~SafetensorsFile();

    const QString& path() const { return map_.path(); }
    const QString& label() const { return map_.label(); }
    std::int64_t fileSize() const { return map_.size(); }
    const SafetensorsHeader& header() const { return header_; }
    const std::vector<SafetensorsTensor>& tensors() const { return header_.tensors; }
    /// The entry named `name`, or nullptr.
    const SafetensorsTensor* find(const QString& name) const;
    /// The first byte of a tensor's data (inside the mapping). `t` must come from this file.
    const uchar* tensorData(const SafetensorsTensor& t) const { return base_ + header_.dataOffset + t.begin; }

private:
    SafetensorsFile() = default;

    MappedFile map_;
    const uchar* base_ = nullptr; ///< map_.data()
    SafetensorsHeader header_;
    QHash<QString, int> index_;
};

} // namespace attnscope
