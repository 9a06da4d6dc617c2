#include "views/figures/table_figure.h"

#include "views/figures/empty_state.h"
#include "views/figures/figure_actions.h"
#include "views/figures/plot_render.h"

#include <qcustomplot.h>

#include <QFileInfo>
#include <QFontMetrics>
#include <QGuiApplication>
#include <QHeaderView>
#include <QImage>
#include <QPainter>
#include <QHelpEvent>
#include <QTableView>
#include <QToolTip>
#include <cmath>
#include <memory>

namespace attnscope {
namespace {

constexpr int kPad = 6;
constexpr int kRowHeight = 22;
constexpr int kTitleHeight = 30;

QFont figureFont() {
    QFont f = QGuiApplication::font();
    f.setPixelSize(12);
    return f;
}

/// Widths of the label column and of each data column.
std::vector<int> columnWidths(const TableFigure& fig) {
    const QFontMetrics fm(figureFont());
    QFont boldFont = figureFont();
    boldFont.setBold(true);
    const QFontMetrics bold(boldFont); // header cells are bold
    std::vector<int> w(size_t(fig.colLabels.size()) + 1, 40);
    w[0] = std::max(w[0], bold.horizontalAdvance(fig.corner) + 2 * kPad);
    for (const QString& r : fig.rowLabels) w[0] = std::max(w[0], fm.horizontalAdvance(r) + 2 * kPad);
    for (int c = 0; c < fig.colLabels.size(); ++c) {
        int m = bold.horizontalAdvance(fig.colLabels[c]);
        for (const QStringList& row : fig.text) m = std::max(m, fm.horizontalAdvance(row.value(c)));
        w[size_t(c) + 1] = std::min(std::max(w[size_t(c) + 1], m + 2 * kPad), 260);
    }
    return w;
}

} // namespace

QColor contrastingTextColor(const QColor& bg) {
    auto lin = [](double c) { return c <= 0.03928 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); };
    const double L = 0.2126 * lin(bg.redF()) + 0.7152 * lin(bg.greenF()) + 0.0722 * lin(bg.blueF());
    return L > 0.179 ? QColor(Qt::black) : QColor(Qt::white);
}

void paintTableFigure(QPainter& p, const TableFigure& fig) {
    const std::vector<int> w = columnWidths(fig);
    QFont f = figureFont();
    QFont bold = f;
    bold.setBold(true);
    const QSize size = tableFigureSize(fig);
    p.fillRect(QRect(QPoint(0, 0), size), Qt::white);
    p.setFont(bold);
    p.setPen(Qt::black);
    p.drawText(QRect(kPad, 0, size.width() - 2 * kPad, kTitleHeight), Qt::AlignLeft | Qt::AlignVCenter, fig.title);
    int y = kTitleHeight;
    int x = 0;
    const QColor grid(0xbb, 0xbb, 0xbb);
    for (int c = 0; c <= fig.colLabels.size(); ++c) {
        const QRect cell(x, y, w[size_t(c)], kRowHeight);
        p.fillRect(cell, QColor(0xee, 0xee, 0xee));
        p.setPen(grid);
        p.drawRect(cell);
        p.setPen(Qt::black);
        p.drawText(cell.adjusted(kPad, 0, -kPad, 0), Qt::AlignCenter, c == 0 ? fig.corner : fig.colLabels[c - 1]);
        x += w[size_t(c)];
    }
    p.setFont(f);
    for (int r = 0; r < fig.rowLabels.size(); ++r) {
        y += kRowHeight;
        x = 0;
        for (int c = 0; c <= fig.colLabels.size(); ++c) {
            const QRect cell(x, y, w[size_t(c)], kRowHeight);
            QColor bg = c == 0 ? QColor(0xee, 0xee, 0xee) : QColor(Qt::white);
            QString text = c == 0 ? fig.rowLabels[r] : QString();
            if (c > 0 && size_t(r) < fig.text.size()) text = fig.text[size_t(r)].value(c - 1);
            if (c > 0 && size_t(r) < fig.fill.size() && size_t(c - 1) < fig.fill[size_t(r)].size() &&
                fig.fill[size_t(r)][size_t(c - 1)].isValid())
                bg = fig.fill[size_t(r)][size_t(c - 1)];
            p.fillRect(cell, bg);
            p.setPen(grid);
            p.drawRect(cell);
            p.setPen(contrastingTextColor(bg));
            p.drawText(cell.adjusted(kPad, 0, -kPad, 0), Qt::AlignCenter,
                       QFontMetrics(f).elidedText(text, Qt::ElideRight, cell.width() - 2 * kPad));
            x += w[size_t(c)];
        }
    }
}

TableFigure tableFigureFrom(const QTableView& table, const QString& title) {
    TableFigure fig;
    fig.title = title;
    const QAbstractItemModel* m = table.model();
    if (!m) return fig;
    const bool rowHeaders = !table.verticalHeader()->isHidden();
    for (int c = 0; c < m->columnCount(); ++c) fig.colLabels << m->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
    for (int r = 0; r < m->rowCount(); ++r) {
        fig.rowLabels << (rowHeaders ? m->headerData(r, Qt::Vertical, Qt::DisplayRole).toString() : QString());
        QStringList text;
        std::vector<QColor> fill;
        for (int c = 0; c < m->columnCount(); ++c) {
            const QModelIndex i = m->index(r, c);
            text << m->data(i, Qt::DisplayRole).toString();
            const QVariant bg = m->data(i, Qt::BackgroundRole);
            const QBrush b = bg.canConvert<QBrush>() ? bg.value<QBrush>() : QBrush();
            fill.push_back(b.style() == Qt::NoBrush ? QColor() : b.color());
        }
        fig.text.push_back(text);
        fig.fill.push_back(fill);
    }
    return fig;
}

QSize tableFigureSize(const TableFigure& fig) {
    int w = 0;
    for (int x : columnWidths(fig)) w += x;
    return QSize(std::max(w + 1, 200), kTitleHeight + kRowHeight * (int(fig.rowLabels.size()) + 1) + 1);
}

bool exportTableFigure(const TableFigure& fig, const QString& path, ImageFormat format, double scale, QString* error) {
    return renderFigure(path, format, tableFigureSize(fig), scale, fig.title, QStringLiteral("Table exported by AttnScope"),
                        [&](QCPPainter& p) { paintTableFigure(p, fig); }, error);
}

bool exportTableCsv(const QTableView& table, const QString& path, QString* error) {
    if (!table.model()) return failWith(error, path, QObject::tr("no table"));
    return valueTableOf(*table.model(), !table.verticalHeader()->isHidden()).writeCsv(path, error);
}

TableViewFigure::TableViewFigure(QTableView* view, const QString& baseName, const QString& emptyText)
    : QObject(view), view_(view), empty_(new EmptyState(view->viewport(), emptyText)),
      actions_(new FigureActions(view, this, baseName)) {
    setObjectName(QStringLiteral("TableViewFigure"));
    view->viewport()->installEventFilter(this);
    view->viewport()->setMouseTracking(true);
    watchModel();
}

void TableViewFigure::watchModel() {
    QAbstractItemModel* m = view_->model();
    if (!m) return;
    for (auto signal : {&QAbstractItemModel::rowsInserted, &QAbstractItemModel::rowsRemoved,
                        &QAbstractItemModel::columnsInserted, &QAbstractItemModel::columnsRemoved})
        connect(m, signal, this, &TableViewFigure::updateEmptyState);
    connect(m, &QAbstractItemModel::modelReset, this, &TableViewFigure::updateEmptyState);
    connect(m, &QAbstractItemModel::layoutChanged, this, &TableViewFigure::updateEmptyState);
    updateEmptyState();
}

void TableViewFigure::setEmptyText(const QString& text) {
    if (!empty_) return;
    empty_->setText(text);
    updateEmptyState();
}

void TableViewFigure::updateEmptyState() {
    if (empty_ && view_) empty_->setEmpty(!hasFigureData() && !empty_->text().isEmpty());
}

bool TableViewFigure::isShowingEmptyState() const { return empty_ && empty_->isEmpty(); }

QString TableViewFigure::emptyText() const { return empty_ ? empty_->text() : QString(); }

bool TableViewFigure::hasFigureData() const {
    return view_ && view_->model() && view_->model()->rowCount() > 0 && view_->model()->columnCount() > 0;
}

QSize TableViewFigure::figureSize() const { return tableFigureSize(tableFigureFrom(*view_, title_)); }

void TableViewFigure::paintFigure(QCPPainter& painter, QSize, bool) {
    TableFigure fig = tableFigureFrom(*view_, title_);
    if (!corner_.isEmpty()) fig.corner = corner_;
    paintTableFigure(painter, fig);
}

ValueTable TableViewFigure::figureValues() const {
    if (!view_ || !view_->model()) return {};
    return valueTableOf(*view_->model(), !view_->verticalHeader()->isHidden(), corner_);
}

QString TableViewFigure::rowLabel(int row) const {
    const QAbstractItemModel* m = view_->model();
    if (!view_->verticalHeader()->isHidden()) return m->headerData(row, Qt::Vertical, Qt::DisplayRole).toString();
    return tr("row %1").arg(row + 1);
}

QString TableViewFigure::describeCell(int row, int col) const {
    const QAbstractItemModel* m = view_ ? view_->model() : nullptr;
    if (!m || row < 0 || col < 0 || row >= m->rowCount() || col >= m->columnCount()) return {};
    QString text = QStringLiteral("%1, %2: %3")
                       .arg(rowLabel(row), m->headerData(col, Qt::Horizontal, Qt::DisplayRole).toString(),
                            exactCellText(*m, row, col));
    const QString own = m->data(m->index(row, col), Qt::ToolTipRole).toString();
    bool number = false;
    own.toDouble(&number); // a tooltip that only repeats the value adds nothing
    if (!own.isEmpty() && !number) text += QLatin1Char('\n') + own;
    return text;
}

bool TableViewFigure::eventFilter(QObject* watched, QEvent* event) {
    if (view_ && watched == view_->viewport() && event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const QModelIndex i = view_->indexAt(help->pos());
        const QString text = i.isValid() ? describeCell(i.row(), i.column()) : QString();
        if (text.isEmpty()) QToolTip::hideText();
        else QToolTip::showText(help->globalPos(), text, view_->viewport());
        return true;
    }
    return QObject::eventFilter(watched, event);
}

TableViewFigure* installTableFigure(QTableView* view, const QString& baseName, const QString& emptyText) {
    if (TableViewFigure* existing = tableFigureOf(view)) {
        existing->setEmptyText(emptyText);
        return existing;
    }
    return new TableViewFigure(view, baseName, emptyText);
}

TableViewFigure* tableFigureOf(const QTableView* view) {
    return view ? view->findChild<TableViewFigure*>(QStringLiteral("TableViewFigure"), Qt::FindDirectChildrenOnly) : nullptr;
}

} // namespace attnscope
