#include "views/figures/value_table.h"

#include "model/core/csv_writer.h"

#include <QAbstractItemModel>
#include <charconv>
#include <cmath>

namespace attnscope {
namespace {

template <typename T>
QString shortest(T v) {
    if (std::isnan(v)) return {};
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v); // shortest round-trip representation
    return QString::fromLatin1(buf, int(r.ptr - buf));
}

QString tsvCell(QString s) {
    for (QChar& c : s)
        if (c == QLatin1Char('\t') || c == QLatin1Char('\n') || c == QLatin1Char('\r')) c = QLatin1Char(' ');
    return s;
}

bool isFloating(const QVariant& v) {
    const int t = v.metaType().id();
    return t == QMetaType::Double || t == QMetaType::Float;
}

QString variantNumber(const QVariant& v) {
    return v.metaType().id() == QMetaType::Float ? exactNumber(v.toFloat()) : exactNumber(v.toDouble());
}

} // namespace

QString exactNumber(float v) { return shortest(v); }
QString exactNumber(double v) { return shortest(v); }

QString ValueTable::toTsv() const {
    QString out;
    const bool labels = !rowLabels.isEmpty();
    QStringList header;
    if (labels) header << tsvCell(corner);
    for (const QString& c : colLabels) header << tsvCell(c);
    out += header.join(QLatin1Char('\t')) + QLatin1Char('\n');
    for (size_t r = 0; r < cells.size(); ++r) {
        QStringList row;
        if (labels) row << tsvCell(rowLabels.value(int(r)));
        for (const QString& c : cells[r]) row << tsvCell(c);
        out += row.join(QLatin1Char('\t')) + QLatin1Char('\n');
    }
    return out;
}

bool ValueTable::writeCsv(const QString& path, QString* error) const {
    const bool labels = !rowLabels.isEmpty();
    QStringList header;
    if (labels) header << corner;
    header << colLabels;
    std::vector<QStringList> rows;
    rows.reserve(cells.size());
    for (size_t r = 0; r < cells.size(); ++r) {
        QStringList row;
        if (labels) row << rowLabels.value(int(r));
        row << cells[r];
        rows.push_back(std::move(row));
    }
    return attnscope::writeCsv(path, header, rows, error);
}

ValueTable valueTableOf(const Matrix& values, const QStringList& rowLabels, const QStringList& colLabels,
                        const QString& corner) {
    ValueTable t;
    t.corner = corner;
    for (Eigen::Index c = 0; c < values.cols(); ++c)
        t.colLabels << (colLabels.size() == values.cols() ? colLabels[int(c)] : QString::number(c));
    for (Eigen::Index r = 0; r < values.rows(); ++r) {
        t.rowLabels << (rowLabels.size() == values.rows() ? rowLabels[int(r)] : QString::number(r));
        QStringList row;
        row.reserve(int(values.cols()));
        for (Eigen::Index c = 0; c < values.cols(); ++c) row << exactNumber(values(r, c));
        t.cells.push_back(std::move(row));
    }
    return t;
}

QString exactCellText(const QAbstractItemModel& model, int row, int col) {
    const QModelIndex i = model.index(row, col);
    if (const QVariant exact = model.data(i, kExactValueRole); exact.isValid())
        return isFloating(exact) ? variantNumber(exact) : exact.toString();
    if (const QVariant user = model.data(i, Qt::UserRole); isFloating(user)) return variantNumber(user);
    if (const QVariant display = model.data(i, Qt::DisplayRole); isFloating(display)) return variantNumber(display);
    return model.data(i, Qt::DisplayRole).toString();
}

ValueTable valueTableOf(const QAbstractItemModel& model, bool rowHeaders, const QString& corner) {
    ValueTable t;
    t.corner = corner;
    const int rows = model.rowCount(), cols = model.columnCount();
    for (int c = 0; c < cols; ++c) t.colLabels << model.headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
    for (int r = 0; r < rows; ++r) {
        if (rowHeaders) t.rowLabels << model.headerData(r, Qt::Vertical, Qt::DisplayRole).toString();
        QStringList row;
        row.reserve(cols);
        for (int c = 0; c < cols; ++c) row << exactCellText(model, r, c);
        t.cells.push_back(std::move(row));
    }
    return t;
}

} // namespace attnscope
