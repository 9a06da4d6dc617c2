// The Attention tab's head metrics, offscreen on the demo model: the table shows the selected head's six metrics as
// the library computes them over the prompt (head_metrics.h), the scatter places every head by the two metrics
// chosen, a click on a point selects that head in the window, and a corpus replaces the prompt's numbers by the
// corpus's.

#include "app/main_window.h"
#include "model/analysis/attention/head_metrics.h"
#include "support/test_paths.h"
#include "views/attention/head_metrics_view.h"
#include "views/attention/head_scatter.h"

#include <QComboBox>
#include <QStatusBar>
#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

class TestGuiHeadMetrics : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void tableShowsTheLibrarysNumbers();
    void scatterPlacesEveryHeadAndClickSelects();
    void corpusReplacesThePrompt();

private:
    std::unique_ptr<MainWindow> w_;
};

void TestGuiHeadMetrics::initTestCase() {
    QCoreApplication::setOrganizationName("AttnScopeTest"); // keep the user's settings untouched
    w_ = std::make_unique<MainWindow>(nullptr, MainWindow::Mode::Offscreen);
    w_->resize(1280, 800);
    w_->show();
    QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
    w_->openModel(demoDir(), QStringLiteral("In the beginning God created the heaven and the earth. "
                                                         "In the beginning God created the heaven and the earth."));
    QVERIFY2(ran.wait(30000) || !ran.isEmpty(), qPrintable(w_->statusBar()->currentMessage()));
    w_->waitForIdle();
}

void TestGuiHeadMetrics::tableShowsTheLibrarysNumbers() {
    HeadMetricsView* v = w_->headMetrics();
    QVERIFY(v->metrics());
    const HeadMetrics lib = headMetrics(*w_->session().cache());
    QVERIFY(v->sourceText().contains(QStringLiteral("over the prompt (%1 tokens)").arg(w_->session().cache()->nPositions())));
    for (auto [l, h] : {std::pair{1, 2}, std::pair{0, 0}}) {
        w_->selectHead(l, h);
        QCOMPARE(v->table()->horizontalHeaderItem(1)->text(), QStringLiteral("L%1H%2").arg(l).arg(h));
        for (HeadMetric m : allHeadMetrics()) {
            QCOMPARE(v->table()->item(int(m), 0)->text(), headMetricKey(m));
            QCOMPARE(v->table()->item(int(m), 1)->text(), QString::number(lib[m](l, h), 'f', 4));
            QCOMPARE((*v->metrics())[m](l, h), lib[m](l, h));
        }
    }
    // the prompt repeats itself: L1H2 is an induction head on it, L0H0 the previous-token head
    QVERIFY(lib[HeadMetric::Induction](1, 2) > 0.5);
    QVERIFY(lib[HeadMetric::PrevToken](0, 0) > 0.8);
    // every row fits: no scroll bar, the value column as wide as its text
    QVERIFY(v->table()->viewport()->height() >= v->table()->rowHeight(0) * kHeadMetricCount);
    QVERIFY(v->table()->columnWidth(0) >= v->table()->fontMetrics().horizontalAdvance(QStringLiteral("qk_distance_variance")));
}

void TestGuiHeadMetrics::scatterPlacesEveryHeadAndClickSelects() {
    HeadMetricsView* v = w_->headMetrics();
    HeadScatter* s = v->scatter();
    const HeadMetrics lib = headMetrics(*w_->session().cache());
    QCOMPARE(v->xMetric(), HeadMetric::PrevToken);
    QCOMPARE(v->yMetric(), HeadMetric::Induction);
    QCOMPARE(s->pointCount(), 8);
    for (int i = 0; i < s->pointCount(); ++i) {
        const auto [l, h] = s->pointHead(i);
        QCOMPARE(s->pointX(i), lib[HeadMetric::PrevToken](l, h));
        QCOMPARE(s->pointY(i), lib[HeadMetric::Induction](l, h));
    }
    // other axes through the combo boxes
    auto* xBox = v->findChildren<QComboBox*>().at(0);
    xBox->setCurrentIndex(int(HeadMetric::PatternEntropy));
    QCOMPARE(v->xMetric(), HeadMetric::PatternEntropy);
    QCOMPARE(s->xAxis->label(), QStringLiteral("pattern_entropy"));
    for (int i = 0; i < s->pointCount(); ++i) QCOMPARE(s->pointX(i), lib[HeadMetric::PatternEntropy](s->pointHead(i).first, s->pointHead(i).second));
    v->setAxes(HeadMetric::QkDistance, HeadMetric::SelfAttention);
    QCOMPARE(s->yAxis->label(), QStringLiteral("self_attention_score"));
    // a mouse click on L0H3's point selects L0H3 in the window
    w_->selectHead(1, 1);
    s->replot();
    int target = -1;
    for (int i = 0; i < s->pointCount(); ++i)
        if (s->pointHead(i) == std::pair{0, 3}) target = i;
    QVERIFY(target >= 0);
    const QPointF p = s->pointPixel(target);
    QVERIFY(s->rect().contains(p.toPoint()));
    if (s->pointAt(p) != target) QSKIP("two heads are drawn on the same pixel");
    QTest::mouseClick(s, Qt::LeftButton, Qt::NoModifier, p.toPoint());
    QCOMPARE(w_->layer(), 0);
    QCOMPARE(w_->head(), 3);
    QCOMPARE(v->table()->horizontalHeaderItem(1)->text(), QStringLiteral("L0H3"));
    // a click far from every point changes nothing
    QTest::mouseClick(s, Qt::LeftButton, Qt::NoModifier, QPoint(2, 2));
    QCOMPARE(w_->head(), 3);
}

void TestGuiHeadMetrics::corpusReplacesThePrompt() {
    HeadMetricsView* v = w_->headMetrics();
    const QString corpus = sourceFile(QStringLiteral("docs/genesis1.txt"));
    v->setCorpus(corpus);
    v->runCorpus();
    v->waitForIdle();
    CorpusPassOptions o;
    o.corpus = corpus;
    const HeadMetrics lib = headMetricsOverCorpus(*w_->session().model(), o);
    QVERIFY(lib.sequences >= 2);
    QVERIFY2(v->sourceText().contains(QStringLiteral("over genesis1.txt: %1 windows").arg(lib.sequences)), qPrintable(v->sourceText()));
    w_->selectHead(1, 2);
    for (HeadMetric m : allHeadMetrics()) QCOMPARE(v->table()->item(int(m), 1)->text(), QString::number(lib[m](1, 2), 'f', 4));
    // a new prompt keeps the corpus's numbers; an empty corpus and Run goes back to the prompt
    QSignalSpy ran(&w_->session(), &ModelSession::forwardFinished);
    w_->setPrompt(QStringLiteral("And God said"));
    w_->runPrompt();
    QVERIFY(ran.wait(30000));
    w_->waitForIdle();
    QCOMPARE((*v->metrics())[HeadMetric::Induction](1, 2), lib[HeadMetric::Induction](1, 2));
    v->setCorpus(QString());
    v->runCorpus();
    v->waitForIdle();
    QCOMPARE((*v->metrics())[HeadMetric::PatternEntropy](1, 2), headMetrics(*w_->session().cache())[HeadMetric::PatternEntropy](1, 2));
    // a corpus that is not there says so
    v->setCorpus(QStringLiteral("/nonexistent/corpus.txt"));
    v->runCorpus();
    v->waitForIdle();
    QVERIFY2(v->sourceText().contains(QStringLiteral("/nonexistent/corpus.txt: no such corpus file or folder")), qPrintable(v->sourceText()));
}

QTEST_MAIN(TestGuiHeadMetrics)
#include "tst_gui_head_metrics.moc"
