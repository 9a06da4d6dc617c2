#include "model/formats/gguf_file.h"

#include "model/core/errors.h"
#include "model/formats/ggml_quants.h"

#include <QStringList>
#include <QtEndian>
#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace attnscope {

namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kFixedHeaderBytes = 24; // magic, version, tensor_count, metadata_kv_count
// Smallest encodings, for checking counts against the bytes left before anything is reserved:
constexpr std::int64_t kMinKeyValueBytes = 8 + 1 + 4 + 1;   // key length, 1-byte key, type, u8 value
constexpr std::int64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8; // name length, n_dims, ne[0], type, offset
constexpr std::int64_t kArrayHeaderBytes = 4 + 8;             // element type, count

bool isKnownValueType(std::uint32_t t) { return t <= std::uint32_t(GgufValueType::F64); }

/// Bytes of a fixed-size value type; 0 for string and array.
int scalarBytes(GgufValueType t) {
    switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::Bool: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: return 8;
    default: return 0;
    }
}

bool isInteger(GgufValueType t) {
    switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::U16: case GgufValueType::I16:
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::U64: case GgufValueType::I64: return true;
    default: return false;
    }
}

/// An integer value of any GGUF integer type, read from p.
struct Integer {
    bool negative = false;
    std::uint64_t magnitude = 0; ///< the value if !negative, else -value
    std::int64_t asSigned() const { return negative ? std::int64_t(0 - magnitude) : std::int64_t(magnitude); }
};

Integer readInteger(const uchar* p, GgufValueType t) {
    std::int64_t s = 0;
    switch (t) {
    case GgufValueType::U8: return {false, p[0]};
    case GgufValueType::U16: return {false, qFromLittleEndian<quint16>(p)};
    case GgufValueType::U32: return {false, qFromLittleEndian<quint32>(p)};
    case GgufValueType::U64: return {false, qFromLittleEndian<quint64>(p)};
    case GgufValueType::I8: s = std::int8_t(p[0]); break;
    case GgufValueType::I16: s = qFromLittleEndian<qint16>(p); break;
    case GgufValueType::I32: s = qFromLittleEndian<qint32>(p); break;
    case GgufValueType::I64: s = qFromLittleEndian<qint64>(p); break;
    default: break;
    }
    return s < 0 ? Integer{true, 0 - std::uint64_t(s)} : Integer{false, std::uint64_t(s)};
}

QString integerString(const Integer& v) {
    return v.negative ? QLatin1Char('-') + QString::number(v.magnitude) : QString::number(v.magnitude);
}

QString describeType(const GgufValue& v) {
    return v.type == GgufValueType::Array
               ? QStringLiteral("an array of %1").arg(ggufValueTypeName(v.elementType))
               : ggufValueTypeName(v.type);
}

/// Names a value in errors without building strings on the good path: "metadata key 'k'", then
/// " element i" per level of array nesting.
struct ValueContext {
    const QString* key = nullptr;
    const ValueContext* parent = nullptr;
    std::uint64_t index = 0;

    QString describe() const {
        if (!parent) return QStringLiteral("metadata key '%1'").arg(*key);
        return parent->describe() + QStringLiteral(" element %1").arg(index);
    }
};

/// Sequential little-endian reads over the file; every read is bounds-checked first.
class Reader {
public:
    Reader(QByteArrayView file, const QString& label, std::int64_t pos = 0)
        : data_(reinterpret_cast<const uchar*>(file.data())), size_(file.size()), pos_(pos), label_(label) {}

    std::int64_t pos() const { return pos_; }
    std::int64_t left() const { return size_ - pos_; }
    const uchar* here() const { return data_ + pos_; }

    /// Throws "<what>: the file ends at offset P, N bytes short of ..." unless n bytes are left.
    template <typename What>
    void need(std::int64_t n, const What& what) const {
        if (n > left())
            fail(QStringLiteral("%1 needs %2 bytes at offset %3, but the file ends after %4 (file is %5 bytes)")
                     .arg(what()).arg(n).arg(pos_).arg(left()).arg(size_));
    }
    template <typename T, typename What>
    T read(const What& what) {
        need(sizeof(T), what);
        const T v = qFromLittleEndian<T>(data_ + pos_);
        pos_ += sizeof(T);
        return v;
    }
    void skip(std::int64_t n) { pos_ += n; } // after need()

    /// A GGUF string (u64 length, bytes); the length is checked against the bytes left.
    template <typename What>
    QByteArrayView string(const What& what) {
        const std::uint64_t len = read<quint64>([&] { return what() + QStringLiteral(" length"); });
        if (len > std::uint64_t(left()))
            fail(QStringLiteral("%1: string length %2 at offset %3 is past the end of the file (%4 bytes left)")
                     .arg(what()).arg(len).arg(pos_ - 8).arg(left()));
        const QByteArrayView s(reinterpret_cast<const char*>(here()), qsizetype(len));
        pos_ += std::int64_t(len);
        return s;
    }

    [[noreturn]] void fail(const QString& problem) const { throw ModelError(label_, problem); }

private:
    const uchar* data_;
    std::int64_t size_;
    std::int64_t pos_;
    const QString& label_;
};

/// Reads (and validates) one value of type `type` at the reader's position. Arrays read their element
/// type and count first; `depth` counts the arrays enclosing this value.
GgufValue readValue(Reader& r, GgufValueType type, const ValueContext& ctx, int depth);

void readArrayElements(Reader& r, GgufValue& v, const ValueContext& ctx, int depth) {
    const auto tooMany = [&](std::int64_t minBytes) {
        if (v.count > std::uint64_t(r.left() / minBytes))
            r.fail(QStringLiteral("%1: array of %2 %3 elements at offset %4 is past the end of the file (%5 bytes left)")
                       .arg(ctx.describe()).arg(v.count).arg(ggufValueTypeName(v.elementType)).arg(r.pos()).arg(r.left()));
    };
    const int fixed = scalarBytes(v.elementType);
    if (fixed > 0) {
        tooMany(fixed);
        if (v.elementType == GgufValueType::Bool) {
            for (std::uint64_t i = 0; i < v.count; ++i)
                if (r.here()[i] > 1)
                    r.fail(QStringLiteral("%1 element %2: bool value %3 is not 0 or 1")
                               .arg(ctx.describe()).arg(i).arg(int(r.here()[i])));
        }
        r.skip(std::int64_t(v.count) * fixed);
        return;
    }
    if (v.elementType == GgufValueType::String) {
        tooMany(8);
        for (std::uint64_t i = 0; i < v.count; ++i) {
            const ValueContext element{ctx.key, &ctx, i};
            r.string([&] { return element.describe(); });
        }
        return;
    }
    // arrays of arrays
    if (depth + 1 >= kMaxGgufArrayDepth)
        r.fail(QStringLiteral("%1: arrays are nested more than %2 deep").arg(ctx.describe()).arg(kMaxGgufArrayDepth));
    tooMany(kArrayHeaderBytes);
    for (std::uint64_t i = 0; i < v.count; ++i) {
        const ValueContext element{ctx.key, &ctx, i};
        readValue(r, GgufValueType::Array, element, depth + 1);
    }
}

GgufValue readValue(Reader& r, GgufValueType type, const ValueContext& ctx, int depth) {
    GgufValue v;
    v.type = type;
    if (type == GgufValueType::Array) {
        const std::uint32_t et = r.read<quint32>([&] { return ctx.describe() + QStringLiteral(" array element type"); });
        if (!isKnownValueType(et)) r.fail(QStringLiteral("%1: unknown array element type %2").arg(ctx.describe()).arg(et));
        v.elementType = GgufValueType(et);
        v.count = r.read<quint64>([&] { return ctx.describe() + QStringLiteral(" array length"); });
        v.offset = r.pos();
        readArrayElements(r, v, ctx, depth);
    } else if (type == GgufValueType::String) {
        v.offset = r.pos();
        r.string([&] { return ctx.describe(); });
    } else {
        const int n = scalarBytes(type);
        r.need(n, [&] { return ctx.describe(); });
        v.offset = r.pos();
        if (type == GgufValueType::Bool && r.here()[0] > 1)
            r.fail(QStringLiteral("%1: bool value %2 is not 0 or 1").arg(ctx.describe()).arg(int(r.here()[0])));
        r.skip(n);
    }
    v.byteSize = r.pos() - v.offset;
    return v;
}

void readMetadata(Reader& r, std::uint64_t count, GgufHeader& h) {
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::int64_t at = r.pos();
        const auto keyWhat = [&] { return QStringLiteral("metadata key %1 (at offset %2)").arg(i).arg(at); };
        const QByteArrayView keyBytes = r.string(keyWhat);
        if (keyBytes.isEmpty()) r.fail(keyWhat() + QStringLiteral(" is empty"));
        if (keyBytes.size() > kMaxGgufKey)
            r.fail(keyWhat() + QStringLiteral(" is %1 bytes long; the limit is %2").arg(keyBytes.size()).arg(kMaxGgufKey));
        GgufKeyValue kv;
        kv.key = QString::fromUtf8(keyBytes);
        if (h.keyIndex.contains(kv.key)) r.fail(QStringLiteral("duplicate metadata key '%1'").arg(kv.key));
        const ValueContext ctx{&kv.key};
        const std::uint32_t type = r.read<quint32>([&] { return ctx.describe() + QStringLiteral(" value type"); });
        if (!isKnownValueType(type)) r.fail(QStringLiteral("%1 has unknown value type %2").arg(ctx.describe()).arg(type));
        kv.value = readValue(r, GgufValueType(type), ctx, 0);
        h.keyIndex.insert(kv.key, int(h.metadata.size()));
        h.metadata.push_back(std::move(kv));
    }
}

/// general.alignment: any integer type, a power of two (ggml gguf.cpp also requires this); default 32.
std::int64_t readAlignment(QByteArrayView file, const GgufHeader& h, Reader& r) {
    const auto it = h.keyIndex.constFind(QStringLiteral("general.alignment"));
    if (it == h.keyIndex.constEnd()) return 32;
    const GgufValue& v = h.metadata[size_t(*it)].value;
    if (!isInteger(v.type))
        r.fail(QStringLiteral("general.alignment is %1, expected an unsigned integer").arg(describeType(v)));
    const Integer a = readInteger(reinterpret_cast<const uchar*>(file.data()) + v.offset, v.type);
    if (a.negative || a.magnitude == 0 || (a.magnitude & (a.magnitude - 1)) != 0 || a.magnitude > std::uint64_t(kInt64Max))
        r.fail(QStringLiteral("general.alignment is %1; it must be a power of two").arg(integerString(a)));
    return std::int64_t(a.magnitude);
}

QString shapeText(const GgufTensorInfo& t) {
    QStringList parts;
    for (int d = 0; d < t.nDims; ++d) parts << QString::number(t.ne[size_t(d)]);
    return QLatin1Char('[') + parts.join(QLatin1String(", ")) + QLatin1Char(']');
}

GgufTensorInfo readTensorInfo(Reader& r, std::uint64_t index, std::int64_t alignment, GgufHeader& h) {
    GgufTensorInfo t;
    const std::int64_t at = r.pos();
    const QByteArrayView name = r.string([&] { return QStringLiteral("tensor %1 (at offset %2) name").arg(index).arg(at); });
    if (name.size() > kMaxGgufTensorName)
        r.fail(QStringLiteral("tensor %1 (at offset %2): name of %3 bytes is longer than the %4-byte limit")
                   .arg(index).arg(at).arg(name.size()).arg(kMaxGgufTensorName));
    t.name = QString::fromUtf8(name);
    const QString what = QStringLiteral("tensor '%1'").arg(t.name);
    if (const auto dup = h.tensorIndex.constFind(t.name); dup != h.tensorIndex.constEnd())
        r.fail(QStringLiteral("duplicate tensor name '%1' (tensors %2 and %3)").arg(t.name).arg(*dup).arg(index));

    const std::uint32_t nDims = r.read<quint32>([&] { return what + QStringLiteral(" n_dims"); });
    if (nDims < 1 || nDims > 4) r.fail(what + QStringLiteral(": n_dims is %1; expected 1 to 4").arg(nDims));
    t.nDims = int(nDims);
    for (int d = 0; d < t.nDims; ++d) {
        const std::uint64_t ne = r.read<quint64>([&] { return what + QStringLiteral(" ne[%1]").arg(d); });
        if (ne == 0) r.fail(what + QStringLiteral(": ne[%1] is 0 (empty tensors are not supported)").arg(d));
        if (ne > std::uint64_t(kInt64Max)) r.fail(what + QStringLiteral(": ne[%1] = %2 is too large").arg(d).arg(ne));
        t.ne[size_t(d)] = std::int64_t(ne);
    }
    t.numel = 1;
    for (int d = 0; d < t.nDims; ++d)
        if (__builtin_mul_overflow(t.numel, t.ne[size_t(d)], &t.numel))
            r.fail(what + QStringLiteral(": shape %1 has more than 2^63 - 1 elements").arg(shapeText(t)));

    const std::uint32_t typeId = r.read<quint32>([&] { return what + QStringLiteral(" type"); });
    const std::optional<GgmlType> type = ggmlTypeFromId(typeId);
    if (!type) {
        const QString name = ggmlTypeName(typeId);
        if (name.isEmpty()) r.fail(what + QStringLiteral(" has unknown ggml type %1").arg(typeId));
        r.fail(what + QStringLiteral(" has type %1 (%2), which is not supported (supported: %3)")
                          .arg(name).arg(typeId).arg(supportedGgmlTypeNames()));
    }
    t.type = *type;
    const int blockSize = ggmlBlockSize(t.type);
    if (t.ne[0] % blockSize != 0)
        r.fail(what + QStringLiteral(": row length ne[0] = %1 is not a multiple of the %2 block size %3")
                          .arg(t.ne[0]).arg(ggmlTypeName(t.type)).arg(blockSize));
    if (__builtin_mul_overflow(t.numel / blockSize, std::int64_t(ggmlBlockBytes(t.type)), &t.byteSize))
        r.fail(what + QStringLiteral(": shape %1 of %2 needs more than 2^63 - 1 bytes").arg(shapeText(t), ggmlTypeName(t.type)));

    const std::uint64_t offset = r.read<quint64>([&] { return what + QStringLiteral(" offset"); });
    if (offset % std::uint64_t(alignment) != 0)
        r.fail(what + QStringLiteral(": data offset %1 is not a multiple of the alignment %2").arg(offset).arg(alignment));
    if (offset > std::uint64_t(kInt64Max)) r.fail(what + QStringLiteral(": data offset %1 is too large").arg(offset));
    t.offset = std::int64_t(offset);
    return t;
}

/// Every tensor inside the file, none overlapping another.
void checkTensorData(const GgufHeader& h, Reader& r) {
    if (h.tensors.empty()) return;
    if (h.dataOffset > h.fileSize)
        r.fail(QStringLiteral("the tensor data section starts at offset %1, past the end of the file (%2 bytes)")
                   .arg(h.dataOffset).arg(h.fileSize));
    const std::int64_t dataBytes = h.fileSize - h.dataOffset;
    for (const GgufTensorInfo& t : h.tensors) {
        if (t.offset > dataBytes)
            r.fail(QStringLiteral("tensor '%1': data offset %2 (from the data section at %3) is past the end of the file (%4 bytes)")
                       .arg(t.name).arg(t.offset).arg(h.dataOffset).arg(h.fileSize));
        if (t.byteSize > dataBytes - t.offset)
            r.fail(QStringLiteral("tensor '%1': data [%2, %3) past the end of the file (%4 bytes)")
                       .arg(t.name).arg(t.fileOffset).arg(std::uint64_t(t.fileOffset) + std::uint64_t(t.byteSize)).arg(h.fileSize));
    }
    std::vector<const GgufTensorInfo*> byOffset;
    byOffset.reserve(h.tensors.size());
    for (const GgufTensorInfo& t : h.tensors) byOffset.push_back(&t);
    std::stable_sort(byOffset.begin(), byOffset.end(), // ties keep file order, for a stable message
              [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < byOffset.size(); ++i) {
        const GgufTensorInfo& a = *byOffset[i - 1];
        const GgufTensorInfo& b = *byOffset[i];
        if (b.offset < a.offset + a.byteSize)
            r.fail(QStringLiteral("tensor '%1': data [%2, %3) overlaps tensor '%4' [%5, %6)")
                       .arg(b.name).arg(b.fileOffset).arg(b.fileOffset + b.byteSize)
                       .arg(a.name).arg(a.fileOffset).arg(a.fileOffset + a.byteSize));
    }
}

} // namespace

QString ggufValueTypeName(GgufValueType t) {
    static const char* const names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
    return std::uint32_t(t) < std::size(names) ? QString::fromLatin1(names[std::uint32_t(t)])
                                               : QStringLiteral("type %1").arg(std::uint32_t(t));
}

GgufHeader parseGgufHeader(QByteArrayView file, const QString& label) {
    GgufHeader h;
    h.fileSize = file.size();
    Reader r(file, label);
    if (h.fileSize < kFixedHeaderBytes)
        r.fail(QStringLiteral("file is %1 bytes, too short for the %2-byte GGUF header").arg(h.fileSize).arg(kFixedHeaderBytes));
    if (std::memcmp(file.data(), "GGUF", 4) != 0)
        r.fail(QStringLiteral("not a GGUF file: the magic is %1, expected 47 47 55 46 (\"GGUF\")")
                   .arg(QString::fromLatin1(file.first(4).toByteArray().toHex(' '))));
    r.skip(4);
    const auto none = [] { return QString(); };
    h.version = r.read<quint32>(none);
    if (h.version != 2 && h.version != 3) {
        const bool swapped = qbswap(h.version) == 2 || qbswap(h.version) == 3;
        r.fail(QStringLiteral("GGUF version %1 is not supported (only versions 2 and 3)%2")
                   .arg(h.version).arg(swapped ? QStringLiteral("; this looks like a big-endian file") : QString()));
    }
    const std::uint64_t tensorCount = r.read<quint64>(none);
    const std::uint64_t kvCount = r.read<quint64>(none);
    if (kvCount > std::uint64_t(r.left() / kMinKeyValueBytes))
        r.fail(QStringLiteral("metadata_kv_count %1 cannot fit in the %2 bytes after the header").arg(kvCount).arg(r.left()));
    if (tensorCount > std::uint64_t(r.left() / kMinTensorInfoBytes))
        r.fail(QStringLiteral("tensor_count %1 cannot fit in the %2 bytes after the header").arg(tensorCount).arg(r.left()));

    readMetadata(r, kvCount, h);
    h.alignment = readAlignment(file, h, r);

    if (tensorCount > std::uint64_t(r.left() / kMinTensorInfoBytes))
        r.fail(QStringLiteral("tensor_count %1 cannot fit in the %2 bytes after the metadata").arg(tensorCount).arg(r.left()));
    h.tensors.reserve(size_t(tensorCount));
    for (std::uint64_t i = 0; i < tensorCount; ++i) {
        h.tensors.push_back(readTensorInfo(r, i, h.alignment, h));
        h.tensorIndex.insert(h.tensors.back().name, int(i));
    }

    // The data section starts at the aligned end of the tensor infos (gguf.md align_offset).
    const std::int64_t pad = (h.alignment - r.pos() % h.alignment) % h.alignment;
    if (__builtin_add_overflow(r.pos(), pad, &h.dataOffset))
        r.fail(QStringLiteral("general.alignment %1 puts the data section past 2^63 bytes").arg(h.alignment));
    for (GgufTensorInfo& t : h.tensors)
        if (__builtin_add_overflow(h.dataOffset, t.offset, &t.fileOffset))
            r.fail(QStringLiteral("tensor '%1': data offset %2 is too large").arg(t.name).arg(t.offset));
    checkTensorData(h, r);
    return h;
}

// --- GgufFile ---

std::shared_ptr<const GgufFile> GgufFile::open(const QString& path, const QString& label) {
    std::shared_ptr<GgufFile> f(new GgufFile());
    f->map_.open(path, label);
    f->parse();
    return f;
}

std::shared_ptr<const GgufFile> GgufFile::fromBytes(const QByteArray& bytes, const QString& label) {
    std::shared_ptr<GgufFile> f(new GgufFile());
    f->map_.adopt(bytes, label);
    f->parse();
    return f;
}

void GgufFile::parse() {
    base_ = map_.data();
    header_ = parseGgufHeader(map_.bytes(), label());
}

GgufFile::~GgufFile() = default;

const GgufValue* GgufFile::find(const QString& key) const {
    const auto it = header_.keyIndex.constFind(key);
    return it == header_.keyIndex.constEnd() ? nullptr : &header_.metadata[size_t(*it)].value;
}

const GgufValue& GgufFile::require(const QString& key) const {
    const GgufValue* v = find(key);
    if (!v) throw ModelError(label(), QStringLiteral("metadata key '%1' is missing").arg(key));
    return *v;
}

void GgufFile::wrongType(const QString& key, const GgufValue& v, const char* expected) const {
    throw ModelError(label(), QStringLiteral("metadata key '%1' is %2, expected %3").arg(key, describeType(v), QLatin1String(expected)));
}

std::uint64_t GgufFile::u64(const QString& key) const {
    const GgufValue& v = require(key);
    if (!isInteger(v.type)) wrongType(key, v, "an unsigned integer");
    const Integer i = readInteger(base_ + v.offset, v.type);
    if (i.negative) throw ModelError(label(), QStringLiteral("metadata key '%1' is %2, expected a non-negative integer").arg(key, integerString(i)));
    return i.magnitude;
}

std::int64_t GgufFile::i64(const QString& key) const {
    const GgufValue& v = require(key);
    if (!isInteger(v.type)) wrongType(key, v, "an integer");
    const Integer i = readInteger(base_ + v.offset, v.type);
    if (!i.negative && i.magnitude > std::uint64_t(kInt64Max))
        throw ModelError(label(), QStringLiteral("metadata key '%1' is %2, above the int64 range").arg(key).arg(i.magnitude));
    return i.asSigned();
}

double GgufFile::f64(const QString& key) const {
    const GgufValue& v = require(key);
    if (v.type == GgufValueType::F32) return qFromLittleEndian<float>(base_ + v.offset);
    if (v.type == GgufValueType::F64) return qFromLittleEndian<double>(base_ + v.offset);
    wrongType(key, v, "f32 or f64");
}

bool GgufFile::boolean(const QString& key) const {
    const GgufValue& v = require(key);
    if (v.type != GgufValueType::Bool) wrongType(key, v, "bool");
    return base_[v.offset] != 0;
}

QByteArrayView GgufFile::stringBytes(const QString& key) const {
    const GgufValue& v = require(key);
    if (v.type != GgufValueType::String) wrongType(key, v, "string");
    return {base_ + v.offset + 8, qsizetype(v.byteSize - 8)};
}

QString GgufFile::string(const QString& key) const { return QString::fromUtf8(stringBytes(key)); }

std::uint64_t GgufFile::arrayLength(const QString& key) const {
    const GgufValue& v = require(key);
    if (v.type != GgufValueType::Array) wrongType(key, v, "an array");
    return v.count;
}

std::vector<QByteArrayView> GgufFile::stringArray(const QString& key) const {
    const GgufValue& v = require(key);
    if (v.type != GgufValueType::Array || v.elementType != GgufValueType::String) wrongType(key, v, "an array of string");
    std::vector<QByteArrayView> out;
    out.reserve(size_t(v.count)); // count ≤ file size / 8, checked by the parser
    const uchar* p = base_ + v.offset;
    for (std::uint64_t i = 0; i < v.count; ++i) {
        const auto len = qsizetype(qFromLittleEndian<quint64>(p));
        out.emplace_back(p + 8, len);
        p += 8 + len;
    }
    return out;
}

std::vector<float> GgufFile::f32Array(const QString& key) const {
    const GgufValue& v = require(key);
    if (v.type != GgufValueType::Array || (v.elementType != GgufValueType::F32 && v.elementType != GgufValueType::F64))
        wrongType(key, v, "an array of f32");
    std::vector<float> out(size_t(v.count));
    const uchar* p = base_ + v.offset;
    const bool f64 = v.elementType == GgufValueType::F64;
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = f64 ? float(qFromLittleEndian<double>(p + 8 * i)) : qFromLittleEndian<float>(p + 4 * i);
    return out;
}

std::vector<std::int64_t> GgufFile::intArray(const QString& key) const {
    const GgufValue& v = require(key);
    if (v.type != GgufValueType::Array || !isInteger(v.elementType)) wrongType(key, v, "an array of integers");
    std::vector<std::int64_t> out(size_t(v.count));
    const int size = scalarBytes(v.elementType);
    for (size_t i = 0; i < out.size(); ++i) {
        const Integer e = readInteger(base_ + v.offset + std::int64_t(i) * size, v.elementType);
        if (!e.negative && e.magnitude > std::uint64_t(kInt64Max))
            throw ModelError(label(), QStringLiteral("metadata key '%1' element %2 is %3, above the int64 range")
                                         .arg(key).arg(i).arg(e.magnitude));
        out[i] = e.asSigned();
    }
    return out;
}

std::vector<GgufValue> GgufFile::arrayItems(const GgufValue& array) const {
    std::vector<GgufValue> items;
    if (array.type != GgufValueType::Array) return items;
    items.reserve(size_t(array.count));
    Reader r(map_.bytes(), label(), array.offset); // re-reads validated bytes: cannot fail
    const QString key = QStringLiteral("(array)");
    const ValueContext ctx{&key};
    for (std::uint64_t i = 0; i < array.count; ++i) items.push_back(readValue(r, array.elementType, ctx, 1));
    return items;
}

QVariant GgufFile::toVariant(const GgufValue& v) const {
    const uchar* p = base_ + v.offset;
    switch (v.type) {
    case GgufValueType::F32: return qFromLittleEndian<float>(p);
    case GgufValueType::F64: return qFromLittleEndian<double>(p);
    case GgufValueType::Bool: return p[0] != 0;
    case GgufValueType::String: return QString::fromUtf8(reinterpret_cast<const char*>(p + 8), qsizetype(v.byteSize - 8));
    case GgufValueType::Array: {
        QVariantList list;
        for (const GgufValue& item : arrayItems(v)) list.push_back(toVariant(item));
        return list;
    }
    case GgufValueType::I8: case GgufValueType::I16: case GgufValueType::I32: case GgufValueType::I64:
        return qlonglong(readInteger(p, v.type).asSigned());
    default: return qulonglong(readInteger(p, v.type).magnitude);
    }
}

std::optional<QVariant> GgufFile::value(const QString& key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    return toVariant(*v);
}

const GgufTensorInfo* GgufFile::findTensor(const QString& name) const {
    const auto it = header_.tensorIndex.constFind(name);
    return it == header_.tensorIndex.constEnd() ? nullptr : &header_.tensors[size_t(*it)];
}

GgufTensorView GgufFile::tensor(const QString& name) const {
    const GgufTensorInfo* t = findTensor(name);
    if (!t) throw ModelError(label(), QStringLiteral("no tensor named '%1'").arg(name));
    return view(*t);
}

void GgufFile::throwBadScale(const GgufTensorInfo& t, std::int64_t firstBlock, std::int64_t block, const char* field,
                             float value) const {
    const std::int64_t b = firstBlock + block;
    const std::int64_t perRow = t.ne[0] / ggmlBlockSize(t.type);
    throw ModelError(label(), QStringLiteral("tensor '%1': block %2 (row %3) has a non-finite scale %4 = %5")
                                 .arg(t.name).arg(b).arg(b / perRow).arg(QLatin1String(field)).arg(value));
}

void GgufFile::dequantizeRows(const GgufTensorInfo& t, std::int64_t firstRow, std::int64_t rowCount, float* dst) const {
    if (firstRow < 0 || rowCount < 0 || firstRow > t.rows() || rowCount > t.rows() - firstRow)
        throw std::out_of_range("GgufFile::dequantizeRows: rows outside the tensor");
    const auto bad = dequantizeGgml(t.type, base_ + t.fileOffset + firstRow * t.rowBytes(), rowCount * t.ne[0], dst);
    if (bad) throwBadScale(t, firstRow * (t.ne[0] / ggmlBlockSize(t.type)), bad->block, bad->field, bad->value);
}

void GgufFile::checkScales(const GgufTensorInfo& t) const {
    const auto bad = findNonFiniteScale(t.type, base_ + t.fileOffset, t.numel);
    if (bad) throwBadScale(t, 0, bad->block, bad->field, bad->value);
}

} // namespace attnscope
