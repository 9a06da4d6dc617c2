// MatrixHeatmap and CSV export: PNG size and cell colours (signed palette: white at 0, red above,
// blue below; probability palette: viridis ends), SVG title and escaped labels, PDF header,
// tooltips, exportPlot for a line chart, CSV quoting and NaN as an empty field.

#include "model/core/csv_writer.h"
#include "model/core/errors.h"
#include "views/figures/matrix_heatmap.h"
#include "views/figures/palettes.h"

#include <qcustomplot.h>

#include <QFile>
#include <QImage>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>
#include <limits>

using namespace attnscope;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// 3 rows × 4 columns: row 0 = +2 (red), row 1 = 0 (white) with a masked cell at (1, 3), row 2 = -2 (blue).
MatrixFigure signedFigure() {
    MatrixFigure f;
    f.values.resize(3, 4);
    f.values << 2, 2, 2, 2, 0, 0, 0, kNaN, -2, -2, -2, -2;
    f.rowLabels = {QStringLiteral("␣The"), QStringLiteral("<a&b>"), QStringLiteral("cat")};
    f.title = QStringLiteral("signed <test> & co");
    f.rowTitle = QStringLiteral("position");
    f.colTitle = QStringLiteral("d_head");
    f.valueTitle = QStringLiteral("value");
    f.scale = MatrixFigure::Scale::Signed;
    return f;
}

int colourDistance(QRgb a, QRgb b) {
    return std::max({std::abs(qRed(a) - qRed(b)), std::abs(qGreen(a) - qGreen(b)), std::abs(qBlue(a) - qBlue(b))});
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class TestGuiMatrixHeatmap : public QObject {
    Q_OBJECT
private slots:
    void signedPngHasSizeAndColours();
    void probabilityPngUsesViridisEnds();
    void pngScaleDoublesPixels();
    void svgHasTitleAndEscapedLabels();
    void pdfHasHeader();
    void tooltipAndRange();
    void labelCountMismatchThrows();
    void elongatedMatrixFillsArea();
    void exportPlotWritesLineChart();
    void csvMatrixExact();
    void csvQuotingExact();
    void csvUnwritablePathNamesFile();
    void longTitleIsWrappedNotCut();
};

void TestGuiMatrixHeatmap::signedPngHasSizeAndColours() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("m.png"));
    QString error;
    QVERIFY2(exportMatrixFigure(signedFigure(), path, ImageFormat::Png, QSize(640, 480), 1.0, &error), qPrintable(error));
    const QImage img(path);
    QCOMPARE(img.size(), QSize(640, 480));
    // Lay out a widget the same way to find the cell centres in the image.
    MatrixHeatmap view;
    view.setFigure(signedFigure());
    view.plot()->setViewport(QRect(0, 0, 640, 480));
    view.fitCells();
    QVERIFY(view.squareCells());
    const QRgb red = img.pixel(view.cellCentre(0, 1).toPoint());
    const QRgb white = img.pixel(view.cellCentre(1, 1).toPoint());
    const QRgb masked = img.pixel(view.cellCentre(1, 3).toPoint());
    const QRgb blue = img.pixel(view.cellCentre(2, 2).toPoint());
    QVERIFY2(colourDistance(white, qRgb(0xf7, 0xf7, 0xf7)) <= 3, qPrintable(QColor(white).name()));
    QVERIFY2(colourDistance(red, qRgb(0xb2, 0x18, 0x2b)) <= 3, qPrintable(QColor(red).name()));
    QVERIFY2(colourDistance(blue, qRgb(0x21, 0x66, 0xac)) <= 3, qPrintable(QColor(blue).name()));
    QVERIFY2(colourDistance(masked, maskedCellColor().rgb()) <= 3, qPrintable(QColor(masked).name()));
    // Square cells: horizontal and vertical cell pitch agree.
    const double dx = view.cellCentre(0, 1).x() - view.cellCentre(0, 0).x();
    const double dy = view.cellCentre(1, 0).y() - view.cellCentre(0, 0).y();
    QVERIFY2(std::abs(dx - dy) <= 1.0, qPrintable(QStringLiteral("%1 vs %2").arg(dx).arg(dy)));
    QVERIFY(dy > 0); // row 0 at the top
    // Crisp cells: the pixel just inside a cell edge has the cell's own colour.
    const QPointF edge = view.cellCentre(0, 1) + QPointF(dx / 2 - 2, 0);
    QVERIFY(colourDistance(img.pixel(edge.toPoint()), red) <= 3);
}

void TestGuiMatrixHeatmap::probabilityPngUsesViridisEnds() {
    MatrixFigure f;
    f.values.resize(2, 2);
    f.values << 0, 1, 0.5f, 0.25f;
    f.scale = MatrixFigure::Scale::Probability;
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("p.png"));
    QString error;
    QVERIFY2(exportMatrixFigure(f, path, ImageFormat::Png, QSize(400, 300), 1.0, &error), qPrintable(error));
    const QImage img(path);
    MatrixHeatmap view;
    view.setFigure(f);
    view.plot()->setViewport(QRect(0, 0, 400, 300));
    view.fitCells();
    QCOMPARE(view.colorRange().lower, 0.0);
    QCOMPARE(view.colorRange().upper, 1.0);
    QVERIFY(colourDistance(img.pixel(view.cellCentre(0, 0).toPoint()), qRgb(0x44, 0x01, 0x54)) <= 3);
    QVERIFY(colourDistance(img.pixel(view.cellCentre(0, 1).toPoint()), qRgb(0xfd, 0xe7, 0x25)) <= 3);
    QVERIFY(colourDistance(img.pixel(view.cellCentre(1, 0).toPoint()), qRgb(0x21, 0x90, 0x8c)) <= 6);
}

void TestGuiMatrixHeatmap::pngScaleDoublesPixels() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("m2.png"));
    QString error;
    QVERIFY2(exportMatrixFigure(signedFigure(), path, ImageFormat::Png, QSize(300, 200), 2.0, &error), qPrintable(error));
    QCOMPARE(QImage(path).size(), QSize(600, 400));
}

void TestGuiMatrixHeatmap::svgHasTitleAndEscapedLabels() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("m.svg"));
    QString error;
    QVERIFY2(exportMatrixFigure(signedFigure(), path, ImageFormat::Svg, QSize(640, 480), 1.0, &error), qPrintable(error));
    const QString svg = QString::fromUtf8(readAll(path));
    QVERIFY(svg.startsWith(QStringLiteral("<?xml")));
    QVERIFY(svg.contains(QStringLiteral("<title>signed &lt;test&gt; &amp; co</title>")));
    QVERIFY(svg.contains(QStringLiteral("&lt;a&amp;b&gt;")));
    QVERIFY(!svg.contains(QStringLiteral("<a&b>")));
    // well-formed XML whose <title> reads back as the figure title
    QXmlStreamReader xml(svg);
    QString title;
    while (!xml.atEnd())
        if (xml.readNext() == QXmlStreamReader::StartElement && xml.name() == QLatin1String("title") && title.isEmpty())
            title = xml.readElementText();
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    QCOMPARE(title, QStringLiteral("signed <test> & co"));
    QVERIFY(svg.contains(QStringLiteral("␣The")));
}

void TestGuiMatrixHeatmap::pdfHasHeader() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("m.pdf"));
    QString error;
    QVERIFY2(exportMatrixFigure(signedFigure(), path, ImageFormat::Pdf, QSize(640, 480), 1.0, &error), qPrintable(error));
    const QByteArray pdf = readAll(path);
    QVERIFY(pdf.startsWith("%PDF-"));
    QVERIFY(pdf.size() > 1000);
}

void TestGuiMatrixHeatmap::tooltipAndRange() {
    MatrixHeatmap view;
    view.resize(600, 400);
    view.setFigure(signedFigure());
    QCOMPARE(view.describeCell(0, 2), QStringLiteral("0 ␣The, d_head 2: 2"));
    QCOMPARE(view.describeCell(1, 3), QStringLiteral("1 <a&b>, d_head 3: masked"));
    QCOMPARE(view.describeCell(3, 0), QString());
    QCOMPARE(view.colorRange().lower, -2.0);
    QCOMPARE(view.colorRange().upper, 2.0);
    view.plot()->setViewport(QRect(0, 0, 600, 400));
    view.fitCells();
    QCOMPARE(view.tooltipAt(view.cellCentre(2, 1).toPoint()), QStringLiteral("2 cat, d_head 1: -2"));
    QCOMPARE(view.tooltipAt(QPoint(1, 1)), QString());
}

void TestGuiMatrixHeatmap::labelCountMismatchThrows() {
    MatrixHeatmap view;
    MatrixFigure f = signedFigure();
    f.colLabels = {QStringLiteral("a")};
    try {
        view.setFigure(f);
        QFAIL("no exception");
    } catch (const InputError& e) {
        QCOMPARE(e.message(), QStringLiteral("1 column labels for a matrix with 4 columns"));
    }
    QString error;
    QVERIFY(!exportMatrixFigure(f, QStringLiteral("/tmp/x.png"), ImageFormat::Png, QSize(100, 100), 1, &error));
    QCOMPARE(error, QStringLiteral("/tmp/x.png: 1 column labels for a matrix with 4 columns"));
}

void TestGuiMatrixHeatmap::elongatedMatrixFillsArea() {
    MatrixHeatmap view;
    MatrixFigure f;
    f.values = Matrix::Random(4, 200);
    view.setFigure(f);
    QVERIFY(!view.squareCells());
    view.plot()->setViewport(QRect(0, 0, 800, 400));
    view.fitCells();
    const double dx = view.cellCentre(0, 1).x() - view.cellCentre(0, 0).x();
    const double dy = view.cellCentre(1, 0).y() - view.cellCentre(0, 0).y();
    QVERIFY2(dy > 10 * dx, qPrintable(QStringLiteral("%1 %2").arg(dx).arg(dy)));
}

void TestGuiMatrixHeatmap::exportPlotWritesLineChart() {
    QCustomPlot plot;
    plot.plotLayout()->insertRow(0);
    plot.plotLayout()->addElement(0, 0, new QCPTextElement(&plot, QStringLiteral("chart title")));
    auto* g = plot.addGraph();
    g->setPen(QPen(Qt::red, 4));
    g->setData({0, 1, 2}, {0, 1, 0});
    plot.rescaleAxes();
    QTemporaryDir dir;
    QString error;
    const QString png = dir.filePath(QStringLiteral("c.png"));
    QVERIFY2(exportPlot(&plot, png, ImageFormat::Png, QSize(320, 240), 1.0, &error), qPrintable(error));
    const QImage img(png);
    QCOMPARE(img.size(), QSize(320, 240));
    int redPixels = 0;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x)
            if (colourDistance(img.pixel(x, y), qRgb(255, 0, 0)) < 40) ++redPixels;
    QVERIFY2(redPixels > 300, qPrintable(QString::number(redPixels)));
    const QString svg = dir.filePath(QStringLiteral("c.svg"));
    QVERIFY2(exportPlot(&plot, svg, ImageFormat::Svg, QSize(320, 240), 1.0, &error), qPrintable(error));
    QVERIFY(readAll(svg).contains("<title>chart title</title>"));
    QVERIFY(!exportPlot(&plot, png, ImageFormat::Png, QSize(0, 240), 1.0, &error));
    QVERIFY(error.startsWith(png + QStringLiteral(": figure size 0×240")));
}

void TestGuiMatrixHeatmap::csvMatrixExact() {
    Matrix m(2, 3);
    m << 1.5f, kNaN, -0.1f, 1e-7f, 123456789.0f, 0;
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("m.csv"));
    QString error;
    QVERIFY2(writeMatrixCsv(path, m, {QStringLiteral("a,b"), QStringLiteral("say \"hi\"")}, {}, &error), qPrintable(error));
    QCOMPARE(QString::fromUtf8(readAll(path)),
             QStringLiteral(",0,1,2\n\"a,b\",1.5,,-0.100000001\n\"say \"\"hi\"\"\",1.00000001e-07,123456792,0\n"));
    QVERIFY(!writeMatrixCsv(path, m, {QStringLiteral("x")}, {}, &error));
    QCOMPARE(error, path + QStringLiteral(": 1 row / 0 column labels for a 2×3 matrix"));
}

void TestGuiMatrixHeatmap::csvQuotingExact() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("t.csv"));
    QString error;
    QVERIFY(writeCsv(path, {QStringLiteral("token"), QStringLiteral("logit")},
                     {{QStringLiteral("line\nbreak"), QStringLiteral("1")}, {QStringLiteral("␣the"), QString()}}, &error));
    QCOMPARE(QString::fromUtf8(readAll(path)), QStringLiteral("token,logit\n\"line\nbreak\",1\n␣the,\n"));
}

void TestGuiMatrixHeatmap::csvUnwritablePathNamesFile() {
    QString error;
    const QString path = QStringLiteral("/nonexistent-dir/x.csv");
    QVERIFY(!writeCsv(path, {QStringLiteral("a")}, {}, &error));
    QVERIFY2(error.startsWith(path + QStringLiteral(": ")), qPrintable(error));
}

/// The DLA heatmap's title for a logit difference is wider than its half of the tab: it breaks into lines
/// that fit, and no ink of it touches the picture's left or right edge (its first letter was cut off).
void TestGuiMatrixHeatmap::longTitleIsWrappedNotCut() {
    MatrixFigure f = signedFigure();
    f.title = QStringLiteral("DLA to logit[␣created] − logit[␣said] at position 15 (␣God)");
    const QSize size(360, 300);
    MatrixHeatmap view;
    view.setFigure(f);
    view.plot()->setViewport(QRect(QPoint(0, 0), size));
    view.fitCells();
    auto* title = qobject_cast<QCPTextElement*>(view.plot()->plotLayout()->elementAt(0));
    QVERIFY(title);
    const QStringList lines = title->text().split('\n');
    QVERIFY2(lines.size() >= 2, qPrintable(title->text()));
    QCOMPARE(lines.join(' '), f.title);
    const QFontMetricsF fm(title->font());
    for (const QString& line : lines) QVERIFY2(fm.horizontalAdvance(line) <= size.width() - 16, qPrintable(line));
    QCOMPARE(view.figureTitle(), f.title); // files keep the whole title
    // the exported picture: the title's ink lies inside, with air at both edges
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("title.png"));
    QString error;
    QVERIFY2(exportMatrixFigure(f, path, ImageFormat::Png, size, 1.0, &error), qPrintable(error));
    const QImage img(path);
    QCOMPARE(img.size(), size);
    const int bottom = title->outerRect().bottom();
    QVERIFY(bottom > 2 * fm.height() - 4); // two lines high
    int ink = 0;
    for (int y = 0; y <= bottom; ++y)
        for (int x = 0; x < size.width(); ++x) {
            const bool dark = qGray(img.pixel(x, y)) < 100;
            ink += dark;
            if (dark && (x < 4 || x >= size.width() - 4))
                QFAIL(qPrintable(QStringLiteral("title ink at the edge, pixel (%1, %2)").arg(x).arg(y)));
        }
    QVERIFY2(ink > 200, qPrintable(QString::number(ink)));
}

QTEST_MAIN(TestGuiMatrixHeatmap)
#include "tst_gui_matrix_heatmap.moc"
