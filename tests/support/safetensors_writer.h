#pragma once
// Writes safetensors fixtures for the tests, valid or deliberately broken, and reads a file's
// tensors back with a minimal parser that is independent of model/formats (a test reference).

#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <optional>
#include <vector>

namespace attnscope::test {

/// A tensor to write: its header entry and raw little-endian bytes.
struct FixtureTensor {
    QString name;
    QString dtype = QStringLiteral("F32");
    std::vector<qint64> shape;
    QByteArray data;
};

/// Little-endian bytes of float32 values.
QByteArray floatBytes(const std::vector<float>& values);

/// A valid safetensors file: tensors stored in the given order, offsets computed, JSON header
/// space-padded to a multiple of `align` bytes (1 = no padding) as the reference writer does.
QByteArray buildSafetensors(const std::vector<FixtureTensor>& tensors, const QJsonObject& metadata = {}, int align = 8);

/// A file from a raw header text: 8-byte little-endian length (the header's size, or `lengthField`),
/// then `header`, then `data`. For hostile fixtures.
QByteArray rawSafetensors(const QByteArray& header, const QByteArray& data = {},
                          std::optional<quint64> lengthField = std::nullopt);

/// Writes `bytes` to `path` (overwriting); QFAIL-style abort via qFatal if it cannot.
void writeFile(const QString& path, const QByteArray& bytes);
/// The whole content of `path` (empty if unreadable).
QByteArray readFile(const QString& path);

/// Tensors of a well-formed safetensors file, in data-offset order, read without model/formats.
std::vector<FixtureTensor> readSafetensors(const QString& path);
/// The tensor named `name` in `tensors` (qFatal if absent).
const FixtureTensor& tensorNamed(const std::vector<FixtureTensor>& tensors, const QString& name);
/// Element i of a F32/F16/BF16 tensor as float, decoded by hand from the IEEE/bfloat16 bit layout.
float elementAsFloat(const FixtureTensor& t, qint64 i);

/// Copies the named files from one folder to another.
void copyFiles(const QString& fromDir, const QString& toDir, const QStringList& names);

} // namespace attnscope::test
