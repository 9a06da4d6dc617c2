// The Circuits tab offscreen on the demo model. Each view's numbers are compared with the model/ functions
// called directly on the same inputs (bitwise where the view only displays them): the z sweep of a repeated
// random-token prompt corrupted in its first half puts the previous-token head L0H0 and the induction heads
// L1H1–L1H3 on top (the demo model's known circuit, tst_activation_patching); the sweep fills in progressively
// and Cancel stops it; a token-length mismatch names both tokenizations; path patching, the flow graph (an edge's
// per-head split, a node's logit lens, JSON and image export), the attention-score split (cells sum to the
// cached score) and the composition scores (K-composition of L0H0 into the induction heads above the random
// baseline; the virtual OV circuit) equal their library results.

#include "model/analysis/circuits/circuits_json.h"
#include "model/analysis/attention/head_detectors.h"
#include "model/analysis/embedding_space/logit_lens.h"
#include "model/analysis/common/top_tokens.h"
#include "model/analysis/gradients/attribution_patching.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/transformer/prompt.h"
#include "support/handmade_model.h"
#include "support/image_checks.h"
#include "support/induction_pair.h"
#include "support/test_paths.h"
#include "views/circuits/attend_view.h"
#include "views/figures/chart_figure.h"
#include "views/circuits/circuit_inputs.h"
#include "views/circuits/circuits_panel.h"
#include "views/circuits/edge_attribution_view.h"
#include "views/circuits/edge_graph_plot.h"
#include "views/circuits/estimate_scatter.h"
#include "views/circuits/composition_view.h"
#include "views/figures/figure_export.h"
#include "views/circuits/flow_graph_plot.h"
#include "views/circuits/flow_view.h"
#include "views/figures/matrix_heatmap.h"
#include "views/circuits/path_patching_view.h"
#include "views/circuits/patching_view.h"
#include "views/circuits/saliency_view.h"
#include "views/circuits/token_chips.h"
#include "views/common/token_picker.h"

#include <QFile>
#include <QFontMetricsF>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTableWidget>
#include <QTabWidget>
#include <qcustomplot.h>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

using namespace attnscope;
using namespace attnscope::test;

namespace {

bool sameOrBothNan(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

/// Every cell of `got` equals `want` (NaN where it is NaN).
bool sameGrid(const Matrix& got, const Matrix& want) {
    if (got.rows() != want.rows() || got.cols() != want.cols()) return false;
    for (Eigen::Index r = 0; r < got.rows(); ++r)
        for (Eigen::Index c = 0; c < got.cols(); ++c)
            if (!sameOrBothNan(got(r, c), want(r, c))) return false;
    return true;
}

/// Pearson's r written out: Σ(x − x̄)(y − ȳ) / √(Σ(x − x̄)² Σ(y − ȳ)²), in long double.
double pearson(const std::vector<double>& x, const std::vector<double>& y) {
    long double mx = 0, my = 0;
    for (size_t i = 0; i < x.size(); ++i) mx += x[i], my += y[i];
    mx /= x.size();
    my /= y.size();
    long double sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    return double(sxy / std::sqrt(sxx * syy));
}

} // namespace

class TestGuiCircuits : public QObject {
    Q_OBJECT
    std::shared_ptr<const Model> model_;
    std::shared_ptr<const ActivationCache> cache_;
    InductionPair pair_;
    std::unique_ptr<CircuitsPanel> panel_;
    QTemporaryDir dir_;

    PatchingOptions zOptions() const {
        PatchingOptions o;
        o.hook = PatchHook::Z;
        o.metric.kind = PatchingMetricKind::LogitDiff;
        o.metric.token = pair_.answer;
        o.metric.counterToken = pair_.corruptAnswer;
        return o;
    }

private slots:
    void initTestCase() {
        model_ = loadModel(demoDir());
        pair_ = inductionPair(model_->config(), 12);
        cache_ = std::make_shared<const ActivationCache>(runForward(*model_, pair_.clean));
        panel_ = std::make_unique<CircuitsPanel>();
        panel_->resize(1400, 900);
        panel_->show();
        panel_->setContext(model_, cache_, tokenLabels(model_->tokenizer(), pair_.clean));
        panel_->inputs()->setTokenIds(pair_.clean, pair_.corrupt);
        panel_->inputs()->tokenPicker()->setTokenId(pair_.answer);
        panel_->inputs()->counterPicker()->setTokenId(pair_.corruptAnswer);
    }

    void zSweepPutsTheCircuitOnTop() {
        PatchingView* v = panel_->patching();
        v->setHook(PatchHook::Z);
        v->setByPosition(false);
        v->setAblation(AblationKind::None);
        v->run();
        v->task().waitForIdle();
        QVERIFY2(v->statusText().startsWith("Done"), qPrintable(v->statusText()));
        const ModelConfig& cfg = model_->config();
        const PatchingSweep want = runPatchingSweep(*model_, preparePatchingRuns(*model_, pair_.clean, pair_.corrupt), zOptions());
        const Matrix grid = patchingGrid(cfg, int(pair_.clean.size()), want, true);
        const MatrixFigure& f = v->heatmap()->figure();
        QCOMPARE(f.values.rows(), Eigen::Index(cfg.n_layers));
        QCOMPARE(f.values.cols(), Eigen::Index(cfg.n_heads));
        for (int l = 0; l < cfg.n_layers; ++l)
            for (int h = 0; h < cfg.n_heads; ++h) QVERIFY(sameOrBothNan(f.values(l, h), grid(l, h)));
        QCOMPARE(f.rowLabels.front(), QString("L0"));
        QCOMPARE(f.colLabels.back(), QString("H%1").arg(cfg.n_heads - 1));
        QCOMPARE(f.rowTitle, QString("layer"));
        // the four circuit heads carry the largest effects
        std::vector<std::pair<float, QString>> ranked;
        for (int l = 0; l < cfg.n_layers; ++l)
            for (int h = 0; h < cfg.n_heads; ++h) ranked.push_back({std::abs(f.values(l, h)), QString("L%1H%2").arg(l).arg(h)});
        std::sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.first > b.first; });
        QSet<QString> top;
        for (int i = 0; i < 4; ++i) top.insert(ranked[size_t(i)].second);
        QCOMPARE(top, (QSet<QString>{"L0H0", "L1H1", "L1H2", "L1H3"}));
        // both endpoints shown, as the library computes them
        QVERIFY2(v->endpointsText().contains(QString::number(want.clean, 'g', 6)), qPrintable(v->endpointsText()));
        QVERIFY2(v->endpointsText().contains(QString::number(want.corrupt, 'g', 6)), qPrintable(v->endpointsText()));
        QVERIFY(want.clean > want.corrupt + 1); // the clean run predicts the answer, the corrupted does not
        // the hover text reads the cell
        QCOMPARE(v->heatmap()->describeCell(1, 2).section(':', 0, 0), QString("1 L1, 2 H2"));
        // raw metric instead of normalised
        v->setNormalised(false);
        QCOMPARE(v->heatmap()->figure().values(1, 2), float(want.cells[size_t(cfg.n_heads + 2)].metric));
        v->setNormalised(true);
    }

    void sweepFillsInAndCancelStops() {
        PatchingView* v = panel_->patching();
        v->setHook(PatchHook::ResidPre);
        QList<int> seen; // cells shown at each progressive update
        connect(v, &PatchingView::cellsShownChanged, this, [&](int n) { seen << n; });
        v->run();
        v->task().waitForIdle();
        const int S = int(pair_.clean.size()), total = model_->config().n_layers * S;
        QCOMPARE(v->cellsShown(), total);
        QVERIFY2(seen.contains(S) && seen.contains(total), qPrintable(QString::number(seen.size()))); // layer 0 first, then all
        disconnect(v, &PatchingView::cellsShownChanged, this, nullptr);

        // a long by-position sweep cancelled right after it started: it stops before its cells are done, says so,
        // and NaN marks what was not run
        const InductionPair longPair = inductionPair(model_->config(), 120);
        panel_->inputs()->setTokenIds(longPair.clean, longPair.corrupt);
        v->setHook(PatchHook::Z);
        v->setByPosition(true);
        const int longTotal = model_->config().n_layers * model_->config().n_heads * int(longPair.clean.size());
        v->run();
        QVERIFY(v->task().isRunning());
        v->cancel();
        v->task().waitForIdle();
        QVERIFY(!v->task().isRunning());
        QVERIFY2(v->cellsShown() < longTotal, qPrintable(QString("%1 of %2").arg(v->cellsShown()).arg(longTotal)));
        QVERIFY2(v->statusText().startsWith("Cancelled after"), qPrintable(v->statusText()));
        const Matrix& grid = v->heatmap()->figure().values;
        QCOMPARE(grid.rows(), Eigen::Index(model_->config().n_layers * model_->config().n_heads));
        QVERIFY(std::isnan(grid(grid.rows() - 1, grid.cols() - 1))); // the last cell was not run
        v->setByPosition(false);
        panel_->inputs()->setTokenIds(pair_.clean, pair_.corrupt);
    }

    void mismatchNamesBothTokenizations() {
        CircuitsPanel p;
        p.setContext(model_, cache_, {});
        const QString clean = "When Mary and John went to the store", corrupt = "When Bartholomew and John went to the store";
        const Tokenizer& tok = model_->tokenizer();
        QCOMPARE(cache_->tokens.front(), *tok.bosId()); // the corrupted prompt is tokenized as the clean run was: BOS first
        const std::vector<int> a = tokenizePrompt(tok, clean, true), b = tokenizePrompt(tok, corrupt, true);
        QVERIFY(a.size() != b.size());
        p.inputs()->setPrompts(clean, corrupt);
        p.inputs()->tokenPicker()->setTokenId(5);
        p.inputs()->counterPicker()->setTokenId(6);
        p.patching()->run();
        const QString m = p.patching()->statusText();
        QVERIFY2(m.contains(QString("the clean prompt has %1").arg(a.size())), qPrintable(m));
        QVERIFY2(m.contains(QString("the corrupted prompt %1").arg(b.size())), qPrintable(m));
        for (int id : b) QVERIFY2(m.contains(tok.displayToken(id)), qPrintable(tok.displayToken(id)));
        for (int id : a) QVERIFY2(m.contains(tok.displayToken(id)), qPrintable(tok.displayToken(id)));
        QCOMPARE(p.inputs()->tokenizationText(), m); // shown under the prompts too
        QVERIFY(!p.patching()->sweep());
    }

    /// Attribution patching beside activation patching: the estimate heatmap holds runAttributionPatching's cells,
    /// both heatmaps share one colour scale, the scatter's correlation is Pearson's r of the two sweeps computed
    /// here, a click on a point names its cell, the scatter exports as a drawn image of the asked size; AtP* on
    /// q equals its library result; ablations are refused with the reason.
    void attributionEstimateBesideTheSweep() {
        PatchingView* v = panel_->patching();
        panel_->subTabs()->setCurrentWidget(v);
        v->setHook(PatchHook::Z);
        v->setByPosition(false);
        v->setAblation(AblationKind::Zero);
        v->setMethod(PatchingMethod::Attribution);
        QCOMPARE(v->ablation(), AblationKind::None); // the estimates patch only
        v->setCompare(true);
        v->run();
        v->task().waitForIdle();
        QVERIFY2(v->statusText().startsWith("Done"), qPrintable(v->statusText()));
        QVERIFY(v->sweep() && v->estimate());
        const ModelConfig& cfg = model_->config();
        const int S = int(pair_.clean.size());
        const PatchingRuns runs = preparePatchingRuns(*model_, pair_.clean, pair_.corrupt);
        const PatchingSweep actual = runPatchingSweep(*model_, runs, zOptions());
        const PatchingSweep estimate = runAttributionPatching(*model_, runs, zOptions());
        QVERIFY(sameGrid(v->estimateHeatmap()->figure().values, patchingGrid(cfg, S, estimate, true)));
        QVERIFY(sameGrid(v->heatmap()->figure().values, patchingGrid(cfg, S, actual, true)));
        QCOMPARE(v->estimateHeatmap()->figure().title, QString("z AtP (denoise)"));
        QCOMPARE(v->heatmap()->figure().title, QString("z patching (denoise)"));
        // one colour scale: ± the largest |value| of either
        double limit = 0;
        for (size_t i = 0; i < actual.cells.size(); ++i)
            limit = std::max({limit, std::abs(double(float(actual.cells[i].normalised))), std::abs(double(float(estimate.cells[i].normalised)))});
        QCOMPARE(v->heatmap()->colorRange().upper, limit);
        QCOMPARE(v->estimateHeatmap()->colorRange().upper, limit);
        QCOMPARE(v->estimateHeatmap()->colorRange().lower, -limit);

        // the scatter: every cell, Pearson's r of the two sweeps, in the title
        EstimateScatter* sc = v->scatter();
        std::vector<double> x, y;
        for (size_t i = 0; i < actual.cells.size(); ++i) {
            x.push_back(actual.cells[i].normalised);
            y.push_back(estimate.cells[i].normalised);
        }
        QCOMPARE(sc->pointCount(), cfg.n_layers * cfg.n_heads);
        const double r = pearson(x, y);
        QVERIFY2(std::abs(sc->correlation() - r) < 1e-12, qPrintable(QString("%1 vs %2").arg(sc->correlation()).arg(r)));
        QVERIFY2(sc->titleText().contains(QString("Pearson r = %1").arg(r, 0, 'f', 3)), qPrintable(sc->titleText()));
        QVERIFY2(v->statusText().contains(QString("Pearson r = %1").arg(r, 0, 'f', 3)), qPrintable(v->statusText()));
        qInfo() << "z, attribution patching vs activation patching: r =" << r;
        // a click on L1H2's point names it
        QCoreApplication::processEvents();
        sc->replot();
        const int point = cfg.n_heads + 2;
        QCOMPARE(sc->pointCell(point), point);
        QCOMPARE(sc->pointActual(point), actual.cells[size_t(point)].normalised);
        QCOMPARE(sc->pointAt(sc->pointPixel(point)), point);
        sc->clickAt(sc->pointPixel(point));
        QVERIFY2(v->selectedPointText().startsWith("Selected: L1 H2, every position: actual "), qPrintable(v->selectedPointText()));
        // export: the asked size, points and text drawn
        QString error;
        const QString png = dir_.filePath("scatter.png");
        QVERIFY2(exportFigure(*sc->figure(), png, QSize(640, 480), 1.0, &error), qPrintable(error));
        const QImage img(png);
        QCOMPARE(img.size(), QSize(640, 480));
        QVERIFY2(distinctColours(img) > 10, qPrintable(QString::number(distinctColours(img))));
        const QString pdf = dir_.filePath("scatter.pdf");
        QVERIFY2(exportFigure(*sc->figure(), pdf, QSize(640, 480), 1.0, &error), qPrintable(error));
        QVERIFY(QFileInfo(pdf).size() > 1000);

        // AtP* on q, the estimate alone: its cells, no scatter
        v->setHook(PatchHook::Q);
        v->setMethod(PatchingMethod::AtpStar);
        v->setCompare(false);
        v->run();
        v->task().waitForIdle();
        QVERIFY2(v->statusText().startsWith(QString("Done: %1 cells estimated by AtP*").arg(cfg.n_layers * cfg.n_heads)), qPrintable(v->statusText()));
        PatchingOptions q = zOptions();
        q.hook = PatchHook::Q;
        QVERIFY(!v->sweep());
        QVERIFY(sameGrid(v->estimateHeatmap()->figure().values, patchingGrid(cfg, S, runAttributionPatching(*model_, runs, q, true), true)));
        QVERIFY(!v->heatmap()->isVisibleTo(v));
        QCOMPARE(sc->pointCount(), 0);

        // an ablation asked for anyway is refused with the reason
        v->setAblation(AblationKind::Zero);
        v->run();
        QVERIFY2(v->statusText().startsWith("Attribution patching and AtP* estimate patching only; choose activation patching for a zero ablation"),
                 qPrintable(v->statusText()));
        v->setMethod(PatchingMethod::Activation);
        v->setAblation(AblationKind::None);
        v->setHook(PatchHook::Z);
    }

    /// A gradient that overflows (W_U's answer row at ±3e38, read by a zero residual stream: the logits are finite,
    /// the gradient at the last residual, through ln_final's 1/√eps, is not) is shown as the message that names the
    /// hook, never as a blank: in the patching estimate and in saliency.
    void nonFiniteGradientIsShown() {
        HandmadeWeights w = zeroWeights(gpt2Config(2, 2, 8, 16, 8));
        for (int d = 0; d < 8; ++d) w.W_U_T(1, d) = d % 2 ? 3e38f : -3e38f;
        const std::shared_ptr<const Model> m = makeModel(std::move(w));
        const std::vector<int> clean{3, 4, 5, 6}, corrupt{3, 7, 5, 6};
        CircuitInputs inputs;
        inputs.setContext(m, std::make_shared<const ActivationCache>(runForward(*m, clean)));
        inputs.setTokenIds(clean, corrupt);
        inputs.tokenPicker()->setTokenId(1);
        inputs.counterPicker()->setTokenId(2);
        PatchingView v(&inputs);
        v.setContext(m);
        v.setMethod(PatchingMethod::Attribution);
        v.run();
        v.task().waitForIdle();
        const QString want = "The gradient is not finite from blocks.1.hook_resid_post on";
        QVERIFY2(v.statusText().startsWith(want), qPrintable(v.statusText()));
        QVERIFY2(v.estimateHeatmap()->emptyText().startsWith("No estimate: " + want), qPrintable(v.estimateHeatmap()->emptyText()));
        QVERIFY(v.estimateHeatmap()->isShowingEmptyState());
        // compared: the activation sweep still runs, the estimate's place says why it is missing
        v.setCompare(true);
        v.run();
        v.task().waitForIdle();
        QVERIFY(v.sweep() && v.sweep()->cellsDone == 2 * 2);
        QVERIFY2(v.estimateError().startsWith(want), qPrintable(v.estimateError()));
        QVERIFY2(v.statusText().contains("The estimate failed: " + want), qPrintable(v.statusText()));
        QVERIFY2(v.estimateHeatmap()->emptyText().startsWith("No estimate: " + want), qPrintable(v.estimateHeatmap()->emptyText()));
        // saliency on the same model: the message in place of the chips
        SaliencyView sv(&inputs);
        sv.setContext(m);
        sv.setMethod(SaliencyMethod::IntegratedGradients);
        sv.setSteps(4);
        sv.run();
        sv.task().waitForIdle();
        const QString ig = "The gradient is not finite from blocks.1.hook_resid_post on at α = 0.125.";
        QCOMPARE(sv.statusText(), ig);
        QCOMPARE(sv.chips()->emptyText(), "No attribution: " + ig);
        QVERIFY(!sv.chips()->hasFigureData());
        // gradient × input: the library refuses the infinite gradient, naming the hook
        sv.setMethod(SaliencyMethod::GradientTimesInput);
        sv.run();
        sv.task().waitForIdle();
        QCOMPARE(sv.chips()->emptyText(), QStringLiteral("No attribution: The gradient is not finite from blocks.1.hook_resid_post on."));
        QVERIFY(!sv.chips()->hasFigureData());
    }

    /// The saliency chips hold attributeInput's numbers (integrated gradients from the zero baseline, gradient × input
    /// from a token baseline), the completeness line its sums, the chips' colours the sign and share of max|a|; the
    /// export is the asked size and drawn; a kl metric and a missing baseline token are refused; Cancel stops a long run.
    void saliencyChipsEqualAttributeInput() {
        SaliencyView* v = panel_->saliency();
        panel_->subTabs()->setCurrentWidget(v);
        QVERIFY(panel_->inputs()->isEnabled());
        v->setMethod(SaliencyMethod::IntegratedGradients);
        v->setSteps(32);
        v->setBaselineToken(-1);
        v->run();
        v->task().waitForIdle();
        QVERIFY2(v->statusText().startsWith("Done"), qPrintable(v->statusText()));
        InputAttributionOptions o;
        o.metric = zOptions().metric;
        const InputAttribution want = attributeInput(*model_, pair_.clean, o);
        TokenChips* c = v->chips();
        QCOMPARE(c->values().size(), pair_.clean.size());
        for (size_t i = 0; i < want.attributions.size(); ++i) QCOMPARE(c->values()[i], want.attributions[i]);
        QCOMPARE(c->tokens(), tokenLabels(model_->tokenizer(), pair_.clean));
        const QString line = v->completenessText();
        for (double x : {want.sum, want.metricInput, want.metricBaseline, want.metricInput - want.metricBaseline})
            QVERIFY2(line.contains(QString::number(x, 'g', 6)), qPrintable(line + " lacks " + QString::number(x, 'g', 6)));
        QVERIFY2(line.contains(QString("error %1").arg(want.completenessError, 0, 'g', 3)), qPrintable(line));
        QVERIFY2(want.completenessError < 0.01, qPrintable(QString::number(want.completenessError))); // 32 steps are enough here
        qInfo() << "integrated gradients, 32 steps: completeness error" << want.completenessError;
        // colours: the largest |a| at full intensity of its sign, 0 white
        double maxAbs = 0;
        for (double a : want.attributions) maxAbs = std::max(maxAbs, std::abs(a));
        QCOMPARE(c->maxAbs(), maxAbs);
        const QColor red = TokenChips::chipColor(maxAbs, maxAbs), blue = TokenChips::chipColor(-maxAbs, maxAbs),
                     white = TokenChips::chipColor(0, maxAbs), pale = TokenChips::chipColor(0.2 * maxAbs, maxAbs);
        QVERIFY(red.red() > 150 && red.blue() < 80);
        QVERIFY(blue.blue() > 80 && blue.red() < 40);
        QVERIFY(white.red() > 240 && white.green() > 240 && white.blue() > 240);
        QVERIFY(pale.red() > red.red() && pale.green() > red.green()); // lighter than full red
        // hover names a chip
        QCoreApplication::processEvents();
        QCOMPARE(c->chipAt(c->chipRect(3).center()), 3);
        QCOMPARE(c->describeChip(3), QString("position 3 %1: %2").arg(c->tokens()[3]).arg(want.attributions[3], 0, 'g', 6));
        // export: the asked size, the chips' colours in it
        QString error;
        const QString png = dir_.filePath("saliency.png");
        QVERIFY2(exportFigure(*c, png, QSize(900, 200), 1.0, &error), qPrintable(error));
        const QImage img(png);
        QCOMPARE(img.size(), QSize(900, 200));
        QVERIFY2(distinctColours(img, 1) > 20, qPrintable(QString::number(distinctColours(img, 1))));
        const QString svg = dir_.filePath("saliency.svg");
        QVERIFY2(exportFigure(*c, svg, QSize(900, 200), 1.0, &error), qPrintable(error));
        QVERIFY(QFileInfo(svg).size() > 1000);

        // gradient × input from a token baseline
        const int the = int(pair_.clean[2]);
        v->setMethod(SaliencyMethod::GradientTimesInput);
        v->setBaselineToken(the);
        v->run();
        v->task().waitForIdle();
        o.method = SaliencyMethod::GradientTimesInput;
        o.baselineToken = the;
        const InputAttribution gxi = attributeInput(*model_, pair_.clean, o);
        for (size_t i = 0; i < gxi.attributions.size(); ++i) QCOMPARE(c->values()[i], gxi.attributions[i]);
        QCOMPARE(c->values()[2], 0.0); // the baseline's own token: e − b = 0
        QVERIFY2(c->figureTitle().contains("gradient × input (baseline " + model_->tokenizer().displayToken(the) + ")"),
                 qPrintable(c->figureTitle()));

        // refusals
        v->setBaselineToken(-1);
        panel_->inputs()->setMetricKind(PatchingMetricKind::KL);
        v->run();
        QVERIFY2(v->statusText().startsWith("Saliency needs a metric of the clean run alone"), qPrintable(v->statusText()));
        panel_->inputs()->setMetricKind(PatchingMetricKind::LogitDiff);
        v->setBaselineToken(0);
        v->baselinePicker()->setText("#999999");
        v->run();
        QVERIFY2(v->statusText().startsWith("Baseline: pick the token whose embedding replaces every token (") &&
                     v->statusText().contains(v->baselinePicker()->problem()),
                 qPrintable(v->statusText()));
        // cancelled: a long prompt, many steps
        v->setBaselineToken(-1);
        v->setMethod(SaliencyMethod::IntegratedGradients);
        v->setSteps(4000);
        const InductionPair longPair = inductionPair(model_->config(), 120);
        panel_->inputs()->setTokenIds(longPair.clean, longPair.corrupt);
        v->run();
        QVERIFY(v->task().isRunning());
        v->cancel();
        v->task().waitForIdle();
        QVERIFY2(v->statusText().startsWith("Cancelled"), qPrintable(v->statusText()));
        panel_->inputs()->setTokenIds(pair_.clean, pair_.corrupt);
        v->setSteps(32);
        panel_->subTabs()->setCurrentWidget(panel_->patching());
    }

    /// The edge-attribution circuit graph on a hand-made EdgeAttribution of the demo's shape: input above layer 0's
    /// heads above MLP0 above layer 1 above the logits, widths ∝ |score|, red for positive and blue for negative
    /// scores, hover finds each edge and names it, the values table and the export; an index outside the graph is
    /// refused.
    void edgeGraphDrawsACircuit() {
        const ModelConfig& cfg = model_->config();
        QCOMPARE(cfg.n_layers, 2);
        EdgeAttribution a;
        using S = EdgeSender::Kind;
        using R = EdgeReceiver::Kind;
        a.graph.senders.push_back({S::Input, -1, -1});
        for (int l = 0; l < 2; ++l) {
            for (int h = 0; h < cfg.n_heads; ++h) a.graph.senders.push_back({S::Head, l, h});
            a.graph.senders.push_back({S::Mlp, l, -1});
        }
        const int input = 0, l0h0 = 1, mlp0 = 1 + cfg.n_heads, l1h1 = 3 + cfg.n_heads;
        a.graph.receivers = {{R::K, 1, 1}, {R::Q, 1, 1}, {R::Logits, -1, -1}, {R::Mlp, 0, -1}};
        a.graph.edges = {{l0h0, 0, 2.0}, {input, 1, -1.0}, {l1h1, 2, 4.0}, {mlp0, 2, -0.5}, {input, 3, 0.25}};
        EdgeGraphPlot plot;
        plot.resize(800, 600);
        plot.show();
        plot.setCircuit(cfg, a, {2, 0, 1, 3}, "hand-made circuit");
        QCOMPARE(plot.edgeCount(), 4);
        QCOMPARE(plot.edge(0).score, 4.0);
        QCOMPARE(plot.edgeWidth(0), 6.0);
        for (int i = 0; i < 4; ++i) QCOMPARE(plot.edgeWidth(i) - 0.5, 5.5 * std::abs(plot.edge(i).score) / 4.0);
        for (int i = 0; i < 4; ++i) {
            const QColor c = plot.edgeColor(i);
            QVERIFY2(plot.edge(i).score > 0 ? c.red() > c.blue() + 60 : c.blue() > c.red() + 60, qPrintable(c.name()));
        }
        // layers top to bottom
        const double yInput = plot.senderCenter({S::Input, -1, -1}).y(), yL0 = plot.senderCenter({S::Head, 0, 3}).y(),
                     yM0 = plot.senderCenter({S::Mlp, 0, -1}).y(), yL1 = plot.senderCenter({S::Head, 1, 0}).y(),
                     yM1 = plot.senderCenter({S::Mlp, 1, -1}).y();
        QVERIFY(yInput < yL0 && yL0 < yM0 && yM0 < yL1 && yL1 < yM1 && yM1 < plot.logitsCenter().y());
        QVERIFY(plot.senderCenter({S::Head, 0, 0}).x() < plot.senderCenter({S::Head, 0, 1}).x());
        // hover: each edge at its middle, named with its score
        for (int i = 0; i < 4; ++i) QCOMPARE(plot.edgeAt(plot.edgePixel(i)), i);
        QCOMPARE(plot.edgeAt(QPointF(2, 590)), -1);
        QCOMPARE(plot.describeEdge(1), QString("L0H0 → L1H1 k: 2"));
        QCOMPARE(plot.describeEdge(2), QString("input → L1H1 q: -1"));
        const ValueTable t = plot.figureValues();
        QCOMPARE(t.cells.size(), size_t(4));
        QCOMPARE(t.cells[3], (QStringList{"MLP0", "logits", "-0.5"}));
        // export: the asked size, red and blue strokes in it
        QString error;
        const QString png = dir_.filePath("edges.png");
        QVERIFY2(exportFigure(plot, png, QSize(800, 600), 1.0, &error), qPrintable(error));
        const QImage img(png);
        QCOMPARE(img.size(), QSize(800, 600));
        int red = 0, blue = 0;
        for (int y = 0; y < img.height(); ++y)
            for (int x = 0; x < img.width(); ++x) {
                const QColor c = img.pixelColor(x, y);
                red += c.red() > c.blue() + 80;
                blue += c.blue() > c.red() + 80;
            }
        QVERIFY2(red > 500 && blue > 200, qPrintable(QString("%1 red, %2 blue pixels").arg(red).arg(blue)));
        const QString svg = dir_.filePath("edges.svg");
        QVERIFY2(exportFigure(plot, svg, QSize(800, 600), 1.0, &error), qPrintable(error));
        QVERIFY(QFileInfo(svg).size() > 1000);
        // an edge index outside the graph
        try {
            plot.setCircuit(cfg, a, {7}, "bad");
            QFAIL("an edge outside the graph was drawn");
        } catch (const InputError& e) {
            QCOMPARE(e.message(), QString("Edge 7 is not in the graph (5 edges)."));
        }
        QCOMPARE(plot.edgeCount(), 4); // the last circuit stays
    }

    /// The edge-attribution sub-tab on the induction pair: the circuit drawn is selectCircuitEdges's top N of
    /// runEdgeAttribution's scores, the faithfulness line evaluateCircuit's share; a new top N re-evaluates; the JSON
    /// holds the circuit's edges by EAP-IG's names with their scores.
    void edgeAttributionFindsTheCircuit() {
        EdgeAttributionView* v = panel_->edgeAttribution();
        panel_->subTabs()->setCurrentWidget(v);
        QVERIFY(panel_->inputs()->isEnabled());
        v->setMethod(EdgeAttributionMethod::EapIg);
        v->setSteps(5);
        v->setTopEdges(20);
        v->run();
        v->task().waitForIdle();
        QVERIFY2(v->statusText().startsWith("Done"), qPrintable(v->statusText()));
        const PatchingRuns runs = preparePatchingRuns(*model_, pair_.clean, pair_.corrupt);
        EdgeAttributionOptions o;
        o.metric = zOptions().metric;
        o.steps = 5;
        const EdgeAttribution want = runEdgeAttribution(*model_, runs, o);
        const std::vector<int> circuit = selectCircuitEdges(want.graph, 20);
        QCOMPARE(v->circuit(), circuit);
        QCOMPARE(v->plot()->edgeCount(), 20);
        for (int i = 0; i < 20; ++i) QCOMPARE(v->plot()->edge(i).score, want.graph.edges[size_t(circuit[size_t(i)])].score);
        const CircuitFaithfulness f = evaluateCircuit(*model_, runs, o.metric, want.graph, circuit);
        QVERIFY2(v->faithfulnessText().startsWith(QString("The top 20 of %1 edges recover %2 % of the metric")
                                                      .arg(want.graph.edges.size())
                                                      .arg(100 * f.recovered, 0, 'f', 1)),
                 qPrintable(v->faithfulnessText()));
        qInfo() << "EAP-IG top 20 edges recover" << f.recovered;
        // another top N: re-evaluated from the same scores
        v->setTopEdges(5);
        v->task().waitForIdle();
        QCOMPARE(v->circuit(), selectCircuitEdges(want.graph, 5));
        QCOMPARE(v->faithfulness()->edges, 5);
        // JSON: the circuit's edges by name, with their scores
        const QString json = dir_.filePath("circuit.json");
        QCOMPARE(v->exportJson(json), QString());
        QFile file(json);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QJsonObject o2 = QJsonDocument::fromJson(file.readAll()).object()["edge_attribution"].toObject();
        QCOMPARE(o2["method"].toString(), QString("eap-ig"));
        QCOMPARE(o2["top"].toInt(), 5);
        const QJsonArray edges = o2["edges"].toArray();
        QCOMPARE(edges.size(), 5);
        const ScoredEdge& first = want.graph.edges[size_t(v->circuit()[0])];
        QCOMPARE(edges[0].toObject()["edge"].toString(), want.graph.edgeName(first));
        QCOMPARE(edges[0].toObject()["score"].toDouble(), first.score);
        QVERIFY(v->exportJson("/nonexistent/dir/c.json").startsWith("/nonexistent/dir/c.json: "));
        panel_->subTabs()->setCurrentWidget(panel_->patching());
    }

    void pathPatchingMatchesLibrary() {
        PathPatchingView* v = panel_->pathPatching();
        v->setSenders("0.0,0.1,1.1");
        v->setReceivers("1.1.k,1.2.k,logits");
        v->run();
        v->task().waitForIdle();
        QVERIFY(v->result());
        PathPatchingOptions o;
        o.senders = parseHeadList(model_->config(), "0.0,0.1,1.1");
        o.receivers = parseReceiverList(model_->config(), "1.1.k,1.2.k,logits");
        o.metric = zOptions().metric;
        const PathPatchingResult want = runPathPatching(*model_, preparePatchingRuns(*model_, pair_.clean, pair_.corrupt), o);
        const MatrixFigure& f = v->table()->figure();
        QCOMPARE(f.rowLabels, (QStringList{"L0H0", "L0H1", "L1H1"}));
        QCOMPARE(f.colLabels, want.columns);
        for (int r = 0; r < f.values.rows(); ++r)
            for (int c = 0; c < f.values.cols(); ++c)
                QVERIFY2(sameOrBothNan(f.values(r, c), float(want.normalised(r, c))),
                         qPrintable(QString("%1 %2: %3 vs %4").arg(r).arg(c).arg(f.values(r, c), 0, 'g', 9).arg(want.normalised(r, c), 0, 'g', 9)));
        QVERIFY(std::isnan(f.values(2, 0))); // L1H1 cannot reach a receiver of its own layer
        // a last-layer sender through the logits is its own z patch: the z sweep's cell (another tool)
        const PatchingSweep z = runPatchingSweep(*model_, preparePatchingRuns(*model_, pair_.clean, pair_.corrupt), zOptions());
        const double zCell = patchingGrid(model_->config(), int(pair_.clean.size()), z, true)(1, 1);
        QVERIFY2(std::abs(f.values(2, 2) - zCell) < 1e-4, qPrintable(QString("%1 vs %2").arg(f.values(2, 2)).arg(zCell)));
        qInfo() << "L1H1 z patch, normalised:" << zCell;
    }

    void flowGraphClicksAndExports() {
        FlowView* v = panel_->flow();
        v->setThreshold(0.04);
        v->build();
        v->task().waitForIdle();
        QVERIFY(v->graph());
        const FlowGraph want = flowGraph(flowContributions(*model_, *cache_), {0.04, true, -1});
        const FlowGraph& g = *v->graph();
        QCOMPARE(g.edges.size(), want.edges.size());
        QVERIFY(!g.edges.empty());
        for (size_t i = 0; i < g.edges.size(); ++i) {
            QCOMPARE(g.edges[i].weight, want.edges[i].weight);
            QCOMPARE(g.edges[i].fromPosition, want.edges[i].fromPosition);
            QCOMPARE(g.edges[i].toBoundary, want.edges[i].toBoundary);
        }
        // click the strongest attention edge: the details list its heads' parts
        int best = -1;
        for (size_t i = 0; i < g.edges.size(); ++i)
            if (g.edges[i].kind == FlowEdge::Kind::Attention && g.edges[i].fromPosition != g.edges[i].toPosition &&
                (best < 0 || g.edges[i].weight > g.edges[size_t(best)].weight))
                best = int(i);
        QVERIFY(best >= 0);
        FlowGraphPlot* plot = v->plot();
        panel_->subTabs()->setCurrentWidget(v); // laid out: pixels of nodes and edges are the drawn ones
        QCoreApplication::processEvents();
        plot->plot()->replot();
        QCOMPARE(plot->edgeAt(plot->edgePixel(best)), best);
        plot->clickAt(plot->edgePixel(best));
        const FlowEdge& e = g.edges[size_t(best)];
        QTableWidget* t = v->detailsTable();
        QCOMPARE(t->rowCount(), model_->config().n_heads);
        double sum = 0;
        for (int r = 0; r < t->rowCount(); ++r) {
            QCOMPARE(t->item(r, 2)->data(Qt::UserRole).toDouble(), e.heads[size_t(r)]);
            sum += e.heads[size_t(r)];
        }
        QVERIFY(std::abs(sum - e.weight) < 1e-6);
        QVERIFY2(v->detailsTitle().contains("weight"), qPrintable(v->detailsTitle()));
        // click the output node: the logit lens at the last boundary = the model's top prediction
        const int last = 2 * model_->config().n_layers, P = cache_->nPositions() - 1;
        QVERIFY(plot->nodeAt(plot->nodePixel(last, P)));
        plot->clickAt(plot->nodePixel(last, P));
        const std::vector<TokenScore> top = topTokens(lensLogits(*model_, *cache_, last, P), 10);
        QCOMPARE(t->rowCount(), 10);
        QCOMPARE(t->item(0, 1)->data(Qt::UserRole).toInt(), top[0].id);
        QCOMPARE(t->item(0, 2)->data(Qt::UserRole).toDouble(), double(top[0].prob));
        QCOMPARE(top[0].id, topTokens(cache_->logits.row(cache_->logitRow(P)), 1)[0].id); // the last boundary is the model's output
        // exports: JSON equal to the CLI's object, PNG of the asked size with a drawing in it
        const QString json = dir_.filePath("flow.json");
        QCOMPARE(v->exportJson(json), QString());
        QFile f(json);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(QJsonDocument::fromJson(f.readAll()).object()["flow"].toObject(), flowGraphToJson(want, model_->config()));
        const QString png = dir_.filePath("flow.png");
        QString error;
        QVERIFY2(exportFigure(*plot->figure(), png, QSize(800, 600), 1.0, &error), qPrintable(error));
        const QImage img(png);
        QCOMPARE(img.size(), QSize(800, 600));
        QVERIFY(distinctColours(img) > 10);
        for (const char* ext : {"svg", "pdf"}) {
            const QString path = dir_.filePath(QString("flow.") + ext);
            QVERIFY2(exportFigure(*plot->figure(), path, QSize(800, 600), 1.0, &error), qPrintable(error));
            QVERIFY(QFileInfo(path).size() > 1000);
        }
        // an unwritable file: the error names it
        QVERIFY(v->exportJson("/nonexistent/dir/flow.json").startsWith("/nonexistent/dir/flow.json: "));
    }

    /// 200 positions on an 900 px wide plot: every k-th position is labelled ("k·i ␣tok"), from 0, and no two
    /// drawn labels overlap (their rectangles as QFontMetrics measures them, rotated as drawn); zoomed in to 20
    /// positions and on 8 positions every position is labelled, still without overlap.
    void flowGraphLabelsDoNotOverlap() {
        FlowGraphPlot plot;
        plot.resize(900, 500);
        plot.show();
        const QStringList boundaries{"embed", "L0attn", "L0mlp"};
        const auto draw = [&](int n) {
            QStringList tokens;
            for (int p = 0; p < n; ++p) tokens << QStringLiteral("␣tok%1").arg(p);
            FlowGraph g;
            g.nLayers = 1;
            g.nPositions = n;
            g.edges.push_back({FlowEdge::Kind::Attention, 0, 0, 1, n - 1, 0.5, {0.5}});
            plot.setGraph(g, tokens, boundaries);
            QCoreApplication::processEvents();
            plot.plot()->replot();
        };
        draw(200);
        const QVector<double> ticks = plot.plot()->xAxis->tickVector();
        const QVector<QString> labels = plot.plot()->xAxis->tickVectorLabels();
        QVERIFY2(ticks.size() >= 5 && ticks.size() < 100, qPrintable(QString::number(ticks.size())));
        QCOMPARE(ticks.first(), 0.0);
        const double step = ticks[1] - ticks[0];
        QVERIFY(step >= 2);
        const double lineHeight = QFontMetricsF(plot.plot()->xAxis->tickLabelFont()).height();
        for (int i = 0; i < ticks.size(); ++i) {
            QCOMPARE(ticks[i], i * step);
            QCOMPARE(labels[i], QStringLiteral("%1 ␣tok%1").arg(int(ticks[i])));
            if (i > 0) {
                const double gap = plot.plot()->xAxis->coordToPixel(ticks[i]) - plot.plot()->xAxis->coordToPixel(ticks[i - 1]);
                QVERIFY2(gap >= lineHeight, qPrintable(QString("%1 px between labels, %2 px a line").arg(gap).arg(lineHeight)));
            }
        }
        QCOMPARE(plot.plot()->xAxis->tickLabelRotation(), -90.0);
        // the drawn labels' rectangles: a label rotated by −90° is as wide on the x axis as its text is high, centred
        // on its tick, and reaches down as far as its text is long
        const auto overlaps = [&]() -> QString {
            QCPAxis* x = plot.plot()->xAxis;
            const QFontMetricsF fm(x->tickLabelFont());
            const QVector<double> t = x->tickVector();
            const QVector<QString> l = x->tickVectorLabels();
            std::vector<QRectF> rects;
            for (int i = 0; i < t.size(); ++i) {
                const QRectF text = fm.boundingRect(l[i]);
                rects.push_back(QRectF(x->coordToPixel(t[i]) - text.height() / 2, x->axisRect()->bottom(), text.height(), text.width()));
            }
            for (size_t i = 1; i < rects.size(); ++i)
                if (rects[i].intersects(rects[i - 1]))
                    return QStringLiteral("\"%1\" [%2, %3] overlaps \"%4\" [%5, %6]")
                        .arg(l[int(i)]).arg(rects[i].left()).arg(rects[i].right())
                        .arg(l[int(i) - 1]).arg(rects[i - 1].left()).arg(rects[i - 1].right());
            return rects.size() < 2 ? QStringLiteral("fewer than two labels") : QString();
        };
        QCOMPARE(overlaps(), QString());
        plot.plot()->xAxis->setRange(40, 59); // zoomed in: every position labelled
        plot.plot()->replot();
        QCOMPARE(plot.plot()->xAxis->tickVector().size(), 20);
        QCOMPARE(overlaps(), QString());
        draw(8);
        QCOMPARE(plot.plot()->xAxis->tickVector(), (QVector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
        QCOMPARE(plot.plot()->xAxis->tickVectorLabels().last(), QStringLiteral("7 ␣tok7"));
        QCOMPARE(overlaps(), QString());
    }

    void attendSplitSumsToTheScore() {
        AttendView* v = panel_->attend();
        const int q = cache_->nPositions() - 1, k = q - 12 + 1; // the induction head's key: the token after the earlier copy
        v->setQuery(1, 1, q, k);
        v->run();
        v->task().waitForIdle();
        QVERIFY(v->split());
        const AttentionScoreSplit want = splitAttentionScore(*model_, *cache_, 1, 1, q, k);
        const MatrixFigure& f = v->heatmap()->figure();
        QCOMPARE(f.values.rows(), want.terms.rows());
        QCOMPARE(f.values.cols(), want.terms.cols());
        double sum = 0;
        for (int r = 0; r < f.values.rows(); ++r)
            for (int c = 0; c < f.values.cols(); ++c) {
                QCOMPARE(f.values(r, c), float(want.terms(r, c)));
                sum += f.values(r, c);
            }
        const double cached = double(cache_->layer(1)->attn_scores[1](q, k));
        QVERIFY2(std::abs(sum - cached) < 1e-3 * std::max(1.0, std::abs(cached)), qPrintable(QString("%1 vs %2").arg(sum).arg(cached)));
        QCOMPARE(f.rowLabels.front(), want.queryComponents.front().name);
        QVERIFY2(v->checkText().contains(QString::number(want.checkError, 'g', 3)), qPrintable(v->checkText()));
        QVERIFY2(v->checkText().contains(QString::number(cached, 'g', 8)), qPrintable(v->checkText()));
    }

    void compositionBesideBaselines() {
        CompositionView* v = panel_->composition();
        v->setKind(CompositionKind::K);
        v->run();
        v->task().waitForIdle();
        QVERIFY(v->scores());
        const auto want = compositionScores(*model_, CompositionKind::K);
        const int H = model_->config().n_heads;
        const MatrixFigure& f = v->heatmap()->figure();
        QCOMPARE(f.values.rows(), want->scores.rows());
        for (int r = 0; r < f.values.rows(); ++r)
            for (int c = 0; c < f.values.cols(); ++c) QVERIFY(sameOrBothNan(f.values(r, c), want->scores(r, c)));
        // one pair against its direct d_model × d_model computation
        QVERIFY(std::abs(f.values(0, H + 1) - compositionScoreDirect(*model_, CompositionKind::K, 0, 0, 1, 1)) < 1e-4);
        const double baseline = want->baseline.mean;
        QVERIFY2(v->baselineText().contains(QString::number(baseline, 'f', 4)), qPrintable(v->baselineText()));
        for (int h = 1; h <= 3; ++h) QVERIFY2(f.values(0, H + h) > baseline, qPrintable(QString::number(f.values(0, H + h))));
        // the table: strongest pair first, each beside the baseline and their ratio
        QTableWidget* t = v->pairTable();
        QVERIFY(t->rowCount() > 0);
        float maxScore = 0;
        for (int r = 0; r < want->scores.rows(); ++r)
            for (int c = 0; c < want->scores.cols(); ++c)
                if (std::isfinite(want->scores(r, c))) maxScore = std::max(maxScore, want->scores(r, c));
        QCOMPARE(t->item(0, CompositionView::ScoreColumn)->data(Qt::UserRole).toDouble(), double(maxScore));
        QCOMPARE(t->item(0, CompositionView::BaselineColumn)->data(Qt::UserRole).toDouble(), baseline);
        QVERIFY(std::abs(t->item(0, CompositionView::RatioColumn)->data(Qt::UserRole).toDouble() - maxScore / baseline) < 1e-4);
        // the virtual OV circuit of L0H0 → L1H1
        v->showVirtualOv(0, 0, 1, 1);
        v->ovTask().waitForIdle();
        const std::vector<ScoredPair> ov = virtualOvCircuit(*model_, 0, 0, 1, 1, 20);
        QCOMPARE(v->ovTable()->rowCount(), int(ov.size()));
        QCOMPARE(v->ovTable()->item(0, 1)->data(Qt::UserRole).toInt(), ov[0].row);
        QCOMPARE(v->ovTable()->item(0, 2)->data(Qt::UserRole).toInt(), ov[0].col);
        QVERIFY2(v->ovTitle().contains("L0H0 → L1H1"), qPrintable(v->ovTitle()));
    }

    void sessionStateRoundTrips() {
        panel_->patching()->setHook(PatchHook::AttnOut);
        panel_->inputs()->setDirection(PatchDirection::Noise);
        const QJsonObject s = panel_->saveState();
        CircuitsPanel other;
        other.setContext(model_, cache_, {});
        QStringList problems;
        other.restoreState(s, &problems);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join('\n')));
        QCOMPARE(other.patching()->hook(), PatchHook::AttnOut);
        QCOMPARE(other.inputs()->direction(), PatchDirection::Noise);
        // the method and compare settings, the compare box enabled with an estimate method
        panel_->patching()->setMethod(PatchingMethod::AtpStar);
        panel_->patching()->setCompare(true);
        other.restoreState(panel_->saveState(), &problems);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join('\n')));
        QCOMPARE(other.patching()->method(), PatchingMethod::AtpStar);
        QVERIFY(other.patching()->compare());
        panel_->patching()->setMethod(PatchingMethod::Activation);
        other.restoreState(QJsonObject{{"activation", "nonsense"}}, &problems);
        QCOMPARE(problems.size(), 1);
        QVERIFY2(problems[0].contains("nonsense"), qPrintable(problems[0]));
    }
};

QTEST_MAIN(TestGuiCircuits)
#include "tst_gui_circuits.moc"
