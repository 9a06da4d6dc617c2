#pragma once
// Reads the shared reference JSON files (tiny-gpt2/reference.json, ...) into Eigen matrices.

#include "model/core/tensor.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QString>
#include <vector>

namespace attnscope::test {

/// Parses a whole JSON file as an object; QFAIL-style: throws std::runtime_error naming the file.
QJsonObject readJsonObject(const QString& path);
/// [[...], ...] -> rows × cols matrix.
Matrix matrixFromJson(const QJsonArray& rows);
std::vector<int> intsFromJson(const QJsonArray& values);
/// max |a - b| (matrices of the same shape; +inf if shapes differ).
double maxAbsDiff(const Matrix& a, const Matrix& b);

} // namespace attnscope::test
