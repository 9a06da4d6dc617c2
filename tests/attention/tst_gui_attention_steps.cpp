// The "Attention steps" and "Attention by hand" tabs, offscreen, on tiny-gpt2 (18 positions, 4 heads,
// d_head 16, d_model 64): walking every step (name, shape line, heatmap matrix = the step's values,
// table for small matrices, block-diagram box), keyboard navigation, export of one step in every
// format (PNG size + pixels, SVG title, PDF header, CSV values), and the sandbox: an edited X cell
// changes Z to what runSandbox gives, the worksheet switch, the row convention, and worksheet exports
// (PNG not uniform; the blank template has no ink in the computed cells where the filled one has).

#include "model/analysis/attention/attention_sandbox.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/transformer/prompt.h"
#include "support/reference_json.h"
#include "support/test_paths.h"
#include "views/attention/attention_sandbox_panel.h"
#include "views/attention/attention_steps_panel.h"
#include "views/attention/block_diagram.h"
#include "views/figures/matrix_heatmap.h"
#include "views/attention/matrix_table_model.h"

#include <qcustomplot.h>

#include <QFile>
#include <QImage>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

using namespace attnscope;
using namespace attnscope::test;

namespace {

/// Equal as matrices, NaN matching NaN.
bool sameMatrix(const Matrix& a, const Matrix& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
    for (Eigen::Index i = 0; i < a.size(); ++i) {
        const float x = a.data()[i], y = b.data()[i];
        if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
    }
    return true;
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

/// Dark ("ink") pixels inside `r` of `img`.
int inkPixels(const QImage& img, const QRect& r) {
    int n = 0;
    for (int y = r.top(); y <= r.bottom(); ++y)
        for (int x = r.left(); x <= r.right(); ++x)
            if (qGray(img.pixel(x, y)) < 110) ++n;
    return n;
}

} // namespace

class TestGuiAttentionSteps : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void walksEveryStep();
    void keyboardAndDiagramNavigate();
    void rotaryModelShowsRopeBoxes();
    void exportsStepInEveryFormat();
    void sandboxEditUpdatesZ();
    void sandboxWorksheetAndRowsConvention();
    void sandboxExports();

private:
    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    QStringList labels_;
};

void TestGuiAttentionSteps::initTestCase() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    model_ = loadModel(testdata("tiny-gpt2"));
    const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
    const std::vector<int> ids = tokenizePrompt(model_->tokenizer(), ref["prompt"].toString(), true);
    cache_ = std::make_shared<const ActivationCache>(runForward(*model_, ids));
    labels_ = tokenLabels(model_->tokenizer(), cache_->tokens);
    QCOMPARE(cache_->nPositions(), 18);
}

void TestGuiAttentionSteps::walksEveryStep() {
    AttentionStepsPanel panel;
    QCOMPARE(panel.title(), QStringLiteral("Attention steps"));
    QVERIFY(panel.steps().empty());
    panel.resize(1400, 900);
    panel.setContext(model_, cache_, labels_);
    panel.setSelectedHead(1, 2);
    const std::vector<AttentionStep> expected = attentionSteps(*model_, *cache_, 1, 2);
    QCOMPARE(panel.steps().size(), expected.size());
    QCOMPARE(int(expected.size()), 20);
    for (int i = 0; i < int(expected.size()); ++i) {
        panel.setCurrentIndex(i);
        const AttentionStep& s = expected[size_t(i)];
        QCOMPARE(panel.currentIndex(), i);
        QCOMPARE(panel.displayedName(), s.name);
        QCOMPARE(panel.displayedFormula(), s.formula);
        QCOMPARE(panel.displayedMeaning(), s.meaning);
        QCOMPARE(panel.displayedShape(), QStringLiteral("shape: %1    result %2×%3").arg(s.shape).arg(s.rows).arg(s.cols));
        QVERIFY2(sameMatrix(panel.heatmap()->figure().values, s.values), qPrintable(s.name));
        const bool probability = s.name == QLatin1String("pattern");
        QCOMPARE(panel.heatmap()->figure().scale,
                 probability ? MatrixFigure::Scale::Probability : MatrixFigure::Scale::Signed);
        QCOMPARE(panel.heatmap()->figure().rowLabels, labels_);
        QCOMPARE(panel.blockDiagram()->currentBox(), BlockDiagram::boxForStep(s.name));
        QVERIFY(panel.blockDiagram()->currentBox() >= 0);
        // numeric table for matrices of at most 32×32 (q, k, v, z, the S×S steps)
        const bool small = s.rows <= 32 && s.cols <= 32;
        QCOMPARE(!panel.table()->isHidden(), small);
        if (small) {
            const QModelIndex idx = panel.table()->model()->index(s.rows - 1, 0);
            QCOMPARE(idx.data().toString(), QString::number(double(s.values(s.rows - 1, 0)), 'g', 4));
        }
        QCOMPARE(!panel.comparisonHeatmap()->isHidden(), s.name == QLatin1String("attn_out_additive"));
    }
    // the shape line of a concrete step, written out
    panel.setCurrentIndex(4);
    QCOMPARE(panel.displayedShape(), QStringLiteral("shape: S×D · D×L → S×L    result 18×16"));
    QCOMPARE(panel.heatmap()->figure().colTitle, QStringLiteral("d_head"));
    // additive step: both results, and the note with the max abs difference
    panel.setCurrentIndex(18);
    QCOMPARE(panel.displayedName(), QStringLiteral("attn_out_additive"));
    QVERIFY(sameMatrix(panel.comparisonHeatmap()->figure().values, expected[13].values));
    QVERIFY(panel.displayedNote().startsWith(QStringLiteral("max |Σ_h head_result_h + b_O − attn_out| = ")));
    QVERIFY(expected[18].maxAbsDiff <= 1e-5);
    // the embed step lists the token ids
    panel.setCurrentIndex(0);
    QVERIFY(panel.displayedNote().contains(QString::number(cache_->tokens[1])));
    // switching head keeps the step
    panel.setCurrentIndex(10);
    panel.setSelectedHead(0, 1);
    QCOMPARE(panel.displayedName(), QStringLiteral("pattern"));
    QVERIFY(sameMatrix(panel.heatmap()->figure().values, cache_->layers[0].pattern[1]));
}

void TestGuiAttentionSteps::keyboardAndDiagramNavigate() {
    AttentionStepsPanel panel;
    panel.setContext(model_, cache_, labels_);
    panel.setSelectedHead(0, 0);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.activateWindow();
    panel.setFocus();
    QCOMPARE(panel.currentIndex(), 0);
    QTest::keyClick(&panel, Qt::Key_Right, Qt::AltModifier);
    QCOMPARE(panel.currentIndex(), 1);
    QTest::keyClick(&panel, Qt::Key_N);
    QCOMPARE(panel.currentIndex(), 2);
    QTest::keyClick(&panel, Qt::Key_P);
    QTest::keyClick(&panel, Qt::Key_Left, Qt::AltModifier);
    QCOMPARE(panel.currentIndex(), 0);
    panel.previous(); // clamps at 0
    QCOMPARE(panel.currentIndex(), 0);
    // clicking the "softmax" box jumps to the pattern step
    BlockDiagram* d = panel.blockDiagram();
    const int softmax = int(BlockDiagram::boxLabels().indexOf(QStringLiteral("softmax")));
    QTest::mouseClick(d, Qt::LeftButton, {}, d->boxRect(softmax).center().toPoint());
    QCOMPARE(panel.displayedName(), QStringLiteral("pattern"));
    QCOMPARE(d->currentBox(), softmax);
}

// stories260K (Llama architecture, RoPE): the diagram shows RMSNorm and RoPE boxes and no "+ pos";
// q_rot/k_rot light the RoPE box, q/k/v the Q/K/V box, and every step has a box.
void TestGuiAttentionSteps::rotaryModelShowsRopeBoxes() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    const auto llama = loadModel(testdata("stories260K/stories260K.gguf"));
    const std::vector<int> ids = tokenizePrompt(llama->tokenizer(), QStringLiteral("Once upon a time"), true);
    const auto cache = std::make_shared<const ActivationCache>(runForward(*llama, ids));
    AttentionStepsPanel panel;
    panel.resize(1400, 900);
    panel.setContext(llama, cache, tokenLabels(llama->tokenizer(), cache->tokens));
    panel.setSelectedHead(0, 1);
    QVERIFY(panel.blockDiagram()->rotary());
    const QStringList boxes = BlockDiagram::boxLabels(true);
    QVERIFY(boxes.contains(QStringLiteral("RoPE")));
    QVERIFY(boxes.contains(QStringLiteral("RMSNorm")));
    QVERIFY(!boxes.contains(QStringLiteral("+ pos")));
    bool sawRot = false;
    for (int i = 0; i < int(panel.steps().size()); ++i) {
        panel.setCurrentIndex(i);
        const QString name = panel.steps()[size_t(i)].name;
        const int box = panel.blockDiagram()->currentBox();
        QVERIFY2(box >= 0 && box < boxes.size(), qPrintable(name));
        if (name == QLatin1String("q_rot") || name == QLatin1String("k_rot")) {
            QCOMPARE(boxes[box], QStringLiteral("RoPE"));
            sawRot = true;
        }
        if (name == QLatin1String("q") || name == QLatin1String("v")) QCOMPARE(boxes[box], QStringLiteral("Q/K/V"));
        if (name == QLatin1String("pattern")) QCOMPARE(boxes[box], QStringLiteral("softmax"));
    }
    QVERIFY(sawRot);
    // back to GPT-2: the learned-position boxes return
    panel.setContext(model_, cache_, labels_);
    QVERIFY(!panel.blockDiagram()->rotary());
}

void TestGuiAttentionSteps::exportsStepInEveryFormat() {
    AttentionStepsPanel panel;
    panel.setContext(model_, cache_, labels_);
    panel.setSelectedHead(1, 3);
    panel.setCurrentIndex(10); // pattern
    QTemporaryDir dir;
    const QString png = dir.filePath("pattern.png"), svg = dir.filePath("pattern.svg"), pdf = dir.filePath("pattern.pdf"),
                  csv = dir.filePath("pattern.csv");
    for (const QString& path : {png, svg, pdf, csv}) {
        const QString error = panel.exportCurrentStep(path, QSize(700, 600), 1.0);
        QVERIFY2(error.isEmpty(), qPrintable(error));
    }
    const QImage img(png);
    QCOMPARE(img.size(), QSize(700, 600));
    // the first query attends only to itself: cell (0, 0) is 1 → viridis yellow; cell (0, 1) masked
    MatrixHeatmap probe;
    probe.setFigure(panel.figureForStep(10));
    probe.plot()->setViewport(QRect(0, 0, 700, 600));
    probe.fitCells();
    const QRgb one = img.pixel(probe.cellCentre(0, 0).toPoint());
    QVERIFY2(qRed(one) > 230 && qGreen(one) > 210 && qBlue(one) < 80, qPrintable(QColor(one).name()));
    // the pattern's future cells are exact zeros (dark viridis); the "masked" step draws them grey
    QCOMPARE(QColor(img.pixel(probe.cellCentre(0, 5).toPoint())), QColor(0x44, 0x01, 0x54));
    QVERIFY(readAll(svg).contains("<title>layer 1, head 3 — pattern = softmax_row(masked)</title>"));
    QVERIFY(readAll(pdf).startsWith("%PDF-"));
    const QStringList lines = QString::fromUtf8(readAll(csv)).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 19);
    QVERIFY2(lines[0].startsWith(",<|endoftext|>,The,"), qPrintable(lines[0]));
    const QStringList row2 = lines[3].split(',');
    const Matrix& p = cache_->layers[1].pattern[3];
    QCOMPARE(float(row2[1].toDouble()), p(2, 0)); // 9 significant digits round-trip a float exactly
    QCOMPARE(float(row2[3].toDouble()), p(2, 2));
    QCOMPARE(row2[4], QStringLiteral("0")); // a future key gets exactly 0 attention
    QVERIFY(std::abs(row2[1].toDouble() + row2[2].toDouble() + row2[3].toDouble() - 1.0) < 1e-6);
    QVERIFY(panel.exportCurrentStep(dir.filePath("x.bmp")).endsWith(": unknown format (use .png, .svg, .pdf or .csv)"));
}

void TestGuiAttentionSteps::sandboxEditUpdatesZ() {
    AttentionSandboxPanel panel;
    panel.resize(1400, 900);
    MatrixTableModel* x = panel.tableModel("X");
    QVERIFY(x);
    QCOMPARE(x->rowCount(), 6);
    QCOMPARE(x->columnCount(), 4);
    QCOMPARE(panel.tableModel("W_Q")->rowCount(), 3);
    // edit X(2, 3) through the model, as the table's editor does
    QVERIFY(x->setData(x->index(2, 3), QStringLiteral("2"), Qt::EditRole));
    QCOMPARE(panel.inputs().X(2, 3), 2.0f);
    SandboxInputs in = defaultSandboxInputs();
    in.X(2, 3) = 2;
    const SandboxResult expected = runSandbox(in);
    MatrixTableModel* z = panel.tableModel("Z");
    QVERIFY(sameMatrix(z->matrix(), expected.exact.Z));
    QVERIFY(!sameMatrix(z->matrix(), runSandbox(defaultSandboxInputs()).exact.Z));
    QCOMPARE(z->index(0, 3).data().toString(), QString::number(double(expected.exact.Z(0, 3)), 'g', 3));
    QVERIFY(sameMatrix(panel.tableModel("scores")->matrix(), expected.exact.scores));
    // text that is not a number is refused
    QVERIFY(!x->setData(x->index(0, 0), QStringLiteral("abc"), Qt::EditRole));
    QCOMPARE(panel.inputs().X(0, 0), 1.0f);
}

void TestGuiAttentionSteps::sandboxWorksheetAndRowsConvention() {
    AttentionSandboxPanel panel;
    QVERIFY(panel.tableView("A", true)->isHidden());
    panel.setWorksheetArithmetic(true);
    QVERIFY(!panel.tableView("A", true)->isHidden());
    const SandboxResult r = runSandbox(defaultSandboxInputs());
    QVERIFY(sameMatrix(panel.tableModel("A", true)->matrix(), r.worksheet.A));
    QVERIFY(sameMatrix(panel.tableModel("scaled", true)->matrix(), r.worksheet.scaled));
    // hand-arithmetic weights are shown as fractions: 3^s / Σ 3^s
    const QString a00 = panel.tableModel("A", true)->index(0, 0).data().toString();
    QCOMPARE(a00, fractionText(r.worksheet.A(0, 0)));
    QVERIFY2(a00.contains('/') || a00 == "0" || a00 == "1", qPrintable(a00));
    QCOMPARE(fractionText(1.0 / 3.0), QStringLiteral("1/3"));
    QCOMPARE(fractionText(9.0 / 13.0), QStringLiteral("9/13"));
    // row convention: every table is the transpose, and editing X(row=token 3, col=feature 2) edits X(2, 3)
    panel.setConvention(SandboxConvention::Rows);
    QVERIFY(sameMatrix(panel.tableModel("Z")->matrix(), Matrix(r.exact.Z.transpose())));
    QCOMPARE(panel.tableModel("X")->rowCount(), 4);
    MatrixTableModel* x = panel.tableModel("X");
    QVERIFY(x->setData(x->index(3, 2), QStringLiteral("-1"), Qt::EditRole));
    QCOMPARE(panel.inputs().X(2, 3), -1.0f);
    SandboxInputs in = defaultSandboxInputs();
    in.X(2, 3) = -1;
    QVERIFY(sameMatrix(panel.tableModel("Z")->matrix(), runSandbox(in, SandboxConvention::Rows).exact.Z));
}

void TestGuiAttentionSteps::sandboxExports() {
    AttentionSandboxPanel panel;
    panel.setWorksheetArithmetic(true);
    panel.resize(1200, 800);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QTemporaryDir dir;
    const QString filled = dir.filePath("ws.png"), blank = dir.filePath("blank.png");
    QString error = panel.exportWorksheet(filled, false, 1.0);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    error = panel.exportWorksheet(blank, true, 1.0);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const QImage a(filled), b(blank);
    QCOMPARE(a.size(), panel.worksheet()->size());
    QCOMPARE(b.size(), a.size());
    QVERIFY(a.width() > 600 && a.height() > 400);
    // Z's cells: digits in the filled export, no ink in the blank one; X (given) is drawn in both.
    for (const QString& name : {QStringLiteral("Z"), QStringLiteral("scores")}) {
        QTableView* view = panel.tableView(name);
        const QRect cells(view->viewport()->mapTo(panel.worksheet(), QPoint(0, 0)), view->viewport()->size());
        QVERIFY2(inkPixels(a, cells) > 30, qPrintable(name));
        QCOMPARE(inkPixels(b, cells), 0);
    }
    QTableView* xView = panel.tableView("X");
    const QRect xCells(xView->viewport()->mapTo(panel.worksheet(), QPoint(0, 0)), xView->viewport()->size());
    QVERIFY(inkPixels(b, xCells) > 30);
    QCOMPARE(inkPixels(b, xCells), inkPixels(a, xCells));
    // after the blank export the tables show values again
    QVERIFY(!panel.tableModel("Z")->index(0, 0).data().toString().isEmpty());
    // 2× PNG and PDF
    const QString big = dir.filePath("ws2.png"), pdf = dir.filePath("ws.pdf"), blankPdf = dir.filePath("blank.pdf");
    QVERIFY(panel.exportWorksheet(big, false, 2.0).isEmpty());
    QCOMPARE(QImage(big).size(), a.size() * 2);
    QVERIFY(panel.exportWorksheet(pdf, false).isEmpty());
    QVERIFY(panel.exportWorksheet(blankPdf, true).isEmpty());
    QVERIFY(readAll(pdf).startsWith("%PDF-"));
    QVERIFY(readAll(blankPdf).startsWith("%PDF-"));
    QVERIFY(readAll(pdf).size() > readAll(blankPdf).size());
    QVERIFY(panel.exportWorksheet(dir.filePath("ws.svg"), false).endsWith(": the worksheet exports as .png or .pdf"));
}

QTEST_MAIN(TestGuiAttentionSteps)
#include "tst_gui_attention_steps.moc"
