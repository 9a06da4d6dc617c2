// The embedding-space tabs, offscreen, on tiny-gpt2 (d_vocab 512, 2 layers × 4 heads, d_mlp 256):
//  - logit lens: the last row's top tokens are the top tokens of the model's logits (and agree with the
//    picoGPT reference logits), cells coloured by a target token's rank carry tokenRankings' ranks
//    and colours, a clicked cell lists its top-k, CSV/PNG exports hold the table;
//  - component readout: what a head / MLP writes, the same as readHead / readMlp;
//  - embedding space: OV pairs computed in the background equal projectPairs and a dense brute force,
//    are cached per head; FF value lists equal projectNeuron; the row query and reverse search equal
//    the model functions; the Eᵀ / LayerNorm note is shown;
//  - compare models: the same checkpoint twice gives a diagonal of 1 in both spaces and "Identical";
//    F32 vs F16 weights are reported as different (max |Δ| > 0) with token lists.

#include "app/main_window.h"
#include "model/analysis/embedding_space/component_readout.h"
#include "model/analysis/embedding_space/embedding_projection.h"
#include "model/analysis/embedding_space/logit_lens.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/transformer/prompt.h"
#include "support/brute_force_topk.h"
#include "support/reference_json.h"
#include "support/test_paths.h"
#include "views/embedding_space/component_readout_view.h"
#include "views/embedding_space/logit_lens_panel.h"
#include "views/figures/matrix_heatmap.h"
#include "views/comparison/model_compare_panel.h"
#include "views/embedding_space/projections_panel.h"
#include "views/common/token_picker.h"
#include "views/common/top_tokens_view.h"

#include <QFile>
#include <QImage>
#include <QLabel>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {
/// Hands the panel's second-model requests to a model session, as the main window does.
void connectSession(ModelComparePanel& panel, ModelSession& session) {
    QObject::connect(&panel, &AnalysisPanel::secondModelRequested, &session, &ModelSession::openSecondModel);
    QObject::connect(&session, &ModelSession::secondModelLoaded, &panel, [&] { panel.setSecondModel(session.secondModel()); });
    QObject::connect(&session, &ModelSession::secondModelLoadFailed, &panel,
                     [&](const QString& path, const QString& m) { panel.setSecondModelStatus({path, false, 0, 0, {}, m}); });
}
} // namespace

class TestGuiEmbeddingSpace : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void lensLastRowIsTheLogits();
    void lensTargetRankColouring();
    void lensCellListAndExports();
    void componentReadout();
    void projectionsPairsInBackground();
    void projectionsNeuronRowAndReverse();
    void compareSameModelIsIdentity();
    void compareF32WithF16();
    void mainWindowHasTheTabs();

private:
    std::shared_ptr<const Model> tiny_;
    std::shared_ptr<const ActivationCache> cache_;
    QStringList labels_;
    QJsonObject ref_;
};

void TestGuiEmbeddingSpace::initTestCase() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    tiny_ = loadModel(testdata("tiny-gpt2"));
    ref_ = readJsonObject(testdata("tiny-gpt2/reference.json"));
    const std::vector<int> ids = tokenizePrompt(tiny_->tokenizer(), ref_["prompt"].toString(), true);
    cache_ = std::make_shared<const ActivationCache>(runForward(*tiny_, ids));
    labels_ = tokenLabels(tiny_->tokenizer(), cache_->tokens);
}

void TestGuiEmbeddingSpace::lensLastRowIsTheLogits() {
    LogitLensPanel panel;
    panel.resize(1400, 900);
    panel.setContext(tiny_, cache_, labels_);
    panel.waitForIdle();
    QTableWidget* t = panel.lensTable();
    QCOMPARE(t->rowCount(), 5);
    QCOMPARE(t->columnCount(), 18);
    QCOMPARE(t->verticalHeaderItem(0)->text(), QString("embed"));
    QCOMPARE(t->verticalHeaderItem(4)->text(), QString("L1mlp"));
    const Matrix refLogits = matrixFromJson(ref_["variants"].toObject()["float32"].toObject()["logits"].toArray());
    const QJsonArray refArgmax = ref_["variants"].toObject()["float32"].toObject()["argmax_per_position"].toArray();
    for (int p = 0; p < 18; ++p) {
        const int top = topTokens(cache_->logits.row(p), 1).front().id;
        QTableWidgetItem* item = t->item(4, p);
        QVERIFY(item);
        QCOMPARE(item->data(LogitLensPanel::TokenIdRole).toInt(), top);
        QCOMPARE(item->data(LogitLensPanel::TokenIdRole).toInt(), refArgmax[p].toInt());
        QCOMPARE(item->text(), tiny_->tokenizer().displayToken(top));
        // probability = softmax of the reference logits at the argmax
        const Eigen::VectorXd l = refLogits.row(p).transpose().cast<double>();
        const double prob = 1.0 / (l.array() - l.maxCoeff()).exp().sum();
        QVERIFY(std::abs(item->data(LogitLensPanel::ProbabilityRole).toDouble() - prob) <= 1e-5);
        QCOMPARE(item->background().color(), LogitLensPanel::probabilityColour(item->data(LogitLensPanel::ProbabilityRole).toDouble()));
    }
    // every row is filled, and each cell keeps k = 10 tokens
    for (int b = 0; b < 5; ++b)
        for (int p = 0; p < 18; ++p) QCOMPARE(panel.topTokensTable()[size_t(b)][size_t(p)].size(), size_t(10));
    // embed row: the lens of the embeddings differs from the final row somewhere
    int differ = 0;
    for (int p = 0; p < 18; ++p) differ += t->item(0, p)->text() != t->item(4, p)->text();
    QVERIFY(differ > 0);
}

void TestGuiEmbeddingSpace::lensTargetRankColouring() {
    LogitLensPanel panel;
    panel.setContext(tiny_, cache_, labels_);
    const int target = tiny_->tokenizer().encode(QStringLiteral(" the")).front();
    panel.targetField()->setText(tiny_->tokenizer().displayToken(target));
    QCOMPARE(panel.targetField()->tokenId().value_or(-1), target);
    panel.setTargetToken(target);
    panel.waitForIdle();
    const auto ranks = tokenRankings(*tiny_, *cache_, target);
    QCOMPARE(ranks.size(), size_t(5));
    for (int b = 0; b < 5; ++b)
        for (int p = 0; p < 18; ++p) {
            const TokenRank& r = ranks[size_t(b)][size_t(p)];
            QTableWidgetItem* item = panel.lensTable()->item(b, p);
            QCOMPARE(item->data(LogitLensPanel::TargetRankRole).toInt(), r.rank);
            QCOMPARE(item->background().color(), LogitLensPanel::rankColour(r.rank, 512));
            QTableWidgetItem* ri = panel.rankingsTable()->item(b, p);
            QCOMPARE(ri->data(LogitLensPanel::TargetRankRole).toInt(), r.rank);
            QVERIFY2(ri->text().startsWith(QStringLiteral("#%1 ").arg(r.rank + 1)), qPrintable(ri->text()));
        }
    // last row: the rank in the sorted model logits
    for (int p = 0; p < 18; ++p) {
        const RowVector l = cache_->logits.row(p);
        int rank = 0;
        for (int v = 0; v < 512; ++v) rank += l(v) > l(target) || (l(v) == l(target) && v < target);
        QCOMPARE(panel.lensTable()->item(4, p)->data(LogitLensPanel::TargetRankRole).toInt(), rank);
    }
    QCOMPARE(LogitLensPanel::rankColour(0, 512), LogitLensPanel::probabilityColour(1.0));
    QCOMPARE(LogitLensPanel::rankColour(511, 512), LogitLensPanel::probabilityColour(0.0));
    // back to probability colouring keeps the ranks in the cells
    panel.setColouring(LogitLensPanel::Colouring::TopProbability);
    QTableWidgetItem* item = panel.lensTable()->item(2, 3);
    QCOMPARE(item->background().color(), LogitLensPanel::probabilityColour(item->data(LogitLensPanel::ProbabilityRole).toDouble()));
}

void TestGuiEmbeddingSpace::lensCellListAndExports() {
    LogitLensPanel panel;
    panel.setContext(tiny_, cache_, labels_);
    panel.setTopK(7);
    panel.waitForIdle();
    panel.selectCell(1, 5);
    const auto cells = logitLens(*tiny_, *cache_, 7);
    const LensCell& c = cells[size_t(1 * 18 + 5)];
    QCOMPARE(panel.cellTokens()->rowCount(), 7);
    for (int i = 0; i < 7; ++i) {
        QCOMPARE(panel.cellTokens()->item(i, TopTokensView::TokenColumn)->data(Qt::UserRole).toInt(), c.top[size_t(i)].id);
        QCOMPARE(panel.cellTokens()->item(i, TopTokensView::ProbabilityColumn)->data(Qt::UserRole).toDouble(),
                 double(c.top[size_t(i)].prob));
    }
    QCOMPARE(panel.readout()->position(), 5);

    QTemporaryDir dir;
    const QString csv = dir.filePath("lens.csv");
    QCOMPARE(panel.exportCsv(csv), QString());
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 6); // header + 5 boundaries
    QVERIFY2(lines[0].startsWith(",0 "), qPrintable(lines[0]));
    QVERIFY2(lines[5].startsWith("L1mlp,"), qPrintable(lines[5]));
    const QString png = dir.filePath("lens.png");
    QCOMPARE(panel.exportFigure(png), QString());
    const QImage img(png);
    QVERIFY(img.width() > 800 && img.height() > 2 * (30 + 6 * 22) - 4);
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 2)
        for (int x = 0; x < img.width(); x += 2) colours.insert(img.pixel(x, y));
    QVERIFY(colours.size() > 30); // viridis cells and text, not a blank page
    QCOMPARE(panel.exportFigure(dir.filePath("lens.svg")), QString());
    QVERIFY(QFileInfo(dir.filePath("lens.svg")).size() > 1000);
    QCOMPARE(panel.exportFigure(dir.filePath("lens.pdf")), QString());
    QVERIFY(QFileInfo(dir.filePath("lens.pdf")).size() > 1000);
    QVERIFY(panel.exportFigure(dir.filePath("lens.bmp")).contains("unknown image format"));
}

void TestGuiEmbeddingSpace::componentReadout() {
    ComponentReadoutView view;
    view.setContext(tiny_, cache_, labels_);
    view.setComponent(ComponentReadoutView::Component::Head, 1, 2);
    view.setPosition(6);
    view.task().waitForIdle();
    const ComponentReadout r = readHead(*tiny_, *cache_, 1, 2, 6, 10);
    QCOMPARE(view.promotedTable()->rowCount(), 10);
    for (int i = 0; i < 10; ++i) {
        QCOMPARE(view.promotedTable()->item(i, 1)->data(Qt::UserRole).toInt(), r.promoted[size_t(i)].id);
        QCOMPARE(view.suppressedTable()->item(i, 1)->data(Qt::UserRole).toInt(), r.suppressed[size_t(i)].id);
    }
    // independent check of the first promoted score: z_h·W_O^h·W_U from the cache
    const int L = tiny_->config().d_head;
    const RowVector x = cache_->layers[1].z.row(6).segment(2 * L, L) * tiny_->layer(1).W_O.view().middleRows(2 * L, L);
    const RowVector logits = x * tiny_->globals().W_E.view().transpose();
    QVERIFY(std::abs(logits(r.promoted[0].id) - view.promotedTable()->item(0, 2)->data(Qt::UserRole).toDouble()) <= 1e-4);
    view.setComponent(ComponentReadoutView::Component::Mlp, 0);
    view.task().waitForIdle();
    const ComponentReadout m = readMlp(*tiny_, *cache_, 0, 6, 10);
    QCOMPARE(view.suppressedTable()->item(0, 1)->data(Qt::UserRole).toInt(), m.suppressed[0].id);
}

void TestGuiEmbeddingSpace::projectionsPairsInBackground() {
    ProjectionsPanel panel;
    panel.resize(1400, 900);
    panel.show();
    panel.setContext(tiny_, nullptr, {});
    panel.setTopK(20);
    QVERIFY(panel.findChild<QLabel*>("methodNote")->text().contains("Eᵀ stands in for E's inverse"));
    QVERIFY(panel.findChild<QLabel*>("methodNote")->text().contains("LayerNorm"));
    // the note states this model's convention (tiny-gpt2 ties W_U = W_Eᵀ)
    QVERIFY(panel.findChild<QLabel*>("methodNote")->text().endsWith(embeddingConvention(*tiny_)));
    QVERIFY(embeddingConvention(*tiny_).contains("ties its embeddings"));
    panel.setProjection(ProjectionsPanel::Kind::OV, 1, 3);
    panel.waitForIdle();
    const PairProjection ref = projectPairs(*tiny_, PairProjectionKind::OV, 1, 3, 20);
    QCOMPARE(panel.shownPairs().size(), size_t(20));
    QCOMPARE(panel.topTable()->rowCount(), 20);
    for (int i = 0; i < 20; ++i) {
        QCOMPARE(panel.shownPairs()[size_t(i)].row, ref.top[size_t(i)].row);
        QCOMPARE(panel.shownPairs()[size_t(i)].col, ref.top[size_t(i)].col);
        QCOMPARE(panel.topTable()->item(i, 1)->data(Qt::UserRole).toInt(), ref.top[size_t(i)].row);
        QCOMPARE(panel.topTable()->item(i, 2)->data(Qt::UserRole).toInt(), ref.top[size_t(i)].col);
    }
    const MatrixD S = denseCircuitScores(*tiny_, PairProjectionKind::OV, 1, 3);
    const QString err = compareTopK(panel.shownPairs(), sortedCells(S), S, 20, 1e-4 * S.cwiseAbs().maxCoeff());
    QVERIFY2(err.isEmpty(), qPrintable(err));
    QVERIFY(panel.isCached(ProjectionsPanel::Kind::OV, 1, 3));
    QVERIFY(!panel.isCached(ProjectionsPanel::Kind::QK, 1, 3));

    panel.setProjection(ProjectionsPanel::Kind::QK, 0, 1);
    panel.waitForIdle();
    const MatrixD Q = denseCircuitScores(*tiny_, PairProjectionKind::QK, 0, 1);
    QVERIFY(compareTopK(panel.shownPairs(), sortedCells(Q), Q, 20, 1e-4 * Q.cwiseAbs().maxCoeff()).isEmpty());
    QCOMPARE(panel.topTable()->horizontalHeaderItem(1)->text(), QString("query token"));
    // back to the cached head: shown at once, no background job
    panel.setProjection(ProjectionsPanel::Kind::OV, 1, 3);
    QCOMPARE(panel.shownPairs()[0].row, ref.top[0].row);
    QCOMPARE(panel.topTable()->rowCount(), 20);

    QTemporaryDir dir;
    QCOMPARE(panel.exportCsv(dir.filePath("ov.csv")), QString());
    QFile f(dir.filePath("ov.csv"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 21);
    QCOMPARE(lines[0], QString("#,source token,output token,score"));
}

void TestGuiEmbeddingSpace::projectionsNeuronRowAndReverse() {
    ProjectionsPanel panel;
    panel.show();
    panel.setContext(tiny_, nullptr, {});
    panel.setTopK(15);
    panel.setProjection(ProjectionsPanel::Kind::FFValue, 1, 42);
    panel.waitForIdle();
    const NeuronProjection n = projectNeuron(*tiny_, NeuronVectorKind::FFValue, 1, 42, 15);
    QCOMPARE(panel.topTable()->rowCount(), 15);
    QCOMPARE(panel.bottomTable()->rowCount(), 15);
    for (int i = 0; i < 15; ++i) {
        QCOMPARE(panel.topTable()->item(i, 1)->data(Qt::UserRole).toInt(), n.top[size_t(i)].id);
        QCOMPARE(panel.bottomTable()->item(i, 1)->data(Qt::UserRole).toInt(), n.bottom[size_t(i)].id);
    }
    QVERIFY(panel.bottomTable()->isVisibleTo(&panel));

    panel.setProjection(ProjectionsPanel::Kind::OV, 0, 2);
    const int src = tiny_->tokenizer().encode(QStringLiteral(" cat")).front();
    panel.queryRowToken(src);
    panel.waitForIdle();
    const auto row = projectPairsForRow(*tiny_, PairProjectionKind::OV, 0, 2, src, 15);
    QCOMPARE(panel.rowTable()->rowCount(), 15);
    for (int i = 0; i < 15; ++i) QCOMPARE(panel.rowTable()->item(i, 1)->data(Qt::UserRole).toInt(), row[size_t(i)].id);

    panel.reverseSearchFor(src);
    panel.waitForIdle();
    const ReverseSearch rs = reverseSearch(*tiny_, src, 15, 15);
    QCOMPARE(panel.reverseHeadsTable()->rowCount(), 8); // 2 layers × 4 heads
    QCOMPARE(panel.reverseHeadsTable()->item(0, 1)->text(), QStringLiteral("L%1H%2").arg(rs.heads[0].layer).arg(rs.heads[0].head));
    QCOMPARE(panel.reverseNeuronsTable()->rowCount(), 15);
    QCOMPARE(panel.reverseNeuronsTable()->item(0, 1)->text(),
             QStringLiteral("L%1N%2").arg(rs.neurons[0].layer).arg(rs.neurons[0].neuron));
}

void TestGuiEmbeddingSpace::compareSameModelIsIdentity() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    ModelComparePanel panel;
    ModelSession session;
    connectSession(panel, session);
    panel.resize(1400, 900);
    panel.setContext(tiny_, nullptr, {});
    panel.openSecondModel(testdata("tiny-gpt2"));
    panel.waitForIdle();
    QVERIFY(panel.secondModel());
    QVERIFY(panel.secondModel() != tiny_); // loaded separately
    for (MatrixHeatmap* h : {panel.embeddingHeatmap(), panel.featureHeatmap()}) {
        const Matrix& m = h->figure().values;
        QCOMPARE(m.rows(), Eigen::Index(2));
        QCOMPARE(m.cols(), Eigen::Index(2));
        for (int l = 0; l < 2; ++l) QVERIFY2(std::abs(m(l, l) - 1.0f) <= 1e-5, qPrintable(QString::number(m(l, l))));
        QVERIFY(m(0, 1) < 0.999f);
    }
    QVERIFY(panel.differenceIsIdentical());
    QVERIFY2(panel.differenceSummary()->text().startsWith("Identical"), qPrintable(panel.differenceSummary()->text()));
    QCOMPARE(panel.differenceTop()->rowCount(), 0);
    panel.setDifference(ModelComparePanel::Parameter::OV, 1, 2);
    panel.waitForIdle();
    QVERIFY(panel.differenceIsIdentical());
    QVERIFY(panel.differenceSummary()->text().contains("W_OV of head L1H2"));

    QTemporaryDir dir;
    QCOMPARE(panel.exportCsv(dir.filePath("sim.csv")), QString());
    QVERIFY(QFileInfo(dir.filePath("sim_embedding.csv")).size() > 10);
    QVERIFY(QFileInfo(dir.filePath("sim_feature.csv")).size() > 10);
    QCOMPARE(panel.exportFigures(dir.filePath("sim.png")), QString());
    QVERIFY(!QImage(dir.filePath("sim_embedding.png")).isNull());
}

void TestGuiEmbeddingSpace::compareF32WithF16() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    ModelComparePanel panel;
    ModelSession session;
    connectSession(panel, session);
    panel.setContext(tiny_, nullptr, {});
    panel.openSecondModel(testdata("tiny-gpt2/model.float16.safetensors"));
    panel.waitForIdle();
    QVERIFY(panel.secondModel());
    QCOMPARE(panel.secondModel()->info().storageDtype, QString("F16"));
    panel.setDifference(ModelComparePanel::Parameter::FFValue, 0, 3);
    panel.waitForIdle();
    const NeuronDiff d = diffNeuron(*tiny_, *panel.secondModel(), NeuronVectorKind::FFValue, 0, 3, 20);
    QVERIFY(!d.identical);
    QVERIFY(!panel.differenceIsIdentical());
    QVERIFY(d.maxAbsDiff > 0 && d.maxAbsDiff < 1e-3); // F16 rounding of the same weights
    QVERIFY2(panel.differenceSummary()->text().contains("differs"), qPrintable(panel.differenceSummary()->text()));
    QCOMPARE(panel.differenceTop()->rowCount(), 20);
    QCOMPARE(panel.differenceTop()->item(0, 1)->data(Qt::UserRole).toInt(), d.top[0].id);
    // F16 rounding keeps each layer closest to itself
    const Matrix& m = panel.embeddingHeatmap()->figure().values;
    QVERIFY(m(0, 0) > 0.999f && m(1, 1) > 0.999f);
}

void TestGuiEmbeddingSpace::mainWindowHasTheTabs() {
    MainWindow w;
    QStringList titles;
    for (int i = 0; i < w.tabs()->count(); ++i) titles << w.tabs()->tabText(i);
    QVERIFY2(titles.contains("Logit lens") && titles.contains("Embedding space") && titles.contains("Compare models"),
             qPrintable(titles.join(", ")));
}

QTEST_MAIN(TestGuiEmbeddingSpace)
#include "tst_gui_embedding_space.moc"
