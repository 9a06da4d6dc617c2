// Every figure kind through the shared figure actions, offscreen: Copy values puts the exact numbers on
// the clipboard (TSV parsed back and compared with the view's data), Copy image an image of the figure's
// size × 2, exports write PNG/SVG/PDF/CSV with real content; wheel zoom and drag pan change the axis
// ranges and Reset zoom restores them; empty views show their sentence and no colour scale; the light
// and dark themes change plot and table pixels and follow a desktop palette change; the colour-blind
// safe maps recolour heatmaps and the head grid; the unified token picker completes and validates.

#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/transformer/prompt.h"
#include "support/test_paths.h"
#include "views/figures/appearance.h"
#include "views/attention/attention_heatmap.h"
#include "views/attention/block_diagram.h"
#include "views/figures/chart_figure.h"
#include "views/figures/figure_actions.h"
#include "views/figures/figure_export.h"
#include "views/attention/head_grid.h"
#include "views/figures/matrix_heatmap.h"
#include "views/comparison/model_compare_panel.h"
#include "views/figures/palettes.h"
#include "views/figures/plot_theme.h"
#include "views/residual/residual_panel.h"
#include "views/figures/table_figure.h"
#include "views/common/token_picker.h"
#include "views/common/top_tokens_view.h"

#include <qcustomplot.h>

#include <QAbstractItemView>
#include <QApplication>
#include <QClipboard>
#include <QCompleter>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QRandomGenerator>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <limits>

using namespace attnscope;
using namespace attnscope::test;

namespace {

/// TSV rows split into cells.
QList<QStringList> parseTsv(const QString& tsv) {
    QList<QStringList> rows;
    for (const QString& line : tsv.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) rows << line.split(QLatin1Char('\t'));
    return rows;
}

/// A minimal RFC 4180 reader (quoted fields with doubled quotes, no line breaks inside fields).
QList<QStringList> parseCsv(const QString& text) {
    QList<QStringList> rows;
    for (const QString& line : text.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        QStringList fields;
        QString f;
        bool quoted = false;
        for (int i = 0; i < line.size(); ++i) {
            const QChar c = line[i];
            if (quoted) {
                if (c == QLatin1Char('"') && i + 1 < line.size() && line[i + 1] == QLatin1Char('"')) f += c, ++i;
                else if (c == QLatin1Char('"')) quoted = false;
                else f += c;
            } else if (c == QLatin1Char('"')) quoted = true;
            else if (c == QLatin1Char(',')) fields << f, f.clear();
            else f += c;
        }
        fields << f;
        rows << fields;
    }
    return rows;
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

int distinctColours(const QImage& img, int step = 2) {
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += step)
        for (int x = 0; x < img.width(); x += step) colours.insert(img.pixel(x, y));
    return int(colours.size());
}

int colourDistance(QRgb a, QRgb b) {
    return std::max({std::abs(qRed(a) - qRed(b)), std::abs(qGreen(a) - qGreen(b)), std::abs(qBlue(a) - qBlue(b))});
}

/// A signed matrix of awkward floats (no short decimal form), with one NaN.
MatrixFigure randomFigure() {
    QRandomGenerator rng(42);
    MatrixFigure f;
    f.values.resize(3, 5);
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 5; ++c) f.values(r, c) = float(rng.generateDouble() * 2 - 1) / 3.0f;
    f.values(1, 2) = std::numeric_limits<float>::quiet_NaN();
    f.rowLabels = QStringList{"␣The", "cat", "<a\tb>"};
    f.title = QStringLiteral("random");
    f.rowTitle = QStringLiteral("position");
    f.colTitle = QStringLiteral("d_head");
    f.valueTitle = QStringLiteral("value");
    return f;
}

AttentionHeatmapData attentionData() {
    Matrix p = Matrix::Zero(6, 6);
    QRandomGenerator rng(7);
    for (int q = 0; q < 6; ++q) {
        for (int k = 0; k <= q; ++k) p(q, k) = float(rng.generateDouble());
        p.row(q) /= p.row(q).sum();
    }
    return {p, {"<|endoftext|>", "␣The", "␣cat", "␣sat", "↵", "␣on"}, QStringLiteral("demo — layer 0, head 1"), true};
}

/// Sends a wheel turn at `pos` (plot coordinates).
void wheel(QWidget* w, QPoint pos, int delta) {
    QWheelEvent e(QPointF(pos), QPointF(w->mapToGlobal(pos)), QPoint(), QPoint(0, delta), Qt::NoButton, Qt::NoModifier,
                  Qt::NoScrollPhase, false);
    QApplication::sendEvent(w, &e);
}

/// Drags with the left button from `from` to `to`.
void drag(QWidget* w, QPoint from, QPoint to) {
    QMouseEvent press(QEvent::MouseButtonPress, QPointF(from), QPointF(w->mapToGlobal(from)), Qt::LeftButton,
                      Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(w, &press);
    QMouseEvent move(QEvent::MouseMove, QPointF(to), QPointF(w->mapToGlobal(to)), Qt::NoButton, Qt::LeftButton,
                     Qt::NoModifier);
    QApplication::sendEvent(w, &move);
    QMouseEvent release(QEvent::MouseButtonRelease, QPointF(to), QPointF(w->mapToGlobal(to)), Qt::LeftButton,
                        Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(w, &release);
}

/// A bar chart with a ChartFigure, like the cumulative logit chart.
struct Chart {
    QCustomPlot plot;
    ChartFigure* figure;
    QVector<double> x{1, 2, 3, 4}, y{0.1f, -2.5, 3.25, 1.0 / 3.0};
    Chart() : figure(new ChartFigure(&plot, QStringLiteral("chart"), QStringLiteral("No chart yet."))) {
        plot.resize(600, 400);
        auto* bars = new QCPBars(plot.xAxis, plot.yAxis);
        bars->setData(x, y, true);
        bars->setBrush(QColor(70, 130, 180));
        figure->setValues([this] {
            ValueTable t;
            t.colLabels = QStringList{"x", "y"};
            for (int i = 0; i < x.size(); ++i) t.cells.push_back({exactNumber(x[i]), exactNumber(y[i])});
            return t;
        });
        figure->setHasData(true);
        figure->setHomeRanges(QCPRange(0, 5), QCPRange(-3, 4));
    }
};

} // namespace

class TestGuiFigures : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void copyValuesIsExact();
    void copyImageHasFigureSize();
    void exportsEveryFigureKind();
    void zoomPanAndReset();
    void emptyStatesShowTextAndNoScale();
    void themeChangesPlotAndTablePixels();
    void followsDesktopPaletteChange();
    void colourBlindSafeMaps();
    void tokenPickerCompletesAndValidates();
    void cleanupTestCase();

private:
    std::shared_ptr<const Model> tiny_;
};

void TestGuiFigures::initTestCase() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    QStandardPaths::setTestModeEnabled(true); // QSettings under ~/.qttest: the user's settings stay untouched
    QCoreApplication::setOrganizationName(QStringLiteral("AttnScopeFiguresTest"));
    QSettings().clear();
    tiny_ = loadModel(testdata("tiny-gpt2"));
}

void TestGuiFigures::cleanupTestCase() { QSettings().clear(); }

void TestGuiFigures::copyValuesIsExact() {
    // matrix heatmap: header = corner + column indices, rows = label + the floats themselves
    MatrixHeatmap m;
    const MatrixFigure f = randomFigure();
    m.setFigure(f);
    QVERIFY(m.figureActions()->copyValues());
    const QMimeData* mime = QApplication::clipboard()->mimeData();
    QVERIFY(mime->hasText());
    QCOMPARE(QString::fromUtf8(mime->data("text/tab-separated-values")), mime->text());
    QList<QStringList> rows = parseTsv(mime->text());
    QCOMPARE(rows.size(), 4);
    QCOMPARE(rows[0], (QStringList{"position \\ d_head", "0", "1", "2", "3", "4"}));
    QCOMPARE(rows[3][0], QStringLiteral("<a b>")); // a tab inside a label cannot split the row
    for (int r = 0; r < 3; ++r) {
        QCOMPARE(rows[r + 1].size(), 6);
        for (int c = 0; c < 5; ++c) {
            const QString cell = rows[r + 1][c + 1];
            if (std::isnan(f.values(r, c))) {
                QCOMPARE(cell, QString());
                continue;
            }
            bool ok = false;
            QCOMPARE(cell.toFloat(&ok), f.values(r, c)); // bit-exact float
            QVERIFY(ok);
        }
    }

    // attention heatmap: token labels both ways, masked (future) cells empty
    AttentionHeatmap a;
    const AttentionHeatmapData d = attentionData();
    a.setData(d);
    QVERIFY(a.figureActions()->copyValues());
    rows = parseTsv(QApplication::clipboard()->text());
    QCOMPARE(rows.size(), 7);
    QCOMPARE(rows[0].mid(1), d.tokens);
    for (int q = 0; q < 6; ++q) {
        QCOMPARE(rows[q + 1][0], d.tokens[q]);
        for (int k = 0; k < 6; ++k) {
            if (k > q) QCOMPARE(rows[q + 1][k + 1], QString());
            else QCOMPARE(rows[q + 1][k + 1].toFloat(), d.pattern(q, k));
        }
    }

    // table: the logit and probability as stored, not as displayed ("11.90", "42.0 %")
    TopTokensView top;
    const double logit = 11.897654321987, prob = 0.4213579;
    top.setTokens({{262, QStringLiteral("␣the"), logit, prob}, {257, QStringLiteral("␣a"), -1.0 / 3.0, 0.23}});
    QVERIFY(tableFigureOf(&top)->figureActions()->copyValues());
    rows = parseTsv(QApplication::clipboard()->text());
    QCOMPARE(rows.size(), 3);
    QCOMPARE(rows[0], (QStringList{"#", "token", "logit", "probability"}));
    QCOMPARE(rows[1][1], QStringLiteral("␣the"));
    QCOMPARE(rows[1][2].toDouble(), logit);
    QCOMPARE(rows[1][3].toDouble(), prob);
    QCOMPARE(rows[2][2].toDouble(), -1.0 / 3.0);

    // chart values and the head grid's score overlay
    Chart chart;
    QVERIFY(chart.figure->figureActions()->copyValues());
    rows = parseTsv(QApplication::clipboard()->text());
    QCOMPARE(rows.size(), 5);
    for (int i = 0; i < 4; ++i) QCOMPARE(rows[i + 1][1].toDouble(), chart.y[i]);
    HeadGrid grid;
    grid.setPatterns(2, 3, [&](int, int) { return d.pattern; });
    QVERIFY(!grid.figureActions()->copyValues()); // no overlay: no numbers to copy
    Matrix scores(2, 3);
    scores << 0.1f, 0.25f, 1.0f / 3.0f, 0.5f, 0.75f, 0.9999f;
    grid.setHeadScores(scores, QStringLiteral("induction"));
    QVERIFY(grid.figureActions()->copyValues());
    rows = parseTsv(QApplication::clipboard()->text());
    QCOMPARE(rows[0], (QStringList{"induction score", "H0", "H1", "H2"}));
    QCOMPARE(rows[2][0], QStringLiteral("L1"));
    QCOMPARE(rows[1][3].toFloat(), 1.0f / 3.0f);
    QCOMPARE(rows[2][3].toFloat(), 0.9999f);

    // the residual panel's component table copies the DLA numbers of the attribution exactly
    const std::vector<int> ids = tokenizePrompt(tiny_->tokenizer(), QStringLiteral("The cat sat on the mat"), true);
    auto cache = std::make_shared<const ActivationCache>(runForward(*tiny_, ids));
    ResidualPanel panel;
    panel.setContext(tiny_, cache, tokenLabels(tiny_->tokenizer(), cache->tokens));
    QVERIFY(tableFigureOf(panel.componentsTable())->figureActions()->copyValues());
    rows = parseTsv(QApplication::clipboard()->text());
    const auto& dla = *panel.attribution();
    QCOMPARE(rows.size(), 1 + int(dla.components.size()));
    for (size_t i = 0; i < dla.components.size(); ++i) {
        QCOMPARE(rows[int(i) + 1][ResidualPanel::NameColumn], dla.components[i].name);
        QCOMPARE(rows[int(i) + 1][ResidualPanel::DlaColumn].toDouble(), dla.components[i].value);
        QCOMPARE(rows[int(i) + 1][ResidualPanel::CumulativeColumn].toDouble(), dla.cumulative[i]);
    }
    QVERIFY(panel.cumulativeFigure()->figureActions()->copyValues());
    rows = parseTsv(QApplication::clipboard()->text());
    QCOMPARE(rows[1][2].toDouble(), dla.biasTerm);
    QCOMPARE(rows.last()[1].toDouble(), dla.components.back().value);
}

void TestGuiFigures::copyImageHasFigureSize() {
    MatrixHeatmap m;
    m.resize(500, 360);
    m.setFigure(randomFigure());
    QVERIFY(m.figureActions()->copyImage());
    const QImage img = QApplication::clipboard()->image();
    QCOMPARE(img.size(), QSize(1000, 720)); // the on-screen size × max(2, device pixel ratio)
    QCOMPARE(img.devicePixelRatio(), 2.0);
    QVERIFY(distinctColours(img) > 20);
    QCOMPARE(img.pixel(2, 2), qRgb(255, 255, 255)); // light, like print

    TopTokensView top;
    top.setTokens({{262, QStringLiteral("␣the"), 12.5, 0.42}});
    QVERIFY(tableFigureOf(&top)->figureActions()->copyImage());
    QCOMPARE(QApplication::clipboard()->image().size(), tableFigureOf(&top)->figureSize() * 2);

    HeadGrid grid;
    grid.resize(300, 200);
    grid.setPatterns(2, 2, [](int, int) { return attentionData().pattern; });
    QVERIFY(grid.figureActions()->copyImage());
    QCOMPARE(QApplication::clipboard()->image().size(), QSize(600, 400));

    MatrixHeatmap empty;
    QVERIFY(!empty.figureActions()->copyImage()); // nothing on the clipboard for an empty view
    QVERIFY(!empty.figureActions()->copyValues());
}

void TestGuiFigures::exportsEveryFigureKind() {
    QTemporaryDir dir;
    AttentionHeatmap attention;
    attention.resize(520, 480);
    attention.setData(attentionData());
    MatrixHeatmap matrix;
    matrix.resize(520, 400);
    matrix.setFigure(randomFigure());
    TopTokensView table;
    table.setTokens({{262, QStringLiteral("␣the"), 12.5, 0.42}, {11, QStringLiteral("a,\"b\""), -3.0, 0.01}});
    Chart chart;
    HeadGrid grid;
    grid.resize(320, 240);
    grid.setPatterns(2, 2, [](int, int) { return attentionData().pattern; });
    grid.setHeadScores(Matrix::Constant(2, 2, 0.5f), QStringLiteral("previous-token"));
    BlockDiagram diagram;
    diagram.resize(900, 50);
    diagram.setCurrentBox(3);
    attention.show();
    QVERIFY(QTest::qWaitForWindowExposed(&attention));
    const std::pair<QString, Figure*> figures[] = {{"attention", &attention}, {"matrix", &matrix},
                                                   {"table", tableFigureOf(&table)}, {"chart", chart.figure},
                                                   {"grid", &grid}, {"diagram", &diagram}};
    const std::pair<QString, FigureActions*> actions[] = {
        {"attention", attention.figureActions()}, {"matrix", matrix.figureActions()},
        {"table", tableFigureOf(&table)->figureActions()}, {"chart", chart.figure->figureActions()},
        {"grid", grid.figureActions()}, {"diagram", diagram.findChild<FigureActions*>()}};
    for (int i = 0; i < 6; ++i) {
        const QString name = figures[i].first;
        Figure* figure = figures[i].second;
        FigureActions* act = actions[i].second;
        QVERIFY2(act, qPrintable(name));
        const QString base = dir.filePath(name);
        QCOMPARE(act->exportTo(base + ".png"), QString());
        const QImage png(base + ".png");
        QCOMPARE(png.size(), figure->figureSize() * 2);
        QVERIFY2(distinctColours(png) > 8, qPrintable(name));
        QCOMPARE(act->exportTo(base + ".svg"), QString());
        const QByteArray svg = readAll(base + ".svg");
        QVERIFY2(svg.contains("<svg") && svg.size() > 1000, qPrintable(name));
        QCOMPARE(act->exportTo(base + ".pdf"), QString());
        const QByteArray pdf = readAll(base + ".pdf");
        QVERIFY2(pdf.startsWith("%PDF-") && pdf.size() > 1000, qPrintable(name));
        QCOMPARE(act->exportTo(base + ".csv"), QString());
        const QList<QStringList> csv = parseCsv(QString::fromUtf8(readAll(base + ".csv")));
        const ValueTable values = figure->figureValues();
        QCOMPARE(csv.size(), 1 + int(values.cells.size()));
        for (int r = 0; r < int(values.cells.size()); ++r)
            QCOMPARE(csv[r + 1].mid(values.rowLabels.isEmpty() ? 0 : 1), values.cells[size_t(r)]);
        QVERIFY(act->exportTo(base + ".bmp").contains("unknown format"));
    }
    // the CSV holds the exact numbers, quoted where needed
    const QList<QStringList> csv = parseCsv(QString::fromUtf8(readAll(dir.filePath("table.csv"))));
    QCOMPARE(csv[2][1], QStringLiteral("a,\"b\""));
    QCOMPARE(csv[2][2].toDouble(), -3.0);
    const QList<QStringList> m = parseCsv(QString::fromUtf8(readAll(dir.filePath("matrix.csv"))));
    QCOMPARE(m[1][1].toFloat(), randomFigure().values(0, 0));
    // the PNG of a heatmap is drawn in the sequential map: its top-left cell is the pattern's weight 1
    QVERIFY(colourDistance(QImage(dir.filePath("attention.png")).pixel((attention.cellCentre(0, 0) * 2).toPoint()),
                           qRgb(0xfd, 0xe7, 0x25)) <= 3);
}

void TestGuiFigures::zoomPanAndReset() {
    MatrixHeatmap m;
    m.resize(600, 500);
    MatrixFigure f;
    f.values = Matrix::Random(10, 10);
    m.setFigure(f);
    m.show();
    QVERIFY(QTest::qWaitForWindowExposed(&m));
    QCPAxis* x = m.plot()->axisRect()->axis(QCPAxis::atBottom);
    QCPAxis* y = m.plot()->axisRect()->axis(QCPAxis::atLeft);
    const QCPRange x0 = x->range(), y0 = y->range();
    QCOMPARE(x0.lower, -0.5);
    QCOMPARE(x0.upper, 9.5);
    const QPoint centre = m.cellCentre(5, 5).toPoint();
    wheel(m.plot(), centre, 240); // zoom in
    QVERIFY2(x->range().size() < 0.9 * x0.size(), qPrintable(QString::number(x->range().size())));
    QVERIFY(y->range().size() < 0.9 * y0.size());
    const QCPRange zoomed = x->range();
    drag(m.plot(), centre, centre + QPoint(80, 0)); // pan right: the range moves left
    QVERIFY2(x->range().lower < zoomed.lower - 0.1, qPrintable(QString::number(x->range().lower)));
    QVERIFY(std::abs(x->range().size() - zoomed.size()) < 1e-9);
    QVERIFY(m.isZoomable());
    m.resetZoom();
    QCOMPARE(x->range().lower, x0.lower);
    QCOMPARE(x->range().upper, x0.upper);
    QCOMPARE(y->range().lower, y0.lower);
    QCOMPARE(y->range().upper, y0.upper);
    // the menu offers Reset Zoom, and it works
    std::unique_ptr<QMenu> menu(m.figureActions()->createMenu());
    QAction* reset = nullptr;
    for (QAction* a : menu->actions())
        if (a->text().remove('&') == QStringLiteral("Reset Zoom")) reset = a;
    QVERIFY(reset && reset->isEnabled());
    wheel(m.plot(), centre, -240); // zoom out
    QVERIFY(x->range().size() > 1.1 * x0.size());
    reset->trigger();
    QCOMPARE(x->range().upper, x0.upper);

    // the chart zooms and pans too, and resets to its home ranges
    Chart chart;
    chart.plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart.plot));
    chart.plot.replot();
    const QPoint c = chart.plot.axisRect()->rect().center();
    wheel(&chart.plot, c, 240);
    QVERIFY(chart.plot.xAxis->range().size() < 4.5);
    const QCPRange beforeDrag = chart.plot.yAxis->range();
    drag(&chart.plot, c, c + QPoint(0, 60)); // drag down: the visible values move up
    QVERIFY2(chart.plot.yAxis->range().lower > beforeDrag.lower + 0.1, qPrintable(QString::number(chart.plot.yAxis->range().lower)));
    chart.figure->resetZoom();
    QCOMPARE(chart.plot.xAxis->range().lower, 0.0);
    QCOMPARE(chart.plot.xAxis->range().upper, 5.0);
    QCOMPARE(chart.plot.yAxis->range().lower, -3.0);
    QCOMPARE(chart.plot.yAxis->range().upper, 4.0);
}

void TestGuiFigures::emptyStatesShowTextAndNoScale() {
    ModelComparePanel compare;
    compare.resize(1200, 800);
    compare.setContext(tiny_, nullptr, {});
    compare.show();
    QVERIFY(QTest::qWaitForWindowExposed(&compare));
    for (MatrixHeatmap* h : {compare.embeddingHeatmap(), compare.featureHeatmap()}) {
        QVERIFY(h->isShowingEmptyState());
        QVERIFY2(h->emptyText().startsWith(QStringLiteral("Open a second model to compare")), qPrintable(h->emptyText()));
        QVERIFY(!h->hasFigureData());
        // no colour scale anywhere: the grabbed widget holds only background and text greys
        const QImage shot = h->grab().toImage();
        int coloured = 0;
        for (int yy = 0; yy < shot.height(); yy += 2)
            for (int xx = 0; xx < shot.width(); xx += 2) {
                const QColor c = shot.pixelColor(xx, yy);
                coloured += std::max({std::abs(c.red() - c.green()), std::abs(c.green() - c.blue()),
                                      std::abs(c.red() - c.blue())}) > 24;
            }
        QCOMPARE(coloured, 0);
        QVERIFY(!h->colorScale()->visible());
    }
    QVERIFY(compare.differenceSummary()->text().contains(QStringLiteral("Open a second checkpoint")));
    QVERIFY(tableFigureOf(compare.differenceTop())->isShowingEmptyState());
    // with the second model the heatmaps fill and the sentence goes
    compare.setSecondModel(tiny_);
    compare.waitForIdle();
    QVERIFY(!compare.embeddingHeatmap()->isShowingEmptyState());
    QVERIFY(compare.embeddingHeatmap()->hasFigureData());
    QVERIFY(compare.embeddingHeatmap()->colorScale()->visible());
    QVERIFY(compare.differenceIsIdentical()); // the same checkpoint twice: the tables say so instead of listing nothing
    QVERIFY(tableFigureOf(compare.differenceTop())->isShowingEmptyState());
    QVERIFY(tableFigureOf(compare.differenceTop())->emptyText().startsWith(QStringLiteral("Identical")));

    // a heatmap and a table without data, and the head grid
    MatrixHeatmap m;
    QVERIFY(m.isShowingEmptyState());
    QVERIFY(!m.colorScale()->visible());
    m.setFigure(randomFigure());
    QVERIFY(!m.isShowingEmptyState());
    QVERIFY(m.colorScale()->visible());
    m.setFigure({});
    QVERIFY(m.isShowingEmptyState());
    QVERIFY(!m.colorScale()->visible());
    AttentionHeatmap a;
    QVERIFY(a.isShowingEmptyState());
    QVERIFY(a.emptyText().contains(QStringLiteral("Run a prompt")));
    TopTokensView top;
    QVERIFY(tableFigureOf(&top)->isShowingEmptyState());
    top.setTokens({{1, QStringLiteral("x"), 1, 1}});
    QVERIFY(!tableFigureOf(&top)->isShowingEmptyState());
    top.setTokens({});
    QVERIFY(tableFigureOf(&top)->isShowingEmptyState());
    ResidualPanel panel;
    panel.setContext(tiny_, nullptr, {});
    QVERIFY(panel.heatmap()->isShowingEmptyState());
    QVERIFY(panel.cumulativeFigure()->isShowingEmptyState());
    QVERIFY(!panel.cumulativeFigure()->hasFigureData());
}

void TestGuiFigures::themeChangesPlotAndTablePixels() {
    Appearance& app = Appearance::instance();
    app.install();
    app.setThemeMode(Appearance::ThemeMode::Light);
    QVERIFY(!app.isDark());
    MatrixHeatmap m;
    m.resize(500, 400);
    m.setFigure(randomFigure());
    m.show();
    QVERIFY(QTest::qWaitForWindowExposed(&m));
    // a table drawn with the application palette (QTest runs no event loop: Qt only hands a new application
    // palette to widgets created after it, so each theme gets its own table)
    auto tablePixel = [] {
        QTableWidget table(3, 2);
        installTableFigure(&table, QStringLiteral("t"));
        table.setItem(0, 0, new QTableWidgetItem(QStringLiteral("x")));
        table.resize(300, 200);
        const QImage t = table.grab().toImage();
        return t.pixel(t.width() / 2, t.height() - 12);
    };
    auto sample = [&] {
        m.plot()->replot();
        const QImage plot = m.grab().toImage();
        return std::tuple{plot.pixel(3, 3), plot, tablePixel()};
    };
    const auto [lightBg, lightPlot, lightTable] = sample();
    QCOMPARE(QColor(lightBg).lightness(), 255);
    QVERIFY(QColor(lightTable).lightness() > 200);
    QSignalSpy changed(&app, &Appearance::changed);
    app.setThemeMode(Appearance::ThemeMode::Dark);
    QCOMPARE(changed.count(), 1);
    QVERIFY(app.isDark());
    QCOMPARE(QSettings().value("appearance/theme").toString(), QStringLiteral("dark"));
    const auto [darkBg, darkPlot, darkTable] = sample();
    QVERIFY2(QColor(darkBg).lightness() < 60, qPrintable(QColor(darkBg).name()));
    QVERIFY2(QColor(darkTable).lightness() < 60, qPrintable(QColor(darkTable).name()));
    // the tick labels left of the cells are light text on the dark plot
    auto brightTextPixels = [&](const QImage& img) {
        int n = 0;
        for (int yy = 0; yy < img.height(); ++yy)
            for (int xx = 0; xx < m.plot()->axisRect()->left() - 2; ++xx) n += QColor(img.pixel(xx, yy)).lightness() > 180;
        return n;
    };
    QVERIFY(brightTextPixels(darkPlot) > 20);
    QCOMPARE(m.plot()->axisRect()->axis(QCPAxis::atBottom)->basePen().color(), plotColors(true).foreground);
    QCOMPARE(maskedCellColor(), maskedCellColor(true));
    // exports stay light
    QTemporaryDir dir;
    QCOMPARE(m.figureActions()->exportTo(dir.filePath("dark.png")), QString());
    QCOMPARE(QImage(dir.filePath("dark.png")).pixel(3, 3), qRgb(255, 255, 255));
    QVERIFY(colourDistance(QImage(dir.filePath("dark.png")).pixel((m.cellCentre(1, 2) * 2).toPoint()),
                           maskedCellColor(false).rgb()) <= 3);
    app.setThemeMode(Appearance::ThemeMode::Light);
    QCOMPARE(changed.count(), 2);
    const auto [againBg, againPlot, againTable] = sample();
    QCOMPARE(againBg, lightBg);
    Q_UNUSED(againPlot);
    Q_UNUSED(againTable);
    Q_UNUSED(lightPlot);
}

void TestGuiFigures::followsDesktopPaletteChange() {
    Appearance& app = Appearance::instance();
    app.install();
    app.setThemeMode(Appearance::ThemeMode::FollowDesktop);
    QVERIFY(!app.isDark()); // the offscreen platform's palette is light
    QSignalSpy changed(&app, &Appearance::changed);
    QApplication::setPalette(Appearance::darkPalette()); // what a desktop switching to dark does to Qt 6.4
    QVERIFY(app.isDark());
    QCOMPARE(changed.count(), 1);
    QApplication::setPalette(Appearance::lightPalette());
    QVERIFY(!app.isDark());
    QCOMPARE(changed.count(), 2);
    QVERIFY(Appearance::desktopIsDark(Appearance::darkPalette()));
    QVERIFY(!Appearance::desktopIsDark(Appearance::lightPalette()));
    app.setThemeMode(Appearance::ThemeMode::Light);
}

void TestGuiFigures::colourBlindSafeMaps() {
    Appearance& app = Appearance::instance();
    app.setColorMaps(Appearance::ColorMaps::Standard);
    MatrixFigure f;
    f.values.resize(1, 3);
    f.values << 0.0f, 1.0f, -1.0f;
    f.scale = MatrixFigure::Scale::Signed;
    MatrixHeatmap m;
    m.resize(500, 300);
    m.setFigure(f);
    m.show();
    QVERIFY(QTest::qWaitForWindowExposed(&m));
    QTemporaryDir dir;
    auto cellColours = [&] {
        const QString path = dir.filePath(QStringLiteral("m.png"));
        if (!m.figureActions()->exportTo(path, 1.0).isEmpty()) return QList<QRgb>();
        const QImage img(path);
        return QList<QRgb>{img.pixel(m.cellCentre(0, 1).toPoint()), img.pixel(m.cellCentre(0, 2).toPoint())};
    };
    QList<QRgb> standard = cellColours();
    QVERIFY(colourDistance(standard[0], qRgb(0xb2, 0x18, 0x2b)) <= 3); // red for +max
    QVERIFY(colourDistance(standard[1], qRgb(0x21, 0x66, 0xac)) <= 3); // blue for −max
    QSignalSpy changed(&app, &Appearance::changed);
    app.setColorMaps(Appearance::ColorMaps::ColorBlindSafe);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(divergingMapName(), QStringLiteral("blue–orange"));
    QList<QRgb> safe = cellColours();
    QVERIFY2(colourDistance(safe[0], qRgb(0xa6, 0x36, 0x03)) <= 3, qPrintable(QColor(safe[0]).name())); // orange
    QVERIFY(colourDistance(safe[1], qRgb(0x08, 0x51, 0x9c)) <= 3);                                     // blue
    // sequential: cividis in the attention heatmap and the head grid
    AttentionHeatmap a;
    a.resize(400, 400);
    a.setData(attentionData());
    a.show();
    QVERIFY(QTest::qWaitForWindowExposed(&a));
    QCOMPARE(a.figureActions()->exportTo(dir.filePath("a.png"), 1.0), QString());
    QVERIFY(colourDistance(QImage(dir.filePath("a.png")).pixel(a.cellCentre(0, 0).toPoint()), qRgb(0xfe, 0xe8, 0x38)) <= 3);
    HeadGrid grid;
    grid.resize(200, 200);
    Matrix zeros = Matrix::Zero(4, 4);
    grid.setPatterns(1, 1, [&](int, int) { return zeros; });
    const QImage shot = grid.grab().toImage();
    QVERIFY(colourDistance(shot.pixel(grid.cellRect(0, 0).center()), qRgb(0x00, 0x22, 0x4e)) <= 3); // cividis(0)
    QCOMPARE(QSettings().value("appearance/colorMaps").toString(), QStringLiteral("colorblind"));
    app.setColorMaps(Appearance::ColorMaps::Standard);
    const QImage back = grid.grab().toImage();
    QVERIFY(colourDistance(back.pixel(grid.cellRect(0, 0).center()), qRgb(0x44, 0x01, 0x54)) <= 3); // viridis(0)
}

void TestGuiFigures::tokenPickerCompletesAndValidates() {
    TokenPicker picker;
    QVERIFY(!picker.isEnabled()); // no vocabulary yet
    const Tokenizer& tok = tiny_->tokenizer();
    picker.setTokenizer(&tok);
    QVERIFY(picker.isEnabled());
    picker.show();
    QVERIFY(QTest::qWaitForWindowExposed(&picker));
    // completion over the vocabulary: the popup shows display string and id, completes the display string
    QTest::keyClicks(picker.lineEdit(), "at");
    QCompleter* c = picker.completer();
    QVERIFY(c->completionCount() > 1);
    int withAt = 0;
    for (int id = 0; id < tok.vocabSize(); ++id) withAt += tok.displayToken(id).contains("at", Qt::CaseInsensitive);
    QCOMPARE(c->completionCount(), withAt);
    const QModelIndex first = c->completionModel()->index(0, 0);
    const int firstId = first.data(Qt::UserRole).toInt();
    QCOMPARE(first.data(Qt::EditRole).toString(), tok.displayToken(firstId));
    QCOMPARE(first.data(Qt::DisplayRole).toString(), QStringLiteral("%1    id %2").arg(tok.displayToken(firstId)).arg(firstId));
    const int at = tok.encode(QStringLiteral("at")).front();
    QCOMPARE(picker.tokenId(), std::optional<int>(at));
    QCOMPARE(picker.statusText(), QStringLiteral("id %1").arg(at));
    // Enter on a valid token chooses it
    QSignalSpy chosen(&picker, &TokenPicker::tokenChosen);
    QTest::keyClick(picker.lineEdit(), Qt::Key_Return);
    QVERIFY(chosen.count() >= 1);
    QCOMPARE(chosen.last().at(0).toInt(), at);
    // text that is not one token: the message names the pieces, Enter chooses nothing
    const std::vector<int> pieces = tok.encode(QStringLiteral(" cat"));
    QCOMPARE(pieces.size(), size_t(2));
    picker.setText(QStringLiteral(" cat"));
    QVERIFY(!picker.tokenId());
    QCOMPARE(picker.statusText(), QStringLiteral("not one token: %1 + %2")
                                      .arg(tok.displayToken(pieces[0]), tok.displayToken(pieces[1])));
    QVERIFY2(picker.problem().contains(QStringLiteral("is not a single token")), qPrintable(picker.problem()));
    chosen.clear();
    QTest::keyClick(picker.lineEdit(), Qt::Key_Return);
    QCOMPARE(chosen.count(), 0);
    // every accepted spelling resolves to the same id
    const int spaceC = tok.encode(QStringLiteral(" c")).front();
    for (const QString& text : {QStringLiteral("␣c"), QStringLiteral(" c"), QStringLiteral("Ġc"), QStringLiteral("#%1").arg(spaceC)}) {
        picker.setText(text);
        QCOMPARE(picker.tokenId(), std::optional<int>(spaceC));
    }
    picker.setText(QStringLiteral("#999999"));
    QVERIFY(!picker.tokenId());
    QVERIFY(!picker.statusText().isEmpty());
    picker.setTokenId(at);
    QCOMPARE(picker.text(), tok.displayToken(at));
    QCOMPARE(picker.tokenId(), std::optional<int>(at));
    picker.clear();
    QCOMPARE(picker.statusText(), QString());
    QVERIFY(!picker.tokenId());
    // choosing a completion emits its id
    chosen.clear();
    QTest::keyClicks(picker.lineEdit(), "at");
    emit c->activated(c->completionModel()->index(0, 0));
    QCOMPARE(chosen.count(), 1);
    QCOMPARE(chosen.first().at(0).toInt(), firstId);
    QCOMPARE(picker.tokenId(), std::optional<int>(firstId));
}

QTEST_MAIN(TestGuiFigures)
#include "tst_gui_figures.moc"
