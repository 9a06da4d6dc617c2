#pragma once
// Writes GGUF fixtures for the tests (ggml docs/gguf.md layout), independent of model/formats, and
// records where each field lies so that a test can break a good file by patching bytes.

#include <QByteArray>
#include <QHash>
#include <QtGlobal>
#include <vector>

namespace attnscope::test {

/// GGUF metadata value type ids (gguf.md gguf_metadata_value_type).
enum GgufId : quint32 {
    kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9,
    kU64 = 10, kI64 = 11, kF64 = 12,
};
/// ggml tensor type ids (ggml.h enum ggml_type) used by the fixtures.
enum GgmlId : quint32 {
    kTF32 = 0, kTF16 = 1, kTQ4_0 = 2, kTQ4_1 = 3, kTQ5_0 = 6, kTQ5_1 = 7, kTQ8_0 = 8, kTQ3_K = 11,
    kTQ4_K = 12, kTQ5_K = 13, kTQ6_K = 14, kTBF16 = 30,
};

QByteArray leU16(quint16 v);
QByteArray leU32(quint32 v);
QByteArray leU64(quint64 v);
QByteArray leF32(float v);
/// A GGUF string: u64 length, then the bytes.
QByteArray ggufString(const QByteArray& s);

void patchU32(QByteArray& bytes, qint64 at, quint32 v);
void patchU64(QByteArray& bytes, qint64 at, quint64 v);

class GgufWriter {
public:
    explicit GgufWriter(quint32 version = 3) : version_(version) {}

    /// A metadata pair with an already encoded value (`value` = the bytes after the type field).
    void add(const QByteArray& key, quint32 type, const QByteArray& value);
    void addU32(const QByteArray& key, quint32 v) { add(key, kU32, leU32(v)); }
    void addU64(const QByteArray& key, quint64 v) { add(key, kU64, leU64(v)); }
    void addF32(const QByteArray& key, float v) { add(key, kF32, leF32(v)); }
    void addBool(const QByteArray& key, bool v) { add(key, kBool, QByteArray(1, char(v))); }
    void addString(const QByteArray& key, const QByteArray& v) { add(key, kString, ggufString(v)); }
    /// An array: element type, count, then the encoded elements.
    void addArray(const QByteArray& key, quint32 elementType, quint64 count, const QByteArray& elements);
    void addStringArray(const QByteArray& key, const std::vector<QByteArray>& items);
    void addF32Array(const QByteArray& key, const std::vector<float>& items);
    void addI32Array(const QByteArray& key, const std::vector<qint32>& items);

    /// A tensor whose data is `data` (its size is not checked against ne and type).
    void addTensor(const QByteArray& name, const std::vector<quint64>& ne, quint32 type, const QByteArray& data);

    /// The file: header, metadata, tensor infos, zero padding to `alignment`, then each tensor's data
    /// at the next multiple of `alignment` (offsets relative to the data section). Without tensors
    /// the file ends right after the infos (no padding), as llama.cpp writes vocab-only files.
    QByteArray build(quint64 alignment = 32);

    // Positions in the file of the last build():
    struct TensorFields {
        qint64 name = 0;   ///< the name's u64 length
        qint64 nDims = 0;
        std::vector<qint64> ne;
        qint64 type = 0;
        qint64 offset = 0; ///< the u64 offset field
        qint64 data = 0;   ///< first data byte
    };
    qint64 keyAt(const QByteArray& key) const { return keyAt_.value(key, -1); }     ///< key's u64 length
    qint64 valueAt(const QByteArray& key) const { return valueAt_.value(key, -1); } ///< after the type field
    const TensorFields& tensorAt(int i) const { return tensorAt_[size_t(i)]; }
    qint64 dataOffset() const { return dataOffset_; }
    qint64 tensorCountAt() const { return 8; }
    qint64 kvCountAt() const { return 16; }

private:
    struct Pair {
        QByteArray key;
        quint32 type;
        QByteArray value;
    };
    struct Tensor {
        QByteArray name;
        std::vector<quint64> ne;
        quint32 type;
        QByteArray data;
    };
    quint32 version_;
    std::vector<Pair> pairs_;
    std::vector<Tensor> tensors_;
    QHash<QByteArray, qint64> keyAt_, valueAt_;
    std::vector<TensorFields> tensorAt_;
    qint64 dataOffset_ = 0;
};

} // namespace attnscope::test
