#pragma once
// A Matrix as a Qt table model: numbers formatted to a few significant digits, NaN shown as "–"
// (masked), optional row/column labels, optional editing (the sandbox's input grids), and a
// "blank" mode that keeps the headers but shows no values (the by-hand worksheet template).

#include "model/core/tensor.h"

#include <QAbstractTableModel>
#include <QStringList>
#include <functional>

class QTableView;

namespace attnscope {

class MatrixTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    explicit MatrixTableModel(QObject* parent = nullptr);

    /// Replaces the matrix [rows, cols] and its labels (empty = indices). Resets the model.
    void setMatrix(const Matrix& values, const QStringList& rowLabels = {}, const QStringList& colLabels = {});
    const Matrix& matrix() const { return values_; }
    /// Cells become editable; an accepted edit emits cellEdited (the matrix is updated first).
    void setEditable(bool on) { editable_ = on; }
    /// Significant digits of the displayed numbers (default 4).
    void setPrecision(int digits);
    /// Custom cell text (e.g. fractions); null function = the default number format.
    void setFormatter(std::function<QString(double)> f);
    /// Values hidden (empty cells), headers kept.
    void setBlank(bool on);
    bool isBlank() const { return blank_; }
    /// The text a cell shows.
    QString cellText(int row, int col) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role) override;

signals:
    void cellEdited(int row, int col, double value);

private:
    Matrix values_;
    QStringList rowLabels_, colLabels_;
    bool editable_ = false;
    bool blank_ = false;
    int precision_ = 4;
    std::function<QString(double)> formatter_;
};

/// Shrinks a table view to exactly its contents (no scroll bars): for small matrices laid out in
/// a worksheet. Call after the model changed.
void fitTableToContents(QTableView* view);

/// `x` as a fraction "p/q" (q ≤ maxDenominator) when it equals one to 1e-6, else 4 significant digits.
QString fractionText(double x, int maxDenominator = 4096);

} // namespace attnscope
