#include "views/table_figure.h"

#include "model/core/csv_writer.h"

#include <QFileInfo>
#include <QFontMetrics>
#include <QGuiApplication>
#include <QHeaderView>
#include <QImage>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QTableWidget>
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

void paint(QPainter& p, const TableFigure& fig) {
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

bool fail(QString* error, const QString& path, const QString& problem) {
    if (error) *error = path + QStringLiteral(": ") + problem;
    return false;
}

} // namespace

QColor contrastingTextColor(const QColor& bg) {
    auto lin = [](double c) { return c <= 0.03928 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); };
    const double L = 0.2126 * lin(bg.redF()) + 0.7152 * lin(bg.greenF()) + 0.0722 * lin(bg.blueF());
    return L > 0.179 ? QColor(Qt::black) : QColor(Qt::white);
}

TableFigure tableFigureFrom(const QTableWidget& table, const QString& title) {
    TableFigure fig;
    fig.title = title;
    for (int c = 0; c < table.columnCount(); ++c) {
        const QTableWidgetItem* h = table.horizontalHeaderItem(c);
        fig.colLabels << (h ? h->text() : QString::number(c + 1));
    }
    for (int r = 0; r < table.rowCount(); ++r) {
        const QTableWidgetItem* h = table.verticalHeaderItem(r);
        fig.rowLabels << (!table.verticalHeader()->isHidden() ? (h ? h->text() : QString::number(r + 1)) : QString());
        QStringList text;
        std::vector<QColor> fill;
        for (int c = 0; c < table.columnCount(); ++c) {
            const QTableWidgetItem* it = table.item(r, c);
            text << (it ? it->text() : QString());
            const QBrush b = it ? it->background() : QBrush();
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
    const QSize size = tableFigureSize(fig);
    if (!(scale > 0.0 && scale <= 16.0)) return fail(error, path, QObject::tr("scale %1 must be in (0, 16]").arg(scale));
    if (format == ImageFormat::Png) {
        QImage image(size * scale, QImage::Format_ARGB32_Premultiplied);
        if (image.isNull()) return fail(error, path, QObject::tr("out of memory for the image"));
        QPainter p(&image);
        p.setRenderHint(QPainter::TextAntialiasing);
        p.scale(scale, scale);
        paint(p, fig);
        p.end();
        if (!image.save(path, "PNG")) return fail(error, path, QObject::tr("cannot write PNG (folder missing or not writable?)"));
        return true;
    }
    std::unique_ptr<QPaintDevice> device;
    const int dpi = 96;
    if (format == ImageFormat::Svg) {
        auto svg = std::make_unique<QSvgGenerator>();
        svg->setFileName(path);
        svg->setSize(size);
        svg->setViewBox(QRect(QPoint(0, 0), size));
        svg->setResolution(dpi);
        svg->setTitle(fig.title);
        device = std::move(svg);
    } else {
        auto pdf = std::make_unique<QPdfWriter>(path);
        pdf->setResolution(dpi);
        pdf->setPageSize(QPageSize(QSizeF(size) * 72.0 / dpi, QPageSize::Point, QString(), QPageSize::ExactMatch));
        pdf->setPageMargins(QMarginsF(0, 0, 0, 0));
        pdf->setTitle(fig.title);
        pdf->setCreator(QStringLiteral("AttnScope"));
        device = std::move(pdf);
    }
    QPainter p;
    if (!p.begin(device.get()))
        return fail(error, path, QObject::tr("cannot write %1 (folder missing or not writable?)").arg(imageFormatSuffix(format).toUpper()));
    p.scale(double(device->width()) / size.width(), double(device->height()) / size.height());
    paint(p, fig);
    p.end();
    device.reset();
    if (QFileInfo(path).size() == 0) return fail(error, path, QObject::tr("nothing was written"));
    return true;
}

bool exportTableCsv(const QTableWidget& table, const QString& path, QString* error) {
    const TableFigure fig = tableFigureFrom(table, {});
    const bool rowLabels = !table.verticalHeader()->isHidden();
    QStringList header;
    if (rowLabels) header << QString();
    header << fig.colLabels;
    std::vector<QStringList> rows;
    for (size_t r = 0; r < fig.text.size(); ++r) {
        QStringList row;
        if (rowLabels) row << fig.rowLabels[int(r)];
        row << fig.text[r];
        rows.push_back(row);
    }
    return writeCsv(path, header, rows, error);
}

} // namespace attnscope
