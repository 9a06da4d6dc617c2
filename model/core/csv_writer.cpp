#include "model/core/csv_writer.h"

#include <QSaveFile>
#include <cmath>

namespace attnscope {
namespace {

/// One RFC 4180 field: quoted (with quotes doubled) when it holds a comma, quote, CR or LF.
QString csvField(const QString& s) {
    if (!s.contains(QLatin1Char(',')) && !s.contains(QLatin1Char('"')) && !s.contains(QLatin1Char('\n')) &&
        !s.contains(QLatin1Char('\r')))
        return s;
    QString q = s;
    q.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    return QLatin1Char('"') + q + QLatin1Char('"');
}

QByteArray csvLine(const QStringList& fields) {
    QStringList quoted;
    quoted.reserve(fields.size());
    for (const QString& f : fields) quoted << csvField(f);
    return quoted.join(QLatin1Char(',')).toUtf8() + '\n';
}

} // namespace

bool writeCsv(const QString& path, const QStringList& header, const std::vector<QStringList>& rows, QString* error) {
    QSaveFile file(path);
    auto failed = [&](const QString& problem) {
        if (error) *error = path + QStringLiteral(": ") + problem;
        return false;
    };
    if (!file.open(QIODevice::WriteOnly)) return failed(file.errorString());
    file.write(csvLine(header));
    for (const QStringList& row : rows) file.write(csvLine(row));
    if (!file.commit()) return failed(file.errorString());
    return true;
}

bool writeMatrixCsv(const QString& path, const Matrix& values, const QStringList& rowLabels,
                    const QStringList& colLabels, QString* error) {
    if ((!rowLabels.isEmpty() && rowLabels.size() != values.rows()) ||
        (!colLabels.isEmpty() && colLabels.size() != values.cols())) {
        if (error)
            *error = path + QStringLiteral(": %1 row / %2 column labels for a %3×%4 matrix")
                                .arg(rowLabels.size()).arg(colLabels.size()).arg(values.rows()).arg(values.cols());
        return false;
    }
    QStringList header{QString()};
    for (Eigen::Index c = 0; c < values.cols(); ++c)
        header << (colLabels.isEmpty() ? QString::number(c) : colLabels[c]);
    std::vector<QStringList> rows;
    rows.reserve(values.rows());
    for (Eigen::Index r = 0; r < values.rows(); ++r) {
        QStringList row{rowLabels.isEmpty() ? QString::number(r) : rowLabels[r]};
        for (Eigen::Index c = 0; c < values.cols(); ++c) {
            const float v = values(r, c);
            row << (std::isnan(v) ? QString() : QString::number(double(v), 'g', 9));
        }
        rows.push_back(std::move(row));
    }
    return writeCsv(path, header, rows, error);
}

} // namespace attnscope
