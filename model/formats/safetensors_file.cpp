#include "model/formats/safetensors_file.h"

#include "model/core/errors.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStringDecoder>
#include <QtEndian>
#include <algorithm>
#include <cmath>

namespace attnscope {

namespace {

/// A JSON number that must be a non-negative integer (shape dimension or data offset).
/// Returns the value or throws ModelError with "<what> <problem>".
std::int64_t nonNegativeInteger(const QJsonValue& v, const QString& file, const QString& what) {
    if (!v.isDouble()) throw ModelError(file, QStringLiteral("%1 is not a number").arg(what));
    const double d = v.toDouble();
    if (!std::isfinite(d) || d != std::floor(d))
        throw ModelError(file, QStringLiteral("%1 is not an integer (%2)").arg(what).arg(d));
    if (d < 0) throw ModelError(file, QStringLiteral("%1 is negative (%2)").arg(what).arg(d));
    const qint64 i = v.toInteger(-1);
    if (i < 0) throw ModelError(file, QStringLiteral("%1 is too large (%2)").arg(what).arg(d));
    return i;
}

SafetensorsTensor parseEntry(const QString& name, const QJsonValue& value, std::int64_t dataBytes,
                             const QString& file) {
    const QString t = QStringLiteral("tensor ") + name;
    if (!value.isObject()) throw ModelError(file, t + QStringLiteral(" entry is not a JSON object"));
    const QJsonObject o = value.toObject();
    SafetensorsTensor tensor;
    tensor.name = name;

    const QJsonValue dtypeValue = o.value(QLatin1String("dtype"));
    if (!dtypeValue.isString()) throw ModelError(file, t + QStringLiteral(" has no dtype string"));
    const auto dtype = dtypeFromString(dtypeValue.toString());
    if (!dtype) throw ModelError(file, t + QStringLiteral(" has unknown dtype '%1'").arg(dtypeValue.toString()));
    tensor.dtype = *dtype;

    const QJsonValue shapeValue = o.value(QLatin1String("shape"));
    if (!shapeValue.isArray()) throw ModelError(file, t + QStringLiteral(" has no shape array"));
    const QJsonArray shapeArray = shapeValue.toArray();
    bool hasZero = false;
    for (qsizetype i = 0; i < shapeArray.size(); ++i) {
        tensor.shape.push_back(nonNegativeInteger(shapeArray[i], file, t + QStringLiteral(" shape dimension %1").arg(i)));
        hasZero = hasZero || tensor.shape.back() == 0;
    }
    std::int64_t numel = 1;
    if (hasZero) {
        numel = 0;
    } else {
        for (const std::int64_t dim : tensor.shape)
            if (__builtin_mul_overflow(numel, dim, &numel))
                throw ModelError(file, t + QStringLiteral(" shape %1 has too many elements (overflow)")
                                           .arg(shapeString(tensor.shape)));
    }
    tensor.numel = numel;
    std::int64_t needBytes = 0;
    if (__builtin_mul_overflow(numel, std::int64_t(dtypeSize(tensor.dtype)), &needBytes))
        throw ModelError(file, t + QStringLiteral(" shape %1 has too many bytes (overflow)").arg(shapeString(tensor.shape)));

    const QJsonValue offsetsValue = o.value(QLatin1String("data_offsets"));
    if (!offsetsValue.isArray() || offsetsValue.toArray().size() != 2)
        throw ModelError(file, t + QStringLiteral(" data_offsets is not an array [begin, end]"));
    const QJsonArray offsets = offsetsValue.toArray();
    tensor.begin = nonNegativeInteger(offsets[0], file, t + QStringLiteral(" data_offsets begin"));
    tensor.end = nonNegativeInteger(offsets[1], file, t + QStringLiteral(" data_offsets end"));
    if (tensor.begin > tensor.end)
        throw ModelError(file, t + QStringLiteral(" data_offsets [%1, %2] are reversed (begin > end)")
                                   .arg(tensor.begin).arg(tensor.end));
    if (tensor.end > dataBytes)
        throw ModelError(file, t + QStringLiteral(" data_offsets end %1 is beyond the %2-byte data area")
                                   .arg(tensor.end).arg(dataBytes));
    if (tensor.end - tensor.begin != needBytes)
        throw ModelError(file, t + QStringLiteral(" data_offsets [%1, %2] hold %3 bytes but shape %4 of %5 needs %6 bytes")
                                   .arg(tensor.begin).arg(tensor.end).arg(tensor.end - tensor.begin)
                                   .arg(shapeString(tensor.shape), dtypeName(tensor.dtype)).arg(needBytes));
    return tensor;
}

} // namespace

QString shapeString(const std::vector<std::int64_t>& shape) {
    QStringList parts;
    for (const std::int64_t d : shape) parts << QString::number(d);
    return QLatin1Char('[') + parts.join(QLatin1String(", ")) + QLatin1Char(']');
}

SafetensorsHeader parseSafetensorsHeader(QByteArrayView prefix, std::int64_t fileSize, const QString& file) {
    if (fileSize < 8)
        throw ModelError(file, QStringLiteral("file is %1 bytes, too short for the 8-byte header length of a safetensors file")
                                   .arg(fileSize));
    if (prefix.size() < 8) throw ModelError(file, QStringLiteral("could not read the header length"));
    const quint64 n = qFromLittleEndian<quint64>(prefix.data());
    if (n == 0) throw ModelError(file, QStringLiteral("header length is 0; expected a JSON header"));
    if (n > quint64(kMaxSafetensorsHeaderBytes))
        throw ModelError(file, QStringLiteral("header length %1 exceeds the limit of %2 bytes")
                                   .arg(n).arg(kMaxSafetensorsHeaderBytes));
    if (n > quint64(fileSize - 8))
        throw ModelError(file, QStringLiteral("header length %1 is beyond the end of the file (%2 bytes after the length field)")
                                   .arg(n).arg(fileSize - 8));
    if (quint64(prefix.size() - 8) < n) throw ModelError(file, QStringLiteral("could not read the %1-byte header").arg(n));

    SafetensorsHeader header;
    header.headerBytes = std::int64_t(n);
    header.dataOffset = 8 + header.headerBytes;
    header.dataBytes = fileSize - header.dataOffset;

    const QByteArray json = prefix.sliced(8, header.headerBytes).toByteArray();
    {
        QStringDecoder utf8(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
        const QString decoded = utf8.decode(json);
        if (utf8.hasError()) throw ModelError(file, QStringLiteral("header is not valid UTF-8"));
    }
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &parseError);
    if (parseError.error != QJsonParseError::NoError)
        throw ModelError(file, QStringLiteral("header is not valid JSON: %1 at offset %2")
                                   .arg(parseError.errorString()).arg(parseError.offset));
    if (!doc.isObject()) throw ModelError(file, QStringLiteral("header is not a JSON object"));
    const QJsonObject root = doc.object();

    for (auto it = root.begin(); it != root.end(); ++it) {
        if (it.key() == QLatin1String("__metadata__")) {
            if (!it.value().isObject()) throw ModelError(file, QStringLiteral("__metadata__ is not a JSON object"));
            const QJsonObject meta = it.value().toObject();
            for (auto m = meta.begin(); m != meta.end(); ++m) {
                if (!m.value().isString())
                    throw ModelError(file, QStringLiteral("__metadata__ value '%1' is not a string").arg(m.key()));
                header.metadata.insert(m.key(), m.value().toString());
            }
            continue;
        }
        header.tensors.push_back(parseEntry(it.key(), it.value(), header.dataBytes, file));
    }

    // The tensors must tile the data area exactly: sorted by offset, each starts where the previous ended.
    std::sort(header.tensors.begin(), header.tensors.end(), [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    std::int64_t expected = 0;
    const SafetensorsTensor* previous = nullptr;
    for (const SafetensorsTensor& t : header.tensors) {
        if (t.begin > expected)
            throw ModelError(file, QStringLiteral("gap of %1 bytes in the data area before tensor %2 (data offset %3)")
                                       .arg(t.begin - expected).arg(t.name).arg(expected));
        if (t.begin < expected)
            throw ModelError(file, QStringLiteral("tensor %1 data_offsets [%2, %3] overlap tensor %4 [%5, %6]")
                                       .arg(t.name).arg(t.begin).arg(t.end)
                                       .arg(previous->name).arg(previous->begin).arg(previous->end));
        expected = t.end;
        previous = &t;
    }
    if (expected != header.dataBytes)
        throw ModelError(file, QStringLiteral("%1 trailing bytes after the last tensor (data area is %2 bytes, tensors cover %3)")
                                   .arg(header.dataBytes - expected).arg(header.dataBytes).arg(expected));
    return header;
}

std::shared_ptr<const SafetensorsFile> SafetensorsFile::open(const QString& path, const QString& label) {
    std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
    f->map_.open(path, label);
    f->base_ = f->map_.data();
    f->header_ = parseSafetensorsHeader(f->map_.bytes(), f->map_.size(), f->label());
    for (int i = 0; i < int(f->header_.tensors.size()); ++i) f->index_.insert(f->header_.tensors[size_t(i)].name, i);
    return f;
}

SafetensorsFile::~SafetensorsFile() = default;

const SafetensorsTensor* SafetensorsFile::find(const QString& name) const {
    const auto it = index_.constFind(name);
    return it == index_.constEnd() ? nullptr : &header_.tensors[size_t(*it)];
}

} // namespace attnscope
