#include "reference_json.h"

#include <QFile>
#include <QJsonDocument>
#include <limits>
#include <stdexcept>

namespace attnscope::test {

QJsonObject readJsonObject(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) throw std::runtime_error("cannot open " + path.toStdString());
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
    if (!doc.isObject()) throw std::runtime_error(path.toStdString() + ": " + err.errorString().toStdString());
    return doc.object();
}

Matrix matrixFromJson(const QJsonArray& rows) {
    const Eigen::Index r = rows.size(), c = r ? rows.at(0).toArray().size() : 0;
    Matrix m(r, c);
    for (Eigen::Index i = 0; i < r; ++i) {
        const QJsonArray row = rows.at(i).toArray();
        for (Eigen::Index j = 0; j < c; ++j) m(i, j) = float(row.at(j).toDouble());
    }
    return m;
}

std::vector<int> intsFromJson(const QJsonArray& values) {
    std::vector<int> out;
    for (const auto& v : values) out.push_back(v.toInt());
    return out;
}

double maxAbsDiff(const Matrix& a, const Matrix& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return std::numeric_limits<double>::infinity();
    if (a.size() == 0) return 0.0;
    return double((a - b).cwiseAbs().maxCoeff());
}

} // namespace attnscope::test
