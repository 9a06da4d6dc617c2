#pragma once
// CSV files (RFC 4180: comma-separated, fields with comma, quote or newline quoted, quotes doubled,
// UTF-8, "\n" line ends) for exporting tables and matrices.

#include "model/core/tensor.h"

#include <QString>
#include <QStringList>
#include <vector>

namespace attnscope {

/// Writes header + rows atomically (QSaveFile). Returns false and sets *error ("<file>: <problem>").
bool writeCsv(const QString& path, const QStringList& header, const std::vector<QStringList>& rows, QString* error);

/// A matrix as CSV: first column = row labels (or indices), header = "" + column labels (or
/// indices); NaN written as an empty field; floats with 9 significant digits.
bool writeMatrixCsv(const QString& path, const Matrix& values, const QStringList& rowLabels,
                    const QStringList& colLabels, QString* error);

} // namespace attnscope
