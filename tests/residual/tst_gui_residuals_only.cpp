// The main window with a residuals-only cache (ATTNSCOPE_MEMORY_BUDGET so small that only the
// residual streams fit): the head grid starts with every layer pending (drawn hatched), fills in from
// background recomputation to exactly the thumbnails a full cache gives, the heatmap shows a layer that
// had to be recomputed ("Computing layer N…" meanwhile) bitwise equal to the full cache's pattern, and
// a superseded request does not overwrite a newer selection.

#include "app/main_window.h"
#include "model/transformer/cache_budget.h"
#include "model/transformer/forward.h"
#include "model/transformer/layer_recompute.h"
#include "support/reference_json.h"
#include "support/bitwise_equal.h"
#include "support/test_paths.h"
#include "model/transformer/prompt.h"
#include "views/attention/attention_heatmap.h"
#include "views/attention/head_detectors_panel.h"
#include "views/attention/head_grid.h"
#include "views/figures/palettes.h"
#include "model/formats/model_loader.h"

#include <QLabel>
#include <QSignalSpy>
#include <QStatusBar>
#include <QtTest>
#include <cstring>

using namespace attnscope;
using namespace attnscope::test;

namespace {
QString statusText(QMainWindow& w) {
    QStringList texts;
    for (QLabel* l : w.statusBar()->findChildren<QLabel*>()) texts << l->text();
    return texts.join('|');
}
} // namespace

class TestGuiResidualsOnly : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QCoreApplication::setOrganizationName("AttnScopeTest"); }

    void headGridFillsInAndHeatmapShowsRecomputedLayers() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const QJsonObject ref = readJsonObject(testdata("tiny-gpt2/reference.json"));
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        // the budget: the residual streams and one recomputed layer of the 18-token reference prompt
        ForwardOptions appOpt;
        appOpt.allLogits = false;
        const CacheEstimate e = estimateCacheBytes(loadModel(testdata("tiny-gpt2"))->config(), 18, appOpt);
        qputenv("ATTNSCOPE_MEMORY_BUDGET", QByteArray::number(e.residualsOnlyTotal(1, true)));
        QSignalSpy ran(&w.session(), &ModelSession::forwardFinished);
        w.selectHead(0, 0);
        w.openModel(testdata("tiny-gpt2"), ref["prompt"].toString());
        QVERIFY(ran.wait(30000));
        qunsetenv("ATTNSCOPE_MEMORY_BUDGET");
        const auto cache = w.session().cache();
        QCOMPARE(cache->nPositions(), 18);
        QVERIFY(cache->residualsOnly());
        QCOMPARE(cache->recomputer->capacity(), 1);

        // right after the run: the grid's 2 layers are pending and drawn hatched, not as thumbnails
        HeadGrid* grid = w.headGrid();
        QCOMPARE(grid->layers(), 2);
        QCOMPARE(grid->heads(), 4);
        // (the background fill may already have delivered a layer when the spy returns: the pending
        // drawing is checked on a grid of the same shape held in the pending state)
        QVERIFY(grid->pendingLayers() <= 2);
        HeadGrid pendingGrid;
        pendingGrid.resize(grid->size());
        pendingGrid.beginPatterns(2, 4);
        QCOMPARE(pendingGrid.pendingLayers(), 2);
        QVERIFY(pendingGrid.isLayerPending(0) && pendingGrid.isLayerPending(1));
        const QImage pendingShot = pendingGrid.grab().toImage();
        const QRect cell = pendingGrid.cellRect(1, 2);
        // grey only (masked grey, hatch lines, the "…"): no viridis colour anywhere in a pending cell
        int masked = 0;
        for (int y = cell.top(); y <= cell.bottom(); ++y)
            for (int x = cell.left(); x <= cell.right(); ++x) {
                const QColor c = pendingShot.pixelColor(x, y);
                QVERIFY2(std::abs(c.red() - c.green()) <= 8 && std::abs(c.green() - c.blue()) <= 8,
                         qPrintable(c.name()));
                masked += c == maskedCellColor();
            }
        QVERIFY(masked > cell.width() * cell.height() / 3);

        w.waitForLayers();
        QCOMPARE(grid->pendingLayers(), 0);
        // the filled grid is pixel for pixel the grid of a full cache
        const ActivationCache full = runForward(*w.session().model(), cache->tokens, appOpt);
        QVERIFY(!full.residualsOnly());
        HeadGrid reference;
        reference.resize(grid->size());
        reference.setPatterns(2, 4, [&](int l, int h) { return full.layers[size_t(l)].pattern[size_t(h)]; });
        reference.setSelectedHead(grid->selectedHead()->first, grid->selectedHead()->second);
        const QImage filled = grid->grab().toImage(), expected = reference.grab().toImage();
        QCOMPARE(filled.size(), expected.size());
        QVERIFY(filled == expected);
        QVERIFY(filled != pendingShot);
        // the heatmap of the initial selection (L0H0) came from a recomputed layer
        QVERIFY(same(w.heatmap()->pattern(), full.layers[0].pattern[0]));
        QVERIFY(w.heatmap()->title().contains("layer 0, head 0"));

        // L1 is usually in the LRU (last filled) and shown at once; when the selected-layer task finished
        // after the grid's L1 (a loaded machine), L0 is there instead and L1 is computed now. Either way
        // L0 is then neither cached nor held.
        w.selectHead(1, 3);
        if (w.isComputingLayers()) w.waitForLayers();
        QVERIFY(same(w.heatmap()->pattern(), full.layers[1].pattern[3]));
        QVERIFY(!cache->isLayerReady(0));
        const int before = cache->recomputer->recomputations();
        w.selectHead(0, 2);
        QVERIFY(w.isComputingLayers());
        QVERIFY2(statusText(w).contains("Computing layer 0…"), qPrintable(statusText(w)));
        QVERIFY(w.heatmap()->title().contains("layer 1, head 3")); // nothing computed on the GUI thread
        w.waitForLayers();
        QCOMPARE(cache->recomputer->recomputations(), before + 1);
        QVERIFY(w.heatmap()->title().contains("layer 0, head 2"));
        QVERIFY(same(w.heatmap()->pattern(), full.layers[0].pattern[2]));
        QVERIFY(statusText(w).contains("Layer 0 recomputed."));

        // a request the user moved on from does not overwrite the newer selection
        w.selectHead(1, 1);  // L1 evicted by L0: computed in the background
        QVERIFY(w.isComputingLayers());
        w.selectHead(0, 3);  // L0 is held by the heatmap: shown at once
        QVERIFY(same(w.heatmap()->pattern(), full.layers[0].pattern[3]));
        w.waitForLayers();
        QCOMPARE(w.layer(), 0);
        QCOMPARE(w.head(), 3);
        QVERIFY(same(w.heatmap()->pattern(), full.layers[0].pattern[3]));
        QVERIFY(cache->recomputer->cachedLayers() <= 1);
    }

    void headDetectorsScoreInTheBackgroundOnceShown() {
        auto model = loadModel(demoDir());
        const std::vector<int> ids =
            tokenizePrompt(model->tokenizer(), QStringLiteral("The cat sat on the mat. The cat sat on the mat."), true);
        const ActivationCache full = runForward(*model, ids);
        ForwardOptions opt;
        opt.residualsOnly = true;
        opt.recomputedLayers = 1;
        auto lean = std::make_shared<const ActivationCache>(runForward(*model, ids, opt));
        HeadDetectorsView view;
        view.setContext(model, lean);
        // hidden: nothing computed yet, the grid waits with every layer pending
        QVERIFY(view.promptScoresPending());
        QVERIFY(!view.scores(HeadDetector::PreviousToken));
        QCOMPARE(view.headGrid()->pendingLayers(), 2);
        QCOMPARE(lean->recomputer->recomputations(), 0);
        view.show();
        view.waitForPromptScores();
        QVERIFY(!view.promptScoresPending());
        QCOMPARE(view.headGrid()->pendingLayers(), 0);
        QCOMPARE(lean->recomputer->recomputations(), 2); // each layer once for all three detectors
        for (HeadDetector d : {HeadDetector::PreviousToken, HeadDetector::DuplicateToken, HeadDetector::FirstToken}) {
            QVERIFY(view.scores(d));
            QVERIFY(same(view.scores(d)->scores, scoreHeads(full, d).scores));
        }
        QVERIFY(view.scores(HeadDetector::PreviousToken)->scores.maxCoeff() > 0);
    }
};

QTEST_MAIN(TestGuiResidualsOnly)
#include "tst_gui_residuals_only.moc"
