// The "Logit attribution" panel offscreen on tiny-gpt2: the token picker resolves typed text to ids (and says
// why a text is not one token),
// the heatmap shows exactly dlaTable / componentNormTable of the same attribution computed directly,
// clicking a head cell requests that head, the detector table sorts by induction score and matches
// inductionScores, an ablation changes the logit by what previewAblation computes directly, and the
// exports write PNG/SVG/PDF/CSV files of the right size and kind.

#include "app/main_window.h"
#include "model/analysis/residual/ablation.h"
#include "model/analysis/attention/head_detectors.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/transformer/prompt.h"
#include "support/reference_json.h"
#include "support/test_paths.h"
#include "views/residual/ablation_panel.h"
#include "views/attention/head_detectors_panel.h"
#include "views/attention/head_grid.h"
#include "views/residual/residual_panel.h"
#include "views/common/token_picker.h"
#include "views/common/top_tokens_view.h"
#include "views/figures/matrix_heatmap.h"

#include <qcustomplot.h>

#include <QFile>
#include <QFontMetricsF>
#include <QHeaderView>
#include <QImage>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

class TestGuiResidual : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void pickerResolvesTypedTokens();
    void heatmapShowsDlaTable();
    void differenceAndNormModes();
    void clickingAHeadCellRequestsIt();
    void detectorTableSortsByInduction();
    void ablationMatchesPreviewAblation();
    void exportsFiles();
    void topPredictionAtAnEarlierPosition();
    void titlesFitAtTheDefaultSize();

private:
    int tokenOf(const QString& text) const {
        const auto ids = model_->tokenizer().encode(text);
        return ids.size() == 1 ? ids[0] : -1;
    }
    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    std::unique_ptr<ResidualPanel> panel_;
};

void TestGuiResidual::initTestCase() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    model_ = loadModel(testdata("tiny-gpt2"));
    const QString prompt = readJsonObject(testdata("tiny-gpt2/reference.json"))["prompt"].toString();
    cache_ = std::make_shared<const ActivationCache>(runForward(*model_, tokenizePrompt(model_->tokenizer(), prompt, true)));
    panel_ = std::make_unique<ResidualPanel>();
    panel_->resize(1400, 900);
    panel_->show();
    panel_->setContext(model_, cache_, tokenLabels(model_->tokenizer(), cache_->tokens));
    QCOMPARE(panel_->title(), QString("Logit attribution"));
    QCOMPARE(panel_->position(), 17); // default: the last position
}

void TestGuiResidual::pickerResolvesTypedTokens() {
    TokenPicker* p = panel_->targetPicker();
    const int c = tokenOf(" c");
    QVERIFY(c >= 0);
    QSignalSpy changed(p, &TokenPicker::tokenChanged);
    for (const QString& text : {QString::fromUtf8("␣c"), QString(" c"), QString::fromUtf8("Ġc"), QString("#%1").arg(c)}) {
        p->setText(text);
        QCOMPARE(p->tokenId(), std::optional<int>(c));
        QCOMPARE(p->statusText(), QString("id %1").arg(c));
    }
    QVERIFY(changed.count() >= 1);
    QCOMPARE(changed.first().at(0).toInt(), c);
    p->setText(" cat"); // two tokens in tiny-gpt2
    QVERIFY(!p->tokenId());
    // the validation message names the tokens the text encodes to
    const auto pieces = model_->tokenizer().encode(" cat");
    QCOMPARE(p->statusText(), QString("not one token: %1 + %2")
                                  .arg(model_->tokenizer().displayToken(pieces[0]), model_->tokenizer().displayToken(pieces[1])));
    // typing feeds the completer with vocabulary display strings
    p->lineEdit()->clear();
    QTest::keyClicks(p->lineEdit(), "at");
    QVERIFY(p->lineEdit()->completer()->completionCount() > 1);
    QCOMPARE(p->tokenId(), std::optional<int>(tokenOf("at")));
}

void TestGuiResidual::heatmapShowsDlaTable() {
    panel_->setMeasure(ResidualPanel::Measure::DlaToken);
    panel_->targetPicker()->setText(" the");
    const int t = tokenOf(" the");
    QCOMPARE(panel_->targetToken(), t);
    const DirectLogitAttribution direct = directLogitAttribution(*model_, *cache_, {17, t, -1});
    const Matrix expected = dlaTable(model_->config(), direct);
    QCOMPARE(panel_->heatmap()->figure().values.rows(), 2);
    QCOMPARE(panel_->heatmap()->figure().values.cols(), 5); // 4 heads + MLP
    QCOMPARE(maxAbsDiff(panel_->heatmap()->figure().values, expected), 0.0);
    QCOMPARE(panel_->heatmap()->figure().colLabels.last(), QString("MLP"));
    QVERIFY(expected.cwiseAbs().maxCoeff() > 1e-3);
    // the check line: Σ components vs the model's logit minus the bias term
    QVERIFY(std::abs(direct.total - (direct.logit - direct.biasTerm)) <= 1e-4);
    QVERIFY2(panel_->checkText().contains(QString::number(direct.total, 'f', 4)), qPrintable(panel_->checkText()));
    QVERIFY(panel_->checkText().contains(QString::number(direct.logit, 'f', 4)));
    QVERIFY(panel_->reconstructionText().contains("max |Σ components − residual|"));
    QVERIFY(panel_->decomposition()->maxAbsError < 1e-4);
    QVERIFY(panel_->heatmap()->toolTip().contains("TransformerLens"));
    // cumulative chart: bias term then one point per component, ending at the model's logit
    QCPGraph* line = panel_->cumulativePlot()->graph(0);
    QCOMPARE(line->dataCount(), int(direct.components.size()) + 1);
    QVERIFY(std::abs(line->data()->at(line->dataCount() - 1)->value - direct.logit) <= 1e-4);
    QCOMPARE(line->data()->at(0)->value, direct.biasTerm);
    // the table lists the components in forward order
    QTableWidget* table = panel_->componentsTable();
    QCOMPARE(table->rowCount(), int(direct.components.size()));
    QCOMPARE(table->item(0, ResidualPanel::NameColumn)->text(), QString("embed"));
    QCOMPARE(table->item(2, ResidualPanel::NameColumn)->text(), QString("L0H0"));
    QCOMPARE(table->item(2, ResidualPanel::DlaColumn)->data(Qt::UserRole).toDouble(), direct.components[2].value);
    // moving the position recomputes there
    panel_->setPosition(5);
    QCOMPARE(maxAbsDiff(panel_->heatmap()->figure().values,
                        dlaTable(model_->config(), directLogitAttribution(*model_, *cache_, {5, t, -1}))), 0.0);
    panel_->setPosition(-1);
    QCOMPARE(panel_->position(), 17);
}

void TestGuiResidual::differenceAndNormModes() {
    panel_->setMeasure(ResidualPanel::Measure::DlaDifference);
    panel_->targetPicker()->setText(" the");
    panel_->counterPicker()->setText("at");
    const int t = tokenOf(" the"), u = tokenOf("at");
    QCOMPARE(panel_->counterToken(), u);
    const DirectLogitAttribution diff = directLogitAttribution(*model_, *cache_, {17, t, u});
    QCOMPARE(maxAbsDiff(panel_->heatmap()->figure().values, dlaTable(model_->config(), diff)), 0.0);
    const int row = cache_->logitRow(17);
    QVERIFY(std::abs(panel_->attribution()->logit - double(cache_->logits(row, t) - cache_->logits(row, u))) <= 1e-5);
    panel_->setMeasure(ResidualPanel::Measure::Norm);
    const ResidualDecomposition dec =
        decomposeResidual(*model_, *cache_, ResidualBoundary::finalResidual(model_->config()), 17);
    QCOMPARE(maxAbsDiff(panel_->heatmap()->figure().values, componentNormTable(model_->config(), dec)), 0.0);
    QCOMPARE(panel_->heatmap()->figure().scale, MatrixFigure::Scale::Sequential);
    panel_->setMeasure(ResidualPanel::Measure::DlaToken);
    QCOMPARE(panel_->counterToken(), -1);
}

void TestGuiResidual::clickingAHeadCellRequestsIt() {
    QSignalSpy requested(panel_.get(), &AnalysisPanel::headRequested);
    MatrixHeatmap* h = panel_->heatmap();
    h->plot()->replot();
    QTest::mouseClick(h->plot(), Qt::LeftButton, {}, h->cellCentre(1, 2).toPoint());
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.first().at(0).toInt(), 1);
    QCOMPARE(requested.first().at(1).toInt(), 2);
    QTest::mouseClick(h->plot(), Qt::LeftButton, {}, h->cellCentre(0, 4).toPoint()); // the MLP column: no head
    QCOMPARE(requested.count(), 1);
}

void TestGuiResidual::detectorTableSortsByInduction() {
    HeadDetectorsView* d = panel_->detectors();
    if (d->inductionRunning()) {
        QSignalSpy done(d, &HeadDetectorsView::inductionFinished);
        QVERIFY(done.wait(60000));
    }
    const HeadScores direct = inductionScores(*model_, model_->tokenizer().bosId().value_or(-1));
    QVERIFY(d->scores(HeadDetector::Induction));
    QCOMPARE(maxAbsDiff(d->scores(HeadDetector::Induction)->scores, direct.scores), 0.0);
    QTableWidget* t = d->table();
    QCOMPARE(t->rowCount(), 8);
    const int col = HeadDetectorsView::columnOf(HeadDetector::Induction);
    QCOMPARE(t->horizontalHeader()->sortIndicatorSection(), col); // sorted by induction from the start
    QCOMPARE(t->horizontalHeader()->sortIndicatorOrder(), Qt::DescendingOrder);
    t->sortByColumn(HeadDetectorsView::NameColumn, Qt::AscendingOrder);
    t->sortByColumn(col, Qt::DescendingOrder);
    double prev = 2;
    for (int r = 0; r < t->rowCount(); ++r) {
        const int l = t->item(r, HeadDetectorsView::LayerColumn)->text().toInt();
        const int h = t->item(r, HeadDetectorsView::HeadColumn)->text().toInt();
        const double v = t->item(r, col)->data(Qt::DisplayRole).toDouble();
        QVERIFY(std::abs(v - direct.scores(l, h)) <= 1e-6);
        QVERIFY(v <= prev);
        prev = v;
    }
    Eigen::Index bl = 0, bh = 0;
    direct.scores.maxCoeff(&bl, &bh);
    QCOMPARE(t->item(0, HeadDetectorsView::NameColumn)->text(), QString("L%1H%2").arg(bl).arg(bh));
    // prompt detectors on the cache; the formula is the column's tooltip
    QCOMPARE(maxAbsDiff(d->scores(HeadDetector::PreviousToken)->scores, scoreHeads(*cache_, HeadDetector::PreviousToken).scores), 0.0);
    QCOMPARE(t->horizontalHeaderItem(col)->toolTip(), headDetectorFormula(HeadDetector::Induction));
    // overlay: the panel forwards the scores for the main window's head grid
    QSignalSpy overlay(panel_.get(), &ResidualPanel::headScoresChanged);
    d->setOverlay(HeadDetector::PreviousToken);
    QCOMPARE(overlay.count(), 1);
    QCOMPARE(overlay.first().at(1).toString(), QString("previous-token"));
    QCOMPARE(maxAbsDiff(overlay.first().at(0).value<Matrix>(), scoreHeads(*cache_, HeadDetector::PreviousToken).scores), 0.0);
}

void TestGuiResidual::ablationMatchesPreviewAblation() {
    panel_->setMeasure(ResidualPanel::Measure::DlaToken);
    panel_->targetPicker()->setText(" the");
    AblationView* a = panel_->ablation();
    a->setAblatedHeads({{1, 3}, {0, 1}});
    a->setKind(HeadAblation::Kind::Zero);
    QSignalSpy done(a, &AblationView::finished);
    a->run();
    QVERIFY(done.wait(30000));
    QVERIFY2(a->preview(), qPrintable(a->resultText()));
    AblationOptions opt;
    opt.ablations = {{0, 1, HeadAblation::Kind::Zero}, {1, 3, HeadAblation::Kind::Zero}};
    opt.token = tokenOf(" the");
    const AblationPreview direct = previewAblation(*model_, cache_->tokens, opt);
    QVERIFY(std::abs(direct.delta) > 1e-3); // the heads matter for this logit
    QVERIFY(std::abs(a->preview()->delta - direct.delta) <= 1e-5);
    QVERIFY(std::abs(a->preview()->before - panel_->attribution()->logit) <= 1e-5);
    QCOMPARE(a->topAfter()->rowCount(), 10);
    QCOMPARE(a->topAfter()->item(0, TopTokensView::TokenColumn)->data(Qt::UserRole).toInt(), direct.topAfter[0].id);
    QVERIFY(a->resultText().contains(QString::number(direct.delta, 'f', 4)));
    QVERIFY(a->resultText().contains("L0H1, L1H3"));
    // mean ablation differs from zero ablation
    a->setKind(HeadAblation::Kind::Mean);
    a->run();
    QVERIFY(done.wait(30000));
    opt.ablations = {{0, 1, HeadAblation::Kind::Mean}, {1, 3, HeadAblation::Kind::Mean}};
    QVERIFY(std::abs(a->preview()->delta - previewAblation(*model_, cache_->tokens, opt).delta) <= 1e-5);
}

void TestGuiResidual::exportsFiles() {
    QTemporaryDir dir;
    const QString png = dir.filePath("dla.png"), svg = dir.filePath("dla.svg"), pdf = dir.filePath("cumulative.pdf");
    const QString chartPng = dir.filePath("cumulative.png"), csv = dir.filePath("dla.csv");
    QCOMPARE(panel_->exportHeatmap(png, {800, 600}, 1.0), QString());
    QImage img(png);
    QCOMPARE(img.size(), QSize(800, 600));
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 4)
        for (int x = 0; x < img.width(); x += 4) colours.insert(img.pixel(x, y));
    QVERIFY(colours.size() > 10);
    QCOMPARE(panel_->exportCumulative(chartPng, {1000, 500}, 2.0), QString());
    QCOMPARE(QImage(chartPng).size(), QSize(2000, 1000));
    QCOMPARE(panel_->exportHeatmap(svg), QString());
    QFile s(svg);
    QVERIFY(s.open(QIODevice::ReadOnly));
    QVERIFY(s.readAll().contains("<svg"));
    QCOMPARE(panel_->exportCumulative(pdf), QString());
    QFile p(pdf);
    QVERIFY(p.open(QIODevice::ReadOnly));
    QVERIFY(p.read(5) == "%PDF-");
    QCOMPARE(panel_->exportComponentsCsv(csv), QString());
    QFile c(csv);
    QVERIFY(c.open(QIODevice::ReadOnly | QIODevice::Text));
    const QStringList lines = QString::fromUtf8(c.readAll()).split('\n', Qt::SkipEmptyParts);
    const auto& dla = *panel_->attribution();
    QCOMPARE(lines.size(), 1 + int(dla.components.size()) + 3);
    QCOMPARE(lines[0], QString("component,layer,head,l2_norm,dla,cumulative"));
    const QStringList l0h0 = lines[3].split(','); // embed, pos_embed, L0H0
    QCOMPARE(l0h0[0], QString("L0H0"));
    QVERIFY(std::abs(l0h0[4].toDouble() - dla.components[2].value) <= 1e-6);
    QCOMPARE(panel_->detectors()->exportCsv(dir.filePath("heads.csv")), QString());
    QFile hc(dir.filePath("heads.csv"));
    QVERIFY(hc.open(QIODevice::ReadOnly));
    QCOMPARE(hc.readAll().count('\n'), 1 + 8);
    QCOMPARE(panel_->ablation()->exportCsv(dir.filePath("ablation.csv")), QString());
    QVERIFY(QFileInfo(dir.filePath("ablation.csv")).size() > 100);
    QVERIFY(!panel_->exportHeatmap("/nonexistent-dir/x.png").isEmpty());
}

/// The app's cache keeps only the last position's logits: with no token typed, the target at an earlier
/// position is still that position's top prediction (the argmax of a forward that kept every row), not id 0.
void TestGuiResidual::topPredictionAtAnEarlierPosition() {
    ForwardOptions appLike;
    appLike.allLogits = false;
    const auto appCache = std::make_shared<const ActivationCache>(runForward(*model_, cache_->tokens, appLike));
    QCOMPARE(appCache->logitRow(5), -1);
    ResidualPanel panel;
    panel.setContext(model_, appCache, tokenLabels(model_->tokenizer(), appCache->tokens));
    panel.setMeasure(ResidualPanel::Measure::DlaToken);
    panel.targetPicker()->setText(QString());
    for (int p : {5, 11, 17}) {
        panel.setPosition(p);
        Eigen::Index best = 0;
        cache_->logits.row(cache_->logitRow(p)).maxCoeff(&best);
        QVERIFY(best != 0); // the reference's top token is not the id the old fallback gave
        QCOMPARE(panel.targetToken(), int(best));
        QVERIFY(panel.targetDescription().contains(model_->tokenizer().displayToken(int(best))));
    }
}

namespace {
/// The text of `plot`'s title element (its first QCPTextElement) and how much wider than the plot its widest
/// line is, in pixels (≤ 0: it fits).
std::pair<QString, double> titleOverflow(QCustomPlot* plot) {
    for (int i = 0; i < plot->plotLayout()->elementCount(); ++i)
        if (auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(i))) {
            const QFontMetricsF fm(title->font());
            double widest = 0;
            for (const QString& line : title->text().split(QLatin1Char('\n'))) widest = std::max(widest, fm.horizontalAdvance(line));
            return {title->text(), widest - plot->width()};
        }
    return {};
}
} // namespace

/// The DLA tab of a window at its default size (1500×920) on the demo model, with the longest kind of title (a
/// logit difference): the heatmap's title wraps to the heatmap's width and the cumulative chart's title fits its
/// chart; neither is clipped.
void TestGuiResidual::titlesFitAtTheDefaultSize() {
    MainWindow w(nullptr, MainWindow::Mode::Offscreen);
    QCOMPARE(w.size(), QSize(1500, 920));
    w.show();
    QSignalSpy ran(&w.session(), &ModelSession::forwardFinished);
    w.openModel(demoDir(), "In the beginning God created the heaven and the earth. In the beginning God created the heaven");
    QVERIFY(ran.wait(30000));
    QVERIFY(w.showView("logit-attribution"));
    auto* panel = qobject_cast<ResidualPanel*>(w.panel("logit-attribution"));
    QVERIFY(panel);
    panel->setMeasure(ResidualPanel::Measure::DlaDifference);
    panel->targetPicker()->setText(" created");
    panel->counterPicker()->setText(" said");
    QVERIFY(panel->counterToken() >= 0);
    panel->setPosition(15); // the second " God"
    for (int i = 0; i < 3; ++i) QCoreApplication::processEvents(); // layouts, the heatmap's fitCells
    panel->heatmap()->plot()->replot();
    panel->cumulativePlot()->replot();
    const auto [heatmapTitle, heatmapOver] = titleOverflow(panel->heatmap()->plot());
    QCOMPARE(QString(heatmapTitle).replace('\n', ' '), QString::fromUtf8("DLA to logit[␣created] − logit[␣said] at position 15 (␣God)"));
    QVERIFY2(heatmapOver <= 0, qPrintable(QString("\"%1\" is %2 px wider than its %3 px plot")
                                              .arg(heatmapTitle).arg(heatmapOver).arg(panel->heatmap()->plot()->width())));
    const auto [chartTitle, chartOver] = titleOverflow(panel->cumulativePlot());
    QCOMPARE(chartTitle, QString::fromUtf8("Cumulative logit[␣created] − logit[␣said] at position 15 (␣God)"));
    QVERIFY2(chartOver <= 0, qPrintable(QString("\"%1\" is %2 px wider than its %3 px chart")
                                            .arg(chartTitle).arg(chartOver).arg(panel->cumulativePlot()->width())));
}

QTEST_MAIN(TestGuiResidual)
#include "tst_gui_residual.moc"
