// Views rendered offscreen: heatmap export (PNG size and pixels, SVG text escaping, PDF), export of
// all heads, tooltips, token-axis thinning, head-grid clicks and thumbnails, top-tokens table.

#include "model/core/errors.h"
#include "views/attention/attention_heatmap.h"
#include "views/figures/figure_export.h"
#include "views/attention/head_grid.h"
#include "views/figures/palettes.h"
#include "views/figures/token_axis.h"
#include "views/common/top_tokens_view.h"

#include <qcustomplot.h>

#include <QDir>
#include <QFile>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>

using namespace attnscope;

namespace {

constexpr int S = 12;

/// Causal previous-token pattern plus noise, rows normalised; cell (6, 3) is exactly 0.
Matrix previousTokenPattern(int n, quint32 seed) {
    QRandomGenerator rng(seed);
    Matrix p = Matrix::Zero(n, n);
    for (int q = 0; q < n; ++q) {
        for (int k = 0; k <= q; ++k) p(q, k) = float(0.25 * rng.generateDouble());
        p(q, std::max(0, q - 1)) += 2.0f;
        if (q == 6) p(6, 3) = 0.0f;
        p.row(q) /= p.row(q).sum();
    }
    return p;
}

QStringList tokens() {
    return {QStringLiteral("<|endoftext|>"), QStringLiteral("␣The"), QStringLiteral("␣cat"), QStringLiteral("␣sat"),
            QStringLiteral("↵"), QStringLiteral("<a&b>"), QStringLiteral("␣on"), QStringLiteral("␣the"),
            QStringLiteral("␣mat"), QStringLiteral("."), QStringLiteral("↵"), QStringLiteral("␣It")};
}

AttentionHeatmapData demoData() {
    return {previousTokenPattern(S, 7), tokens(), QStringLiteral("demo — layer 1, head 2"), true};
}

/// Max channel difference between two colours.
int colourDistance(QRgb a, QRgb b) {
    return std::max({std::abs(qRed(a) - qRed(b)), std::abs(qGreen(a) - qGreen(b)), std::abs(qBlue(a) - qBlue(b))});
}

/// Exports demoData() at 800×700 to a temporary file and returns its bytes (empty on failure).
QByteArray exportDemo(ImageFormat format) {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("heatmap.") + imageFormatSuffix(format));
    QString error;
    if (!exportHeatmap(demoData(), path, format, QSize(800, 700), 1.0, &error)) {
        qWarning("%s", qPrintable(error));
        return {};
    }
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class TestGuiViews : public QObject {
    Q_OBJECT
private slots:
    void viridisEndpoints();
    void niceLabelSteps();
    void pngHasRequestedSizeAndCells_data();
    void pngHasRequestedSizeAndCells();
    void svgIsXmlWithEscapedTokens();
    void pdfIsWritten();
    void exportErrorsNameTheFile();
    void exportAllHeadsWritesExpectedNames();
    void exportAllHeadsCancels();
    void tooltipDescribesCell();
    void tokenAxisThinsLongSequences();
    void headGridClickEmitsHead();
    void headGridThumbnailColours();
    void topTokensTable();
};

void TestGuiViews::viridisEndpoints() {
    QCPColorGradient g = viridisGradient();
    QVERIFY(colourDistance(g.color(0.0, QCPRange(0, 1)), qRgb(0x44, 0x01, 0x54)) <= 1);
    QVERIFY(colourDistance(g.color(1.0, QCPRange(0, 1)), qRgb(0xfd, 0xe7, 0x25)) <= 1);
    QVERIFY(colourDistance(g.color(0.5, QCPRange(0, 1)), qRgb(0x21, 0x90, 0x8c)) <= 2);
    QCPColorGradient d = divergingGradient();
    const QCPRange r = symmetricRange(-3.0);
    QCOMPARE(r.lower, -3.0);
    QVERIFY(colourDistance(d.color(0.0, r), qRgb(0xf7, 0xf7, 0xf7)) <= 2); // white at zero
    QVERIFY(qBlue(d.color(-3.0, r)) > qRed(d.color(-3.0, r)));              // blue below zero
    QVERIFY(qRed(d.color(3.0, r)) > qBlue(d.color(3.0, r)));                // red above zero
}

void TestGuiViews::niceLabelSteps() {
    QCOMPARE(niceLabelStep(0.3), 1);
    QCOMPARE(niceLabelStep(1.0), 1);
    QCOMPARE(niceLabelStep(1.01), 2);
    QCOMPARE(niceLabelStep(2.5), 5);
    QCOMPARE(niceLabelStep(7.0), 10);
    QCOMPARE(niceLabelStep(11.0), 20);
    QCOMPARE(niceLabelStep(120.0), 200);
}

void TestGuiViews::pngHasRequestedSizeAndCells_data() {
    QTest::addColumn<double>("scale");
    QTest::newRow("scale 1") << 1.0;
    QTest::newRow("scale 2") << 2.0;
}

void TestGuiViews::pngHasRequestedSizeAndCells() {
    QFETCH(double, scale);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("heatmap.png"));
    const QSize size(800, 700);

    AttentionHeatmap view;
    view.setData(demoData());
    QString error;
    QVERIFY2(exportHeatmap(view, path, ImageFormat::Png, size, scale, &error), qPrintable(error));
    // Same layout as the export used, to find the cells in the image.
    view.plot()->setViewport(QRect(QPoint(0, 0), size));
    view.fitSquareCells();

    QImage img(path);
    QCOMPARE(img.size(), size * scale);
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 2)
        for (int x = 0; x < img.width(); x += 2) colours.insert(img.pixel(x, y));
    QVERIFY2(colours.size() > 50, qPrintable(QString::number(colours.size())));

    // Square cells: the same pitch across and down.
    const QPointF c00 = view.cellCentre(0, 0), c01 = view.cellCentre(0, 1), c10 = view.cellCentre(1, 0);
    QVERIFY(std::abs((c01.x() - c00.x()) - (c10.y() - c00.y())) < 0.5);
    QVERIFY(c01.x() - c00.x() > 30); // 12 cells in 800×700 leave room for labels and still fill most of it
    QVERIFY(c10.y() > c00.y());      // query 0 is the top row

    auto pixelAt = [&](int q, int k) { return img.pixel((view.cellCentre(q, k) * scale).toPoint()); };
    const QRgb masked = pixelAt(2, 9), zero = pixelAt(6, 3);
    QVERIFY(colourDistance(masked, maskedCellColor().rgb()) <= 2);
    QVERIFY(colourDistance(zero, qRgb(0x44, 0x01, 0x54)) <= 3); // viridis(0), dark purple
    QVERIFY(colourDistance(masked, zero) > 100);
    QVERIFY(colourDistance(pixelAt(0, 0), qRgb(0xfd, 0xe7, 0x25)) <= 3); // weight 1 → yellow
}

void TestGuiViews::svgIsXmlWithEscapedTokens() {
    const QByteArray svg = exportDemo(ImageFormat::Svg);
    QVERIFY(!svg.isEmpty());
    QXmlStreamReader xml(svg);
    QStringList texts;
    bool inText = false;
    while (!xml.atEnd()) {
        xml.readNext();
        if (xml.isStartElement()) inText = xml.name() == QLatin1String("text") || xml.name() == QLatin1String("title");
        if (xml.isCharacters() && inText) texts << xml.text().toString().trimmed();
    }
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    QVERIFY(svg.contains("&lt;a&amp;b&gt;"));
    QVERIFY(texts.contains(QStringLiteral("<a&b>")));
    QVERIFY(texts.contains(QStringLiteral("demo — layer 1, head 2")));
    QVERIFY(texts.contains(QStringLiteral("␣the")));
    QVERIFY(texts.contains(QStringLiteral("key position")));
    QVERIFY(texts.contains(QStringLiteral("query position")));
    QVERIFY(svg.contains("<image")); // the cells
}

void TestGuiViews::pdfIsWritten() {
    const QByteArray pdf = exportDemo(ImageFormat::Pdf);
    QVERIFY(!pdf.isEmpty());
    QVERIFY(pdf.startsWith("%PDF"));
    QVERIFY2(pdf.size() > 1024, qPrintable(QString::number(pdf.size())));
    // 800×700 px at 96 dpi = 600×525 pt.
    const QRegularExpression mediaBox(QStringLiteral(R"(/MediaBox \[0 0 600(\.0+)? 525(\.0+)?\])"));
    QVERIFY(QString::fromLatin1(pdf).contains(mediaBox));
    QVERIFY(pdf.contains("/Image")); // the cells
}

void TestGuiViews::exportErrorsNameTheFile() {
    QTemporaryDir dir;
    const QString missing = dir.filePath(QStringLiteral("no/such/folder/x.png"));
    QString error;
    QVERIFY(!exportHeatmap(demoData(), missing, ImageFormat::Png, QSize(400, 300), 1.0, &error));
    QVERIFY2(error.startsWith(missing + QStringLiteral(": cannot write PNG")), qPrintable(error));
    QVERIFY(!exportHeatmap(demoData(), dir.filePath(QStringLiteral("x.png")), ImageFormat::Png, QSize(0, 300), 1.0, &error));
    QVERIFY2(error.contains(QStringLiteral("figure size 0×300")), qPrintable(error));
    AttentionHeatmapData bad = demoData();
    bad.tokens.removeLast();
    QVERIFY(!exportHeatmap(bad, dir.filePath(QStringLiteral("x.png")), ImageFormat::Png, QSize(400, 300), 1.0, &error));
    QVERIFY2(error.contains(QStringLiteral("11 token labels for an attention pattern over 12 positions")), qPrintable(error));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("x.png"))));
    QCOMPARE(imageFormatFromName(QStringLiteral("a/b/fig.SVG")), std::optional(ImageFormat::Svg));
    QCOMPARE(imageFormatFromName(QStringLiteral("pdf")), std::optional(ImageFormat::Pdf));
    QVERIFY(!imageFormatFromName(QStringLiteral("fig.jpg")));
}

void TestGuiViews::exportAllHeadsWritesExpectedNames() {
    QTemporaryDir tmp;
    const QString out = tmp.filePath(QStringLiteral("heads")); // created by the export
    QList<qint64> reported;
    Progress progress;
    progress.report = [&](qint64 done, qint64 total, const QString&) {
        QCOMPARE(total, 6);
        reported << done;
    };
    const QStringList written = exportAllHeads(
        2, 3,
        [](int l, int h) {
            AttentionHeatmapData d{previousTokenPattern(S, quint32(10 * l + h)), tokens(),
                                   QStringLiteral("demo — layer %1, head %2").arg(l).arg(h), true};
            return d;
        },
        out, ImageFormat::Png, QSize(300, 260), 1.0, progress);
    const QStringList expected{"L0_H0.png", "L0_H1.png", "L0_H2.png", "L1_H0.png", "L1_H1.png", "L1_H2.png"};
    QCOMPARE(QDir(out).entryList(QDir::Files, QDir::Name), expected);
    QCOMPARE(written.size(), 6);
    QCOMPARE(written.first(), QDir(out).filePath(QStringLiteral("L0_H0.png")));
    QCOMPARE(reported, (QList<qint64>{0, 1, 2, 3, 4, 5, 6}));
    QCOMPARE(QImage(written.last()).size(), QSize(300, 260));
}

void TestGuiViews::exportAllHeadsCancels() {
    QTemporaryDir tmp;
    Progress progress; // the user cancels once two files are on disk
    progress.isCancelled = [&] { return QDir(tmp.path()).entryList(QDir::Files).size() >= 2; };
    QVERIFY_THROWS_EXCEPTION(Cancelled, exportAllHeads(2, 2, [](int, int) { return demoData(); }, tmp.path(),
                                                       ImageFormat::Svg, QSize(300, 260), 1.0, progress));
    QCOMPARE(QDir(tmp.path()).entryList(QDir::Files, QDir::Name), (QStringList{"L0_H0.svg", "L0_H1.svg"}));
}

void TestGuiViews::tooltipDescribesCell() {
    AttentionHeatmap view;
    view.resize(600, 520);
    const AttentionHeatmapData data = demoData();
    view.setData(data);
    view.plot()->setViewport(QRect(0, 0, 600, 520));
    view.fitSquareCells();
    const QString expected = QStringLiteral("query 3 ␣sat → key 2 ␣cat: %1").arg(double(data.pattern(3, 2)), 0, 'f', 3);
    QCOMPARE(view.describeCell(3, 2), expected);
    QVERIFY(data.pattern(3, 2) > 0.5f); // previous token dominates
    QCOMPARE(view.tooltipAt(view.cellCentre(3, 2).toPoint()), expected);
    QCOMPARE(view.describeCell(2, 5), QStringLiteral("query 2 ␣cat → key 5 <a&b>: masked"));
    QCOMPARE(view.tooltipAt(QPoint(1, 1)), QString());
    QCOMPARE(view.describeCell(12, 0), QString());
    AttentionHeatmapData notSquare = data;
    notSquare.pattern = Matrix::Zero(3, 4);
    notSquare.tokens.clear();
    QVERIFY_THROWS_EXCEPTION(InputError, view.setData(notSquare));
}

void TestGuiViews::tokenAxisThinsLongSequences() {
    const int n = 200;
    AttentionHeatmapData data{previousTokenPattern(n, 3), {}, QStringLiteral("long"), true};
    for (int i = 0; i < n; ++i) data.tokens << QStringLiteral("t%1").arg(i);
    AttentionHeatmap view;
    view.setData(data);
    view.plot()->setViewport(QRect(0, 0, 600, 560));
    view.fitSquareCells();
    view.plot()->replot();
    QCPAxisRect* rect = view.plot()->axisRect();
    for (QCPAxis* axis : {rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft)}) {
        const QVector<double> ticks = axis->tickVector();
        QVERIFY(ticks.size() >= 5);
        QCOMPARE(ticks.first(), 0.0); // position 0 always labelled
        const double pitchPx = std::abs(axis->coordToPixel(ticks[1]) - axis->coordToPixel(ticks[0]));
        QVERIFY2(pitchPx >= QFontMetricsF(axis->tickLabelFont()).height(), qPrintable(QString::number(pitchPx)));
        QCOMPARE(axis->tickVectorLabels().first(), QStringLiteral("t0"));
        QCOMPARE(axis->tickVectorLabels()[1], QStringLiteral("t%1").arg(ticks[1]));
    }
    // Zoomed in far enough, every position is labelled.
    rect->axis(QCPAxis::atBottom)->setRange(9.5, 19.5);
    view.plot()->replot();
    QCOMPARE(rect->axis(QCPAxis::atBottom)->tickVector().size(), 10);
}

void TestGuiViews::headGridClickEmitsHead() {
    HeadGrid grid;
    std::vector<std::vector<Matrix>> patterns(3, std::vector<Matrix>(4));
    for (int l = 0; l < 3; ++l)
        for (int h = 0; h < 4; ++h) patterns[size_t(l)][size_t(h)] = previousTokenPattern(S, quint32(l * 4 + h));
    grid.setPatterns(patterns);
    grid.resize(420, 330);
    grid.show();
    QVERIFY(QTest::qWaitForWindowExposed(&grid));
    QSignalSpy spy(&grid, &HeadGrid::headClicked);
    for (auto [l, h] : {std::pair{0, 0}, std::pair{2, 3}, std::pair{1, 2}}) {
        QTest::mouseClick(&grid, Qt::LeftButton, {}, grid.cellRect(l, h).center());
        QCOMPARE(spy.size(), 1);
        QCOMPARE(spy.takeFirst(), (QList<QVariant>{l, h}));
        QCOMPARE(grid.selectedHead(), std::optional(std::pair{l, h}));
    }
    // Between cells nothing happens.
    const QRect a = grid.cellRect(0, 0), b = grid.cellRect(0, 1);
    QTest::mouseClick(&grid, Qt::LeftButton, {}, QPoint((a.right() + b.left()) / 2, a.center().y()));
    QCOMPARE(spy.size(), 0);
    QVERIFY(!grid.headAt(QPoint(2, 2)));
    QVERIFY_THROWS_EXCEPTION(InputError, grid.setHeadScores(Matrix::Zero(2, 4), QStringLiteral("x")));
}

void TestGuiViews::headGridThumbnailColours() {
    HeadGrid grid;
    grid.setPatterns(2, 2, [](int, int) { return previousTokenPattern(S, 1); });
    grid.resize(2 * 12 * 10 + 60, 2 * 12 * 10 + 60); // ≥ 10 px per pattern cell
    const QImage shot = grid.grab().toImage();
    const QRect r = grid.cellRect(1, 1);
    const double cell = r.width() / double(S);
    auto at = [&](int q, int k) { return shot.pixel(r.left() + int((k + 0.5) * cell), r.top() + int((q + 0.5) * cell)); };
    QVERIFY(colourDistance(at(0, 0), qRgb(0xfd, 0xe7, 0x25)) <= 3); // weight 1
    QVERIFY(colourDistance(at(6, 3), qRgb(0x44, 0x01, 0x54)) <= 3); // weight 0
    QVERIFY(colourDistance(at(0, 11), maskedCellColor().rgb()) <= 2); // masked
}

void TestGuiViews::topTokensTable() {
    TopTokensView view;
    view.setTokens({{262, QStringLiteral("␣the"), 12.5, 0.42}, {257, QStringLiteral("␣a"), 11.9, 0.23}});
    QCOMPARE(view.rowCount(), 2);
    QCOMPARE(view.item(0, TopTokensView::RankColumn)->text(), QStringLiteral("1"));
    QCOMPARE(view.item(0, TopTokensView::TokenColumn)->text(), QStringLiteral("␣the"));
    QCOMPARE(view.item(0, TopTokensView::TokenColumn)->data(Qt::UserRole).toInt(), 262);
    QCOMPARE(view.item(1, TopTokensView::LogitColumn)->text(), QStringLiteral("11.90"));
    QCOMPARE(view.item(0, TopTokensView::ProbabilityColumn)->text(), QStringLiteral("42.0 %"));
}

QTEST_MAIN(TestGuiViews)
#include "tst_gui_views.moc"
