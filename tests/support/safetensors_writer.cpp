#include "tests/support/safetensors_writer.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QtEndian>
#include <algorithm>
#include <cmath>
#include <cstring>

namespace attnscope::test {

QByteArray floatBytes(const std::vector<float>& values) {
    QByteArray out(qsizetype(values.size() * 4), Qt::Uninitialized);
    for (size_t i = 0; i < values.size(); ++i) qToLittleEndian<float>(values[i], out.data() + 4 * i);
    return out;
}

QByteArray buildSafetensors(const std::vector<FixtureTensor>& tensors, const QJsonObject& metadata, int align) {
    QJsonObject header;
    if (!metadata.isEmpty()) header.insert(QStringLiteral("__metadata__"), metadata);
    QByteArray data;
    for (const FixtureTensor& t : tensors) {
        QJsonArray shape;
        for (const qint64 d : t.shape) shape.append(d);
        QJsonObject entry{{QStringLiteral("dtype"), t.dtype},
                          {QStringLiteral("shape"), shape},
                          {QStringLiteral("data_offsets"), QJsonArray{qint64(data.size()), qint64(data.size() + t.data.size())}}};
        header.insert(t.name, entry);
        data += t.data;
    }
    QByteArray json = QJsonDocument(header).toJson(QJsonDocument::Compact);
    while (json.size() % align != 0) json += ' ';
    return rawSafetensors(json, data);
}

QByteArray rawSafetensors(const QByteArray& header, const QByteArray& data, std::optional<quint64> lengthField) {
    QByteArray out(8, Qt::Uninitialized);
    qToLittleEndian<quint64>(lengthField.value_or(quint64(header.size())), out.data());
    return out + header + data;
}

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(bytes) != bytes.size())
        qFatal("cannot write fixture %s", qPrintable(path));
}

QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

std::vector<FixtureTensor> readSafetensors(const QString& path) {
    const QByteArray bytes = readFile(path);
    if (bytes.size() < 8) qFatal("not a safetensors file: %s", qPrintable(path));
    const qint64 n = qint64(qFromLittleEndian<quint64>(bytes.constData()));
    const QJsonObject header = QJsonDocument::fromJson(bytes.mid(8, n)).object();
    std::vector<FixtureTensor> out;
    std::vector<qint64> begins;
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == QLatin1String("__metadata__")) continue;
        const QJsonObject e = it.value().toObject();
        FixtureTensor t;
        t.name = it.key();
        t.dtype = e.value(QLatin1String("dtype")).toString();
        for (const QJsonValue& d : e.value(QLatin1String("shape")).toArray()) t.shape.push_back(d.toInteger());
        const QJsonArray off = e.value(QLatin1String("data_offsets")).toArray();
        t.data = bytes.mid(8 + n + off[0].toInteger(), off[1].toInteger() - off[0].toInteger());
        begins.push_back(off[0].toInteger());
        out.push_back(t);
    }
    std::vector<size_t> order(out.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return begins[a] < begins[b]; });
    std::vector<FixtureTensor> sorted;
    for (const size_t i : order) sorted.push_back(out[i]);
    return sorted;
}

const FixtureTensor& tensorNamed(const std::vector<FixtureTensor>& tensors, const QString& name) {
    for (const FixtureTensor& t : tensors)
        if (t.name == name) return t;
    qFatal("fixture has no tensor %s", qPrintable(name));
}

float elementAsFloat(const FixtureTensor& t, qint64 i) {
    const uchar* p = reinterpret_cast<const uchar*>(t.data.constData());
    if (t.dtype == QLatin1String("F32")) return qFromLittleEndian<float>(p + 4 * i);
    const quint16 h = qFromLittleEndian<quint16>(p + 2 * i);
    if (t.dtype == QLatin1String("BF16")) {
        const quint32 bits = quint32(h) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
    // IEEE 754 binary16: sign, 5-bit exponent (bias 15), 10-bit fraction.
    const int sign = (h >> 15) ? -1 : 1;
    const int exponent = (h >> 10) & 0x1f;
    const int fraction = h & 0x3ff;
    if (exponent == 0) return float(sign * std::ldexp(double(fraction), -24));
    if (exponent == 31) return fraction ? NAN : sign * INFINITY;
    return float(sign * std::ldexp(double(1024 + fraction), exponent - 25));
}

void copyFiles(const QString& fromDir, const QString& toDir, const QStringList& names) {
    for (const QString& name : names) {
        const QString target = toDir + QLatin1Char('/') + name;
        QFile::remove(target);
        if (!QFile::copy(fromDir + QLatin1Char('/') + name, target))
            qFatal("cannot copy %s", qPrintable(name));
        QFile::setPermissions(target, QFile::ReadOwner | QFile::WriteOwner); // the reference data is read-only
    }
}

} // namespace attnscope::test
