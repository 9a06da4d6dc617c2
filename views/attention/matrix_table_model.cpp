#include "views/attention/matrix_table_model.h"

#include "views/figures/value_table.h"

#include <QHeaderView>
#include <QTableView>
#include <cmath>

namespace attnscope {

MatrixTableModel::MatrixTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void MatrixTableModel::setMatrix(const Matrix& values, const QStringList& rowLabels, const QStringList& colLabels) {
    beginResetModel();
    values_ = values;
    rowLabels_ = rowLabels;
    colLabels_ = colLabels;
    endResetModel();
}

void MatrixTableModel::setPrecision(int digits) {
    precision_ = std::clamp(digits, 1, 9);
    emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
}

void MatrixTableModel::setFormatter(std::function<QString(double)> f) {
    formatter_ = std::move(f);
    emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
}

void MatrixTableModel::setBlank(bool on) {
    if (on == blank_) return;
    blank_ = on;
    emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
}

QString MatrixTableModel::cellText(int row, int col) const {
    if (blank_ || row < 0 || col < 0 || row >= values_.rows() || col >= values_.cols()) return {};
    const double v = values_(row, col);
    if (std::isnan(v)) return QStringLiteral("–");
    if (formatter_) return formatter_(v);
    return QString::number(v, 'g', precision_);
}

int MatrixTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(values_.rows()); }

int MatrixTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(values_.cols()); }

QVariant MatrixTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid()) return {};
    switch (role) {
    case Qt::DisplayRole: return cellText(index.row(), index.column());
    case Qt::EditRole: return double(values_(index.row(), index.column()));
    case Qt::TextAlignmentRole: return int(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ToolTipRole:
        return blank_ ? QVariant() : QVariant(QString::number(double(values_(index.row(), index.column())), 'g', 9));
    case kExactValueRole: // Copy values and CSV: the float itself ("" when blank or masked)
        return blank_ ? QVariant(QString()) : QVariant(values_(index.row(), index.column()));
    default: return {};
    }
}

QVariant MatrixTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole) return {};
    const QStringList& labels = orientation == Qt::Horizontal ? colLabels_ : rowLabels_;
    return section < labels.size() ? labels[section] : QString::number(section);
}

Qt::ItemFlags MatrixTableModel::flags(const QModelIndex& index) const {
    Qt::ItemFlags f = QAbstractTableModel::flags(index);
    return editable_ ? f | Qt::ItemIsEditable : f;
}

bool MatrixTableModel::setData(const QModelIndex& index, const QVariant& value, int role) {
    if (!editable_ || role != Qt::EditRole || !index.isValid()) return false;
    bool ok = false;
    const double v = value.toString().trimmed().replace(QLatin1Char(','), QLatin1Char('.')).toDouble(&ok);
    if (!ok || !std::isfinite(v)) return false;
    values_(index.row(), index.column()) = float(v);
    emit dataChanged(index, index);
    emit cellEdited(index.row(), index.column(), v);
    return true;
}

void fitTableToContents(QTableView* view) {
    view->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    view->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    view->resizeColumnsToContents();
    view->resizeRowsToContents();
    const int w = view->verticalHeader()->width() + view->horizontalHeader()->length() + 2 * view->frameWidth();
    const int h = view->horizontalHeader()->height() + view->verticalHeader()->length() + 2 * view->frameWidth();
    view->setFixedSize(w, h);
}

QString fractionText(double x, int maxDenominator) {
    if (!std::isfinite(x)) return QStringLiteral("–");
    for (int q = 1; q <= maxDenominator; ++q) {
        const double p = std::round(x * q);
        if (std::abs(p / q - x) <= 1e-6 * std::max(1.0, std::abs(x)))
            return q == 1 ? QString::number(qint64(p)) : QStringLiteral("%1/%2").arg(qint64(p)).arg(q);
    }
    return QString::number(x, 'g', 4);
}

} // namespace attnscope
