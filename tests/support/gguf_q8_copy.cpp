#include "tests/support/gguf_q8_copy.h"

#include "model/formats/ggml_quants.h"
#include "model/formats/gguf_file.h"
#include "tests/support/ggml_test_blocks.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/safetensors_writer.h"

#include <QtEndian>
#include <vector>

namespace attnscope::test {

QByteArray ggufQ8_0Copy(const QString& source, Q8Copy mode, QStringList* kept) {
    const QByteArray bytes = readFile(source);
    const auto f = GgufFile::open(source);
    GgufWriter w;
    for (const GgufKeyValue& kv : f->metadata()) {
        const GgufValue& v = kv.value;
        const QByteArray key = kv.key.toUtf8();
        const QByteArray raw = bytes.mid(v.offset, v.byteSize);
        if (key == "general.file_type" && mode == Q8Copy::Q8_0) {
            w.addU32(key, 7); // LLAMA_FTYPE_MOSTLY_Q8_0
        } else if (v.type == GgufValueType::Array) {
            w.addArray(key, quint32(v.elementType), v.count, raw); // offset is the first element's
        } else {
            w.add(key, quint32(v.type), raw);
        }
    }
    for (const GgufTensorInfo& t : f->tensors()) {
        if (t.type != GgmlType::F32) qFatal("%s: tensor %s is not F32", qPrintable(source), qPrintable(t.name));
        const QByteArray data = bytes.mid(t.fileOffset, t.byteSize);
        std::vector<quint64> ne(t.ne.begin(), t.ne.begin() + t.nDims);
        if (t.nDims != 2 || t.ne[0] % 32 != 0) {
            if (t.nDims == 2 && kept) *kept << t.name;
            w.addTensor(t.name.toUtf8(), ne, kTF32, data);
            continue;
        }
        std::vector<float> x(static_cast<size_t>(t.numel));
        for (qint64 i = 0; i < t.numel; ++i) x[size_t(i)] = qFromLittleEndian<float>(data.constData() + 4 * i);
        QByteArray q(qsizetype(t.numel / 32 * 34), Qt::Uninitialized);
        for (qint64 r = 0; r < t.rows(); ++r)
            quantizeRowQ8_0(x.data() + r * t.ne[0], t.ne[0], q.data() + r * (t.ne[0] / 32 * 34));
        if (mode == Q8Copy::Q8_0) {
            w.addTensor(t.name.toUtf8(), ne, kTQ8_0, q);
            continue;
        }
        // block_q8_0: f16 d, then 32 int8 q; x = d·q (ggml dequantize_row_q8_0)
        std::vector<float> decoded(static_cast<size_t>(t.numel));
        for (qint64 b = 0; b < t.numel / 32; ++b) {
            const char* block = q.constData() + b * 34;
            const float d = f16Value(qFromLittleEndian<quint16>(block));
            for (int j = 0; j < 32; ++j) decoded[size_t(b * 32 + j)] = d * float(qint8(block[2 + j]));
        }
        w.addTensor(t.name.toUtf8(), ne, kTF32, floatBytes(decoded));
    }
    const quint64 alignment = f->contains(QStringLiteral("general.alignment")) ? f->u64(QStringLiteral("general.alignment")) : 32;
    return w.build(alignment);
}

} // namespace attnscope::test
