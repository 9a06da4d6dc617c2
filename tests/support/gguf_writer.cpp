#include "tests/support/gguf_writer.h"

#include <QtEndian>

namespace attnscope::test {

namespace {
template <typename T>
QByteArray le(T v) {
    QByteArray out(sizeof(T), Qt::Uninitialized);
    qToLittleEndian<T>(v, out.data());
    return out;
}
} // namespace

QByteArray leU16(quint16 v) { return le(v); }
QByteArray leU32(quint32 v) { return le(v); }
QByteArray leU64(quint64 v) { return le(v); }
QByteArray leF32(float v) { return le(v); }
QByteArray ggufString(const QByteArray& s) { return leU64(quint64(s.size())) + s; }

void patchU32(QByteArray& bytes, qint64 at, quint32 v) { qToLittleEndian<quint32>(v, bytes.data() + at); }
void patchU64(QByteArray& bytes, qint64 at, quint64 v) { qToLittleEndian<quint64>(v, bytes.data() + at); }

void GgufWriter::add(const QByteArray& key, quint32 type, const QByteArray& value) { pairs_.push_back({key, type, value}); }

void GgufWriter::addArray(const QByteArray& key, quint32 elementType, quint64 count, const QByteArray& elements) {
    add(key, kArray, leU32(elementType) + leU64(count) + elements);
}

void GgufWriter::addStringArray(const QByteArray& key, const std::vector<QByteArray>& items) {
    QByteArray e;
    for (const QByteArray& s : items) e += ggufString(s);
    addArray(key, kString, items.size(), e);
}

void GgufWriter::addF32Array(const QByteArray& key, const std::vector<float>& items) {
    QByteArray e;
    for (const float v : items) e += leF32(v);
    addArray(key, kF32, items.size(), e);
}

void GgufWriter::addI32Array(const QByteArray& key, const std::vector<qint32>& items) {
    QByteArray e;
    for (const qint32 v : items) e += leU32(quint32(v));
    addArray(key, kI32, items.size(), e);
}

void GgufWriter::addTensor(const QByteArray& name, const std::vector<quint64>& ne, quint32 type, const QByteArray& data) {
    tensors_.push_back({name, ne, type, data});
}

QByteArray GgufWriter::build(quint64 alignment) {
    const auto pad = [alignment](qint64 n) { return qint64((alignment - quint64(n) % alignment) % alignment); };
    QByteArray out = QByteArray("GGUF") + leU32(version_) + leU64(tensors_.size()) + leU64(pairs_.size());
    keyAt_.clear();
    valueAt_.clear();
    for (const Pair& p : pairs_) {
        keyAt_.insert(p.key, out.size());
        out += ggufString(p.key) + leU32(p.type);
        valueAt_.insert(p.key, out.size());
        out += p.value;
    }
    // data offsets relative to the data section, each aligned
    std::vector<qint64> offsets;
    qint64 dataSize = 0;
    for (const Tensor& t : tensors_) {
        dataSize += pad(dataSize);
        offsets.push_back(dataSize);
        dataSize += t.data.size();
    }
    tensorAt_.clear();
    for (size_t i = 0; i < tensors_.size(); ++i) {
        const Tensor& t = tensors_[i];
        TensorFields f;
        f.name = out.size();
        out += ggufString(t.name);
        f.nDims = out.size();
        out += leU32(quint32(t.ne.size()));
        for (const quint64 d : t.ne) {
            f.ne.push_back(out.size());
            out += leU64(d);
        }
        f.type = out.size();
        out += leU32(t.type);
        f.offset = out.size();
        out += leU64(quint64(offsets[i]));
        tensorAt_.push_back(f);
    }
    if (tensors_.empty()) {
        dataOffset_ = out.size() + pad(out.size());
        return out;
    }
    out += QByteArray(pad(out.size()), '\0');
    dataOffset_ = out.size();
    for (size_t i = 0; i < tensors_.size(); ++i) {
        out += QByteArray(dataOffset_ + offsets[i] - out.size(), '\0');
        tensorAt_[i].data = out.size();
        out += tensors_[i].data;
    }
    return out;
}

} // namespace attnscope::test
