#include "model/formats/gguf_probe.h"

#include "model/core/errors.h"

#include <QFile>
#include <QFileInfo>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>

namespace attnscope {

namespace {

constexpr std::uint32_t kMagic = 0x46554747; // "GGUF" read as a little-endian u32
constexpr std::uint64_t kMaxCount = 1u << 24;  // far above any real model's tensors or keys
constexpr std::uint64_t kMaxArrayNesting = 4;

enum ValueType : std::uint32_t { U8, I8, U16, I16, U32, I32, F32, Bool, String, Array, U64, I64, F64 };

/// Bytes of a fixed-size value type, 0 for strings and arrays, -1 for an unknown type.
int scalarSize(std::uint32_t t) {
    switch (t) {
    case U8: case I8: case Bool: return 1;
    case U16: case I16: return 2;
    case U32: case I32: case F32: return 4;
    case U64: case I64: case F64: return 8;
    case String: case Array: return 0;
    default: return -1;
    }
}

/// Bounds-checked little-endian reads over the mapped header; errors name the file and the offset.
class Cursor {
public:
    Cursor(const uchar* data, std::int64_t size, QString label) : data_(data), size_(size), label_(std::move(label)) {}

    [[noreturn]] void fail(const QString& problem) const {
        throw ModelError(label_, QStringLiteral("%1 (at byte %2)").arg(problem).arg(pos_));
    }
    std::int64_t pos() const { return pos_; }
    void need(std::uint64_t n, const char* what) {
        if (n > std::uint64_t(size_ - pos_)) fail(QStringLiteral("the header ends inside %1").arg(QLatin1String(what)));
    }
    template <typename T> T read(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, data_ + pos_, sizeof(T));
        pos_ += std::int64_t(sizeof(T));
        return v; // GGUF is little-endian, as is every platform AttnScope is built for
    }
    void skip(std::uint64_t n, const char* what) {
        need(n, what);
        pos_ += std::int64_t(n);
    }
    QString string(const char* what) {
        const auto n = read<std::uint64_t>(what);
        need(n, what);
        const QString s = QString::fromUtf8(reinterpret_cast<const char*>(data_ + pos_), qsizetype(n));
        pos_ += std::int64_t(n);
        return s;
    }
    void skipString(const char* what) { skip(read<std::uint64_t>(what), what); }

    /// Skips a value of type `t` (arrays recursively, nested at most kMaxArrayNesting deep).
    void skipValue(std::uint32_t t, int depth = 0) {
        const int size = scalarSize(t);
        if (size < 0) fail(QStringLiteral("unknown metadata value type %1").arg(t));
        if (size > 0) return skip(std::uint64_t(size), "a metadata value");
        if (t == String) return skipString("a metadata string");
        if (depth >= int(kMaxArrayNesting)) fail(QStringLiteral("metadata arrays nested too deeply"));
        const auto elem = read<std::uint32_t>("an array type");
        const auto count = read<std::uint64_t>("an array length");
        const int elemSize = scalarSize(elem);
        if (elemSize < 0) fail(QStringLiteral("unknown array element type %1").arg(elem));
        if (elemSize > 0) {
            if (count > std::uint64_t(size_) / std::uint64_t(elemSize)) fail(QStringLiteral("an array longer than the file"));
            return skip(count * std::uint64_t(elemSize), "an array");
        }
        if (count > std::uint64_t(size_ - pos_) / 8) fail(QStringLiteral("an array longer than the file"));
        for (std::uint64_t i = 0; i < count; ++i) skipValue(elem, depth + 1);
    }
    /// An integer value of any integer type, or nullopt for other types (skipped).
    std::optional<std::int64_t> integer(std::uint32_t t) {
        switch (t) {
        case U8: return read<std::uint8_t>("a value");
        case I8: return read<std::int8_t>("a value");
        case U16: return read<std::uint16_t>("a value");
        case I16: return read<std::int16_t>("a value");
        case U32: return read<std::uint32_t>("a value");
        case I32: return read<std::int32_t>("a value");
        case U64: return std::int64_t(read<std::uint64_t>("a value"));
        case I64: return read<std::int64_t>("a value");
        default: skipValue(t); return std::nullopt;
        }
    }

private:
    const uchar* data_;
    std::int64_t size_;
    QString label_;
    std::int64_t pos_ = 0;
};

} // namespace

QString ggmlTypeName(std::uint32_t type) {
    // ggml.h enum ggml_type (ids 4, 5 and 31–33 were removed; 36+ are newer than this list)
    static const char* const names[] = {"F32",  "F16",   "Q4_0",    "Q4_1",   "",       "",       "Q5_0",
                                        "Q5_1", "Q8_0",  "Q8_1",    "Q2_K",   "Q3_K",   "Q4_K",   "Q5_K",
                                        "Q6_K", "Q8_K",  "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
                                        "IQ3_S", "IQ2_S", "IQ4_XS", "I8",     "I16",    "I32",    "I64",
                                        "F64",  "IQ1_M", "BF16",    "",       "",       "",       "TQ1_0",
                                        "TQ2_0"};
    if (type < std::size(names) && names[type][0]) return QString::fromLatin1(names[type]);
    return QStringLiteral("type %1").arg(type);
}

QString ggufFileTypeName(int fileType) {
    // llama.h enum llama_ftype (LLAMA_FTYPE_MOSTLY_*); 4–6 are obsolete
    static const char* const names[] = {"F32",    "F16",     "Q4_0",   "Q4_1",   "",       "",      "",
                                        "Q8_0",   "Q5_0",    "Q5_1",   "Q2_K",   "Q3_K_S", "Q3_K_M", "Q3_K_L",
                                        "Q4_K_S", "Q4_K_M",  "Q5_K_S", "Q5_K_M", "Q6_K",   "IQ2_XXS", "IQ2_XS",
                                        "Q2_K_S", "IQ3_XS",  "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",  "IQ3_M",
                                        "IQ2_S",  "IQ2_M",   "IQ4_XS", "IQ1_M",  "BF16",   "",       "",
                                        "",       "TQ1_0",   "TQ2_0"};
    if (fileType >= 0 && fileType < int(std::size(names)) && names[fileType][0]) return QString::fromLatin1(names[fileType]);
    return QStringLiteral("file type %1").arg(fileType);
}

QString GgufSummary::quantization() const {
    if (fileType >= 0) return ggufFileTypeName(fileType);
    QString best = tensorTypes.isEmpty() ? QString() : QStringLiteral("F32");
    std::int64_t bestCount = 0;
    for (auto it = tensorTypes.begin(); it != tensorTypes.end(); ++it)
        if (it.key() != QLatin1String("F32") && it.value() > bestCount) {
            best = it.key();
            bestCount = it.value();
        }
    return best;
}

bool hasGgufMagic(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return false;
    std::uint32_t magic = 0;
    return f.read(reinterpret_cast<char*>(&magic), 4) == 4 && magic == kMagic;
}

GgufSummary probeGguf(const QString& path) {
    const QString label = QFileInfo(path).fileName();
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) throw ModelError(label, QStringLiteral("cannot open: %1").arg(file.errorString()));
    const std::int64_t size = file.size();
    QByteArray fallback;
    const uchar* data = size > 0 ? file.map(0, size) : nullptr;
    if (!data) { // a compressed Qt resource or an unmappable file: GGUF headers are small, but the file may not be
        fallback = file.read(std::min<std::int64_t>(size, 64 << 20));
        data = reinterpret_cast<const uchar*>(fallback.constData());
    }
    Cursor c(data, fallback.isNull() ? size : fallback.size(), label);

    GgufSummary s;
    if (c.read<std::uint32_t>("the magic") != kMagic) c.fail(QStringLiteral("not a GGUF file (no \"GGUF\" magic)"));
    s.version = c.read<std::uint32_t>("the version");
    if (s.version == 1) c.fail(QStringLiteral("GGUF version 1 is obsolete (convert the file again with llama.cpp)"));
    if (s.version != 2 && s.version != 3)
        c.fail((s.version & 0xffff) == 0 ? QStringLiteral("a big-endian GGUF file; only little-endian files are supported")
                                         : QStringLiteral("unsupported GGUF version %1 (supported: 2, 3)").arg(s.version));
    const auto tensors = c.read<std::uint64_t>("the tensor count");
    const auto kvs = c.read<std::uint64_t>("the metadata count");
    if (tensors > kMaxCount || kvs > kMaxCount)
        c.fail(QStringLiteral("implausible counts: %1 tensors, %2 metadata keys").arg(tensors).arg(kvs));
    s.tensorCount = std::int64_t(tensors);
    s.metadataCount = std::int64_t(kvs);

    QMap<QString, std::int64_t> integers; // integer values of the keys the summary needs, read after the loop
    for (std::uint64_t i = 0; i < kvs; ++i) {
        const QString key = c.string("a metadata key");
        const auto type = c.read<std::uint32_t>("a metadata type");
        if (key == QLatin1String("general.architecture") || key == QLatin1String("general.name")) {
            if (type != String) c.fail(QStringLiteral("%1 is not a string").arg(key));
            (key.endsWith(QLatin1String("architecture")) ? s.architecture : s.name) = c.string("a metadata string");
        } else if (key == QLatin1String("general.file_type") || key.endsWith(QLatin1String(".block_count"))) {
            if (auto v = c.integer(type)) integers.insert(key, *v);
        } else {
            c.skipValue(type);
        }
    }
    s.fileType = int(integers.value(QStringLiteral("general.file_type"), -1));
    s.blockCount = int(integers.value(s.architecture + QStringLiteral(".block_count"), -1));

    for (std::uint64_t i = 0; i < tensors; ++i) {
        c.skipString("a tensor name");
        const auto nDims = c.read<std::uint32_t>("a tensor's dimension count");
        if (nDims < 1 || nDims > 4) c.fail(QStringLiteral("a tensor with %1 dimensions (1 to 4 allowed)").arg(nDims));
        std::int64_t numel = 1;
        for (std::uint32_t d = 0; d < nDims; ++d) {
            const auto ne = c.read<std::uint64_t>("a tensor dimension");
            if (ne > std::uint64_t(INT64_MAX) || (ne != 0 && std::uint64_t(numel) > std::uint64_t(INT64_MAX) / ne))
                c.fail(QStringLiteral("a tensor with more elements than fit in 64 bits"));
            numel *= std::int64_t(ne);
        }
        const auto type = c.read<std::uint32_t>("a tensor type");
        c.read<std::uint64_t>("a tensor offset");
        s.tensorTypes[ggmlTypeName(type)] += 1;
        if (s.parameterCount <= INT64_MAX - numel) s.parameterCount += numel;
    }
    return s;
}

} // namespace attnscope
