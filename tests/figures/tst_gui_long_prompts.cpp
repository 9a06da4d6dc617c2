// Views at long prompts: token labels thinned to what fits at each zoom (all labels when zoomed in
// far enough), and the fast rendering paths (cached tick labels, column-sum thumbnails) drawing
// the same pixels as the straightforward ones.

#include "views/attention/attention_heatmap.h"
#include "views/figures/cached_tick_labels.h"
#include "views/figures/figure_export.h"
#include "views/attention/head_grid.h"
#include "views/figures/heatmap_plot.h"
#include "views/figures/palettes.h"
#include "views/figures/token_axis.h"

#include <qcustomplot.h>

#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <limits>

using namespace attnscope;

namespace {

/// Causal pattern: random weights plus a previous-token stripe, rows normalised.
Matrix causalPattern(int n, quint32 seed) {
    QRandomGenerator rng(seed);
    Matrix p = Matrix::Zero(n, n);
    for (int q = 0; q < n; ++q) {
        for (int k = 0; k <= q; ++k) p(q, k) = float(0.25 * rng.generateDouble());
        p(q, std::max(0, q - 1)) += 2.0f;
        p.row(q) /= p.row(q).sum();
    }
    return p;
}

/// Distinct token-like labels "␣tok0", "␣tok1", ...
QStringList tokenLabels(int n) {
    QStringList t;
    for (int i = 0; i < n; ++i) t << QStringLiteral("␣tok%1").arg(i);
    return t;
}

int colourDistance(QRgb a, QRgb b) {
    return std::max({std::abs(qRed(a) - qRed(b)), std::abs(qGreen(a) - qGreen(b)), std::abs(qBlue(a) - qBlue(b))});
}

/// Pixel length of `axis` and the smallest distance between neighbouring labelled ticks.
struct TickSpacing {
    double axisPixels = 0, minPitch = 0;
    int count = 0;
};
TickSpacing tickSpacing(QCPAxis* axis) {
    TickSpacing s;
    s.axisPixels = axis->orientation() == Qt::Horizontal ? axis->axisRect()->width() : axis->axisRect()->height();
    const QVector<double> ticks = axis->tickVector();
    s.count = int(ticks.size());
    s.minPitch = std::numeric_limits<double>::infinity();
    for (int i = 1; i < ticks.size(); ++i)
        s.minPitch = std::min(s.minPitch, std::abs(axis->coordToPixel(ticks[i]) - axis->coordToPixel(ticks[i - 1])));
    return s;
}

} // namespace

class TestGuiLongPrompts : public QObject {
    Q_OBJECT
private slots:
    void labelsThinnedAtEveryZoom();
    void cellColoursMatchGradient();
    void cachedTickLabelsDrawSamePixels();
    void exponentLikeTokensStayLiteral();
    void thumbnailIsBoxAverage();
};

void TestGuiLongPrompts::labelsThinnedAtEveryZoom() {
    const int n = 1024;
    AttentionHeatmap view;
    view.resize(800, 800);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setData({causalPattern(n, 1), tokenLabels(n), QStringLiteral("long"), true});
    QCPAxisRect* rect = view.plot()->axisRect();
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    const double lineHeight = QFontMetricsF(x->tickLabelFont()).height();

    // Whole prompt, zoomed to a quarter, zoomed to 20 tokens and panned: labels never closer than
    // one text line, as many as fit (at least a third of what would fit at one line each), and
    // every token once the view is narrow enough.
    const QList<QCPRange> ranges{QCPRange(-0.5, n - 0.5), QCPRange(300, 556), QCPRange(99.5, 119.5),
                                 QCPRange(109.5, 129.5), QCPRange(800.2, 803.7)};
    QRect cells;
    for (const QCPRange& r : ranges) {
        x->setRange(r);
        y->setRange(r);
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        // Room for the widest token is reserved: zoom/pan never moves the cells or unsquares them.
        if (cells.isNull()) cells = rect->rect();
        QCOMPARE(rect->rect(), cells);
        for (QCPAxis* axis : {x, y}) {
            const TickSpacing s = tickSpacing(axis);
            const QString where = QStringLiteral("%1 axis, range %2..%3: %4 labels, pitch %5 px")
                                      .arg(axis == x ? "x" : "y").arg(r.lower).arg(r.upper).arg(s.count).arg(s.minPitch);
            QVERIFY2(s.count >= 1, qPrintable(where));
            QVERIFY2(s.count <= s.axisPixels / lineHeight + 1, qPrintable(where));
            if (s.count > 1) QVERIFY2(s.minPitch >= lineHeight, qPrintable(where));
            const int visible = int(std::floor(r.upper)) - int(std::ceil(r.lower)) + 1;
            if (visible * lineHeight * 1.15 <= s.axisPixels) { // all fit: all labelled
                QCOMPARE(s.count, visible);
            } else {
                QVERIFY2(s.count * 3 * lineHeight * 1.15 >= s.axisPixels * 0.5, qPrintable(where)); // not over-thinned
            }
            const QVector<double> ticks = axis->tickVector();
            QCOMPARE(axis->tickVectorLabels().first(), QStringLiteral("␣tok%1").arg(ticks.first()));
        }
    }
    // The whole prompt labels every k-th token with k from 1, 2, 5, 10, …: 1024 tokens in ~700 px → k = 50.
    x->setRange(-0.5, n - 0.5);
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const QVector<double> ticks = x->tickVector();
    const int k = int(ticks[1] - ticks[0]);
    QVERIFY2(k == niceLabelStep(n * lineHeight * 1.15 / x->axisRect()->width()), qPrintable(QString::number(k)));
    QCOMPARE(ticks.first(), 0.0);
}

void TestGuiLongPrompts::cellColoursMatchGradient() {
    // 24 positions: every cell of a rendered heatmap has the gradient's colour for its weight.
    const int n = 24;
    const Matrix p = causalPattern(n, 5);
    AttentionHeatmap view;
    view.setData({p, tokenLabels(n), QStringLiteral("colours"), true});
    const QSize size(700, 700);
    view.plot()->setViewport(QRect(QPoint(0, 0), size));
    view.fitSquareCells();
    const QImage img = view.plot()->toPixmap(size.width(), size.height()).toImage();
    QCOMPARE(img.size(), size);
    QCPColorGradient g = viridisGradient();
    for (int q = 0; q < n; ++q)
        for (int k = 0; k < n; ++k) {
            const QRgb got = img.pixel(view.cellCentre(q, k).toPoint());
            const QRgb want = k > q ? maskedCellColor().rgb() : g.color(p(q, k), QCPRange(0, 1));
            QVERIFY2(colourDistance(got, want) == 0, qPrintable(QStringLiteral("cell %1,%2").arg(q).arg(k)));
        }
}

void TestGuiLongPrompts::cachedTickLabelsDrawSamePixels() {
    // The same token axes drawn by the cached label painter (setTokenAxis) and by QCustomPlot's own.
    const QStringList tokens{QStringLiteral("<|endoftext|>"), QStringLiteral("␣The"), QStringLiteral("<a&b>"),
                             QStringLiteral("↵"), QStringLiteral("␣quickly")};
    auto render = [&](bool cached) {
        QCustomPlot plot;
        for (QCPAxis* axis : {plot.xAxis, plot.yAxis}) {
            styleHeatmapAxis(axis, QFont(QStringLiteral("DejaVu Sans")), QStringLiteral("position"));
            if (cached) {
                setTokenAxis(axis, tokens);
            } else { // what setTokenAxis sets up, minus installCachedTickLabels
                auto ticker = QSharedPointer<TokenAxisTicker>::create(axis);
                ticker->setTokens(tokens);
                axis->setTicker(ticker);
                axis->setNumberFormat(QStringLiteral("g"));
                axis->setSubTicks(false);
                axis->grid()->setVisible(false);
                axis->setTickLabelRotation(axis->orientation() == Qt::Horizontal ? -90 : 0);
            }
            axis->setRange(-0.5, 4.5);
        }
        QImage img(400, 300, QImage::Format_ARGB32_Premultiplied);
        img.fill(Qt::white);
        QCPPainter painter(&img);
        painter.setMode(QCPPainter::pmNoCaching); // draw each label directly (drawTickLabel)
        plot.toPainter(&painter, 400, 300);
        return img;
    };
    const QImage a = render(true), b = render(false);
    QCOMPARE(a.size(), b.size());
    // Same ink in the same places: every dark pixel of one has a dark pixel within 1 px in the other,
    // and the ink amounts agree within 3 %.
    auto dark = [](const QImage& img, int x, int y) {
        return x >= 0 && y >= 0 && x < img.width() && y < img.height() && qGray(img.pixel(x, y)) < 128;
    };
    long inkA = 0, inkB = 0, unmatched = 0;
    for (int yy = 0; yy < a.height(); ++yy)
        for (int xx = 0; xx < a.width(); ++xx) {
            inkA += dark(a, xx, yy);
            inkB += dark(b, xx, yy);
            if (!dark(a, xx, yy)) continue;
            bool near = false;
            for (int dy = -1; dy <= 1 && !near; ++dy)
                for (int dx = -1; dx <= 1 && !near; ++dx) near = dark(b, xx + dx, yy + dy);
            unmatched += !near;
        }
    QVERIFY2(inkA > 500, qPrintable(QString::number(inkA))); // the labels were drawn
    QVERIFY2(std::abs(inkA - inkB) <= inkB * 0.03, qPrintable(QStringLiteral("%1 vs %2").arg(inkA).arg(inkB)));
    QVERIFY2(unmatched == 0, qPrintable(QString::number(unmatched)));
}

void TestGuiLongPrompts::exponentLikeTokensStayLiteral() {
    // QCustomPlot would draw a tick label "1e5" as "1·10⁵"; a token axis keeps the token's spelling.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("t.svg"));
    const QStringList tokens{QStringLiteral("1e5"), QStringLiteral("␣x"), QStringLiteral("2e-3")};
    QString error;
    QVERIFY2(exportHeatmap({causalPattern(3, 2), tokens, QStringLiteral("exp"), true}, path, ImageFormat::Svg,
                           QSize(500, 450), 1.0, &error), qPrintable(error));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString svg = QString::fromUtf8(f.readAll());
    QVERIFY(svg.contains(QStringLiteral(">1e5<")));
    QVERIFY(svg.contains(QStringLiteral(">2e-3<")));
    QVERIFY(!svg.contains(QStringLiteral("·10")));
}

void TestGuiLongPrompts::thumbnailIsBoxAverage() {
    // 256 positions → 128² thumbnail, each pixel the mean of a 2×2 block without masked or NaN
    // cells; drawn 1:1 into a 128 px cell and compared with a direct average, pixel by pixel.
    const int n = 256, side = HeadGrid::maxThumbnailSide();
    Matrix p = causalPattern(n, 9);
    p(101, 40) = std::numeric_limits<float>::quiet_NaN();
    p(100, 41) = std::numeric_limits<float>::quiet_NaN();
    HeadGrid grid;
    grid.setPatterns(1, 1, [&](int, int) { return p; });
    for (int w = 100; w < 400; ++w) { // find a size whose cell is exactly 128 px
        grid.resize(w, w);
        if (grid.cellRect(0, 0).width() == side) break;
    }
    QCOMPARE(grid.cellRect(0, 0).size(), QSize(side, side));
    const QImage shot = grid.grab().toImage();
    const QPoint origin = grid.cellRect(0, 0).topLeft();
    QCPColorGradient g = viridisGradient();
    int checked = 0;
    for (int ty = 0; ty < side; ++ty)
        for (int tx = 0; tx < side; ++tx) {
            double sum = 0;
            int count = 0;
            for (int q = 2 * ty; q < 2 * ty + 2; ++q)
                for (int k = 2 * tx; k < 2 * tx + 2; ++k)
                    if (k <= q && !std::isnan(p(q, k))) {
                        sum += p(q, k);
                        ++count;
                    }
            const QRgb want = count ? g.color(sum / count, QCPRange(0, 1)) : maskedCellColor().rgb();
            const QRgb got = shot.pixel(origin + QPoint(tx, ty));
            QVERIFY2(colourDistance(got, want) == 0, qPrintable(QStringLiteral("pixel %1,%2").arg(tx).arg(ty)));
            ++checked;
        }
    QCOMPARE(checked, side * side);
}

QTEST_MAIN(TestGuiLongPrompts)
#include "tst_gui_long_prompts.moc"
