#include "views/figures/heatmap_plot.h"

#include <QFontInfo>
#include <QFontMetricsF>
#include <cmath>

namespace attnscope {

QFont withPointSize(QFont f, double pt, bool bold) {
    f.setPointSizeF(pt);
    f.setBold(bold);
    return f;
}

QFont resolvedFont(const QFont& f) {
    QFont base = f;
    base.setFamily(QFontInfo(f).family());
    return base;
}

void styleHeatmapAxis(QCPAxis* axis, const QFont& base, const QString& label) {
    axis->setLabel(label);
    axis->setLabelFont(withPointSize(base, 10));
    axis->setTickLabelFont(withPointSize(base, 9));
    axis->setTickLengthIn(0);
    axis->setTickLengthOut(3);
    axis->setBasePen(QPen(Qt::black, 0));
    axis->setTickPen(QPen(Qt::black, 0));
    axis->setPadding(4);
}

HeatmapPlotParts buildHeatmapPlot(QCustomPlot* plot, const QFont& base, const QString& colLabel,
                                  const QString& rowLabel, const QString& valueLabel) {
    HeatmapPlotParts p;
    // Layout: [title] over [heatmap | colour bar]; the title is centred over both.
    plot->plotLayout()->clear();
    plot->plotLayout()->setAutoMargins(QCP::msNone);
    plot->plotLayout()->setRowSpacing(2);
    p.title = new QCPTextElement(plot, QString(), withPointSize(base, 12, true));
    plot->plotLayout()->addElement(0, 0, p.title);
    auto* body = new QCPLayoutGrid;
    plot->plotLayout()->addElement(1, 0, body);
    body->setColumnSpacing(10);
    p.rect = new QCPAxisRect(plot);
    body->addElement(0, 0, p.rect);
    p.scale = new QCPColorScale(plot);
    body->addElement(0, 1, p.scale);
    auto* group = new QCPMarginGroup(plot);
    p.rect->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    p.scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);

    QCPAxis* x = p.rect->axis(QCPAxis::atBottom);
    QCPAxis* y = p.rect->axis(QCPAxis::atLeft);
    styleHeatmapAxis(x, base, colLabel);
    styleHeatmapAxis(y, base, rowLabel);
    y->setRangeReversed(true); // row 0 at the top, as in a matrix
    // Frame the cells with a thin box.
    for (auto type : {QCPAxis::atTop, QCPAxis::atRight}) {
        p.rect->axis(type)->setVisible(true);
        p.rect->axis(type)->setTicks(false);
        p.rect->axis(type)->setTickLabels(false);
        p.rect->axis(type)->setBasePen(QPen(Qt::black, 0));
    }
    // Axis lines go on a layer above the cells, otherwise the colour map hides the frame.
    if (!plot->layer(QStringLiteral("frame")))
        plot->addLayer(QStringLiteral("frame"), plot->layer(QStringLiteral("main")), QCustomPlot::limAbove);
    for (auto type : {QCPAxis::atBottom, QCPAxis::atLeft, QCPAxis::atTop, QCPAxis::atRight})
        p.rect->axis(type)->setLayer(QStringLiteral("frame"));
    QObject::connect(x, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), p.rect->axis(QCPAxis::atTop),
                     qOverload<const QCPRange&>(&QCPAxis::setRange));
    QObject::connect(y, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), p.rect->axis(QCPAxis::atRight),
                     qOverload<const QCPRange&>(&QCPAxis::setRange));

    p.scale->setType(QCPAxis::atRight);
    p.scale->setBarWidth(14);
    styleHeatmapAxis(p.scale->axis(), base, valueLabel);
    p.scale->axis()->setSubTicks(false);
    p.scale->axis()->ticker()->setTickCount(5);

    p.map = new QCPColorMap(x, y);
    p.map->setColorScale(p.scale);
    p.map->setInterpolate(false); // crisp cells
    p.map->setTightBoundary(false);
    return p;
}

void fillHeatmapCells(QCPColorMap* map, int rows, int cols, int k, const std::function<double(int, int)>& value) {
    k = std::max(1, k);
    // QCPColorMap spans the sample centres: one sample across would be a zero-width image (a 1-layer
    // model's DLA map, a single row), two samples per cell give it its full width
    if (rows == 1 || cols == 1) k = std::max(k, 2);
    // Cell centres at 0..n-1; with k samples per cell the sample centres sit at i + (j+0.5)/k - 0.5.
    const double edge = 0.5 - 0.5 / k;
    if (map->data()->keySize() != cols * k || map->data()->valueSize() != rows * k)
        map->data()->setSize(cols * k, rows * k);
    map->data()->setRange(QCPRange(-edge, cols - 1 + edge), QCPRange(-edge, rows - 1 + edge));
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            const double z = value(r, c);
            for (int a = 0; a < k; ++a)
                for (int b = 0; b < k; ++b) map->data()->setCell(c * k + b, r * k + a, z);
        }
}

QString wrapToWidth(const QString& text, const QFont& font, int width) {
    const QFontMetricsF fm(font);
    if (text.isEmpty() || fm.horizontalAdvance(text) <= width) return text;
    QStringList lines;
    QString line;
    for (const QString& word : text.split(QLatin1Char(' '))) {
        const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
        if (!line.isEmpty() && fm.horizontalAdvance(longer) > width) {
            lines << line;
            line = word;
        } else {
            line = longer;
        }
    }
    lines << line;
    return lines.join(QLatin1Char('\n'));
}

void fitHeatmapCells(LayoutablePlot* plot, QCPAxisRect* rect, bool square) {
    const int pad = kHeatmapPad;
    QMargins m(pad, pad, pad, pad);
    plot->plotLayout()->setMargins(m);
    if (!square) {
        plot->layoutNow();
        return;
    }
    for (int iter = 0; iter < 4; ++iter) {
        plot->layoutNow();
        const QRect r = rect->rect();
        const double nx = rect->axis(QCPAxis::atBottom)->range().size();
        const double ny = rect->axis(QCPAxis::atLeft)->range().size();
        if (r.width() <= 0 || r.height() <= 0 || nx <= 0 || ny <= 0) return;
        const double cell = std::min(r.width() / nx, r.height() / ny);
        const int extraW = r.width() - int(std::lround(cell * nx));
        const int extraH = r.height() - int(std::lround(cell * ny));
        if (std::abs(extraW) <= 1 && std::abs(extraH) <= 1) return;
        m.setLeft(std::max(pad, m.left() + extraW / 2));
        m.setRight(std::max(pad, m.right() + extraW - extraW / 2));
        m.setTop(std::max(pad, m.top() + extraH / 2));
        m.setBottom(std::max(pad, m.bottom() + extraH - extraH / 2));
        plot->plotLayout()->setMargins(m);
    }
    plot->layoutNow();
}

QPoint heatmapCellAt(QCPAxisRect* rect, const QPoint& pos) {
    if (!rect->rect().contains(pos)) return {-1, -1};
    const int col = int(std::lround(rect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x())));
    const int row = int(std::lround(rect->axis(QCPAxis::atLeft)->pixelToCoord(pos.y())));
    return {row, col};
}

} // namespace attnscope
