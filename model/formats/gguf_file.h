#pragma once
// GGUF files (versions 2 and 3): validated header, metadata and tensor infos over a read-only memory map.
// Format: ggml docs/gguf.md ("File Structure"): magic "GGUF", u32 version, u64 tensor_count,
// u64 metadata_kv_count, the key/value pairs, the tensor infos, padding to general.alignment
// (default 32), then the tensor data. Little-endian only (big-endian files are rejected by their
// version field). Validation rules beyond the spec follow ggml src/gguf.cpp (gguf_init_from_file_impl).

#include "model/formats/ggml_type.h"
#include "model/formats/mapped_file.h"

#include <QByteArray>
#include <QByteArrayView>
#include <QHash>
#include <QString>
#include <QVariant>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace attnscope {

/// Metadata value types (gguf.md, enum gguf_metadata_value_type); the values are the file's ids.
enum class GgufValueType : std::uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7, String = 8, Array = 9,
    U64 = 10, I64 = 11, F64 = 12,
};
/// "u32", "string", "array", ... for messages.
QString ggufValueTypeName(GgufValueType t);

/// Where one metadata value lies in the file (nothing is copied out of the mapping). Every value of a
/// parsed header lies inside the file, strings and arrays included, and bools are 0 or 1.
struct GgufValue {
    GgufValueType type = GgufValueType::U8;
    GgufValueType elementType = GgufValueType::U8; ///< arrays only
    std::uint64_t count = 0;   ///< arrays only: number of elements
    std::int64_t offset = 0;   ///< file offset of the scalar, of a string's u64 length, or of an array's first element
    std::int64_t byteSize = 0; ///< bytes from `offset` to the end of the value
};

struct GgufKeyValue {
    QString key;
    GgufValue value;
};

/// One tensor info of a validated header.
struct GgufTensorInfo {
    QString name;
    GgmlType type = GgmlType::F32;
    int nDims = 1;                               ///< 1..4
    std::array<std::int64_t, 4> ne{1, 1, 1, 1};  ///< ggml order: ne[0] is the row length (innermost,
                                                 ///< contiguous); a 2-D weight [in, out] is out rows of in elements.
                                                 ///< Dimensions past nDims are 1.
    std::int64_t numel = 0;      ///< product of ne (≥ 1)
    std::int64_t offset = 0;     ///< as stored: relative to the data section, a multiple of the alignment
    std::int64_t fileOffset = 0; ///< dataOffset + offset
    std::int64_t byteSize = 0;   ///< numel / blockSize · blockBytes

    /// ne[0..nDims) (ggml order, innermost first).
    std::vector<std::int64_t> shape() const { return {ne.begin(), ne.begin() + nDims}; }
    /// The same reversed, outermost first, as PyTorch/NumPy write it: [out, in] for a 2-D weight.
    std::vector<std::int64_t> rowMajorShape() const { return {ne.rend() - nDims, ne.rend()}; }
    std::int64_t rowLength() const { return ne[0]; }
    /// numel / ne[0]: the number of rows of ne[0] elements.
    std::int64_t rows() const { return ne[0] == 0 ? 0 : numel / ne[0]; }
    /// Bytes of one row (rows are contiguous, each a whole number of blocks).
    std::int64_t rowBytes() const { return rows() == 0 ? 0 : byteSize / rows(); }
};

/// A tensor's info and its bytes inside the mapping (data has the alignment of general.alignment
/// relative to a page-aligned mapping; read F16/BF16/quantized data through ggml_quants).
struct GgufTensorView {
    GgufTensorInfo info;
    const uchar* data = nullptr;
};

/// A GGUF header that passed every check of parseGgufHeader.
struct GgufHeader {
    std::uint32_t version = 0;
    std::int64_t fileSize = 0;
    std::int64_t alignment = 32;             ///< general.alignment, default 32
    std::int64_t dataOffset = 0;             ///< aligned end of the tensor infos; may lie past the end
                                             ///< of the file when there are no tensors (vocab-only files)
    std::vector<GgufKeyValue> metadata;      ///< file order
    std::vector<GgufTensorInfo> tensors;     ///< file order
    QHash<QString, int> keyIndex;            ///< key → index in metadata
    QHash<QString, int> tensorIndex;         ///< name → index in tensors
};

/// Deepest nesting of arrays in metadata values (an array of arrays is depth 2).
inline constexpr int kMaxGgufArrayDepth = 8;
/// Longest tensor name (gguf.md: "at most 64 bytes") and metadata key (65535 bytes).
inline constexpr int kMaxGgufTensorName = 64;
inline constexpr int kMaxGgufKey = 65535;

/// Validates a whole GGUF file given as bytes (the mapping), reading no tensor data. Checks, in order:
/// size ≥ 24; magic "GGUF"; version 2 or 3; tensor_count and metadata_kv_count fit in the file; each
/// key (1..65535 bytes, unique), value type and value (strings, arrays of any type including nested
/// arrays up to kMaxGgufArrayDepth, all inside the file, bools 0/1); general.alignment (an integer,
/// a power of two; default 32); each tensor info: name (≤ 64 bytes, unique), n_dims 1..4, each ne in
/// [1, 2^63) (empty tensors are rejected) with element and byte counts that fit in int64, a supported
/// type (others are named in the error), ne[0] a multiple of the type's block size, an offset that is
/// a multiple of the alignment; then the data section (the aligned offset after the infos) and every
/// tensor's bytes inside the file, no two tensors overlapping (gaps are allowed). Block scales are not
/// read here (see GgufFile::checkScales). Every number read is bounds-checked with overflow-free
/// arithmetic before use, and nothing is allocated in proportion to an unchecked count.
/// Throws ModelError(fileLabel, problem) naming the key, tensor or field.
GgufHeader parseGgufHeader(QByteArrayView file, const QString& fileLabel);

/// An open, validated GGUF file, memory-mapped read-only (never written) for the object's lifetime.
/// Metadata getters decode values from the mapping on each call. Thread-safe for reading.
///
/// Typed getters throw ModelError(label, "metadata key 'K' ...") when the key is missing or its type
/// differs from what the getter reads, e.g. "metadata key 'llama.context_length' is string, expected
/// an unsigned integer".
class GgufFile {
public:
    /// Opens `path` read-only, maps it and validates it (parseGgufHeader). `label` names the file in
    /// errors (default: the file name). Throws ModelError if it cannot be opened or is invalid.
    static std::shared_ptr<const GgufFile> open(const QString& path, const QString& label = {});
    /// The same over bytes in memory (kept alive by the returned object; QByteArray::fromRawData
    /// works without copying if the caller keeps the data alive).
    static std::shared_ptr<const GgufFile> fromBytes(const QByteArray& bytes, const QString& label);

    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;
    ~GgufFile();

    const QString& path() const { return map_.path(); }
    const QString& label() const { return map_.label(); }
    const GgufHeader& header() const { return header_; }
    std::uint32_t version() const { return header_.version; }
    std::int64_t fileSize() const { return header_.fileSize; }

    // --- metadata ---
    const std::vector<GgufKeyValue>& metadata() const { return header_.metadata; }
    bool contains(const QString& key) const { return header_.keyIndex.contains(key); }
    /// The value of `key`, or nullptr.
    const GgufValue* find(const QString& key) const;

    /// Any integer type (u8..u64, i8..i64) holding a non-negative value.
    std::uint64_t u64(const QString& key) const;
    /// Any integer type; a u64 above INT64_MAX is an error.
    std::int64_t i64(const QString& key) const;
    /// f32 or f64.
    double f64(const QString& key) const;
    bool boolean(const QString& key) const;
    /// A string value decoded as UTF-8 (invalid sequences become U+FFFD).
    QString string(const QString& key) const;
    /// A string value's raw bytes (a view into the mapping, valid while this object lives).
    QByteArrayView stringBytes(const QString& key) const;

    /// Number of elements of an array value.
    std::uint64_t arrayLength(const QString& key) const;
    /// An array of strings as views into the mapping (valid while this object lives): no copy of the
    /// characters, one 16-byte view per element (tokenizer.ggml.tokens, tokenizer.ggml.merges).
    std::vector<QByteArrayView> stringArray(const QString& key) const;
    /// An array of f32 (f64 elements are converted) (tokenizer.ggml.scores).
    std::vector<float> f32Array(const QString& key) const;
    /// An array of any integer type as int64 (tokenizer.ggml.token_type); a u64 element above
    /// INT64_MAX is an error naming the element.
    std::vector<std::int64_t> intArray(const QString& key) const;
    /// The elements of an array value as values of their own (for nested arrays); `array` must come
    /// from this file.
    std::vector<GgufValue> arrayItems(const GgufValue& array) const;
    /// Any value as a QVariant, for display: unsigned integers as qulonglong, signed ones as qlonglong, f32 as float, f64 as
    /// double, bool, string as QString, arrays as QVariantList (recursively; whole arrays are converted,
    /// so prefer the typed array getters for large ones).
    QVariant toVariant(const GgufValue& value) const;
    /// toVariant of `key`'s value, or nullopt if the key is missing.
    std::optional<QVariant> value(const QString& key) const;

    // --- tensors ---
    const std::vector<GgufTensorInfo>& tensors() const { return header_.tensors; }
    /// The info of tensor `name`, or nullptr.
    const GgufTensorInfo* findTensor(const QString& name) const;
    /// The view of tensor `name`; throws ModelError if there is none.
    GgufTensorView tensor(const QString& name) const;
    /// The view of an info from this file.
    GgufTensorView view(const GgufTensorInfo& t) const { return {t, base_ + t.fileOffset}; }

    /// Dequantizes rows [firstRow, firstRow + rowCount) of `t` (rows of ne[0] elements) into
    /// dst[0, rowCount · ne[0]) (dequantizeGgml). Throws ModelError naming the tensor, block and row if
    /// a block scale in those rows is NaN or ±Inf ("tensor 'blk.0.attn_q.weight': block 3 (row 1) has
    /// a non-finite scale d = nan"), and std::out_of_range if the rows are not in the tensor.
    void dequantizeRows(const GgufTensorInfo& t, std::int64_t firstRow, std::int64_t rowCount, float* dst) const;
    /// Scans all block scales of `t` (reading only the scales) and throws ModelError as dequantizeRows
    /// does for the first non-finite one. Does nothing for F32/F16/BF16.
    void checkScales(const GgufTensorInfo& t) const;

private:
    GgufFile() = default;
    void parse();
    const GgufValue& require(const QString& key) const;
    [[noreturn]] void wrongType(const QString& key, const GgufValue& v, const char* expected) const;
    [[noreturn]] void throwBadScale(const GgufTensorInfo& t, std::int64_t firstBlock, std::int64_t block,
                                    const char* field, float value) const;

    MappedFile map_;
    const uchar* base_ = nullptr; ///< map_.data()
    GgufHeader header_;
};

} // namespace attnscope
