// Attribution patching (model/analysis/gradients/attribution_patching.h): every cell equal to
// metric(base) + Σ (a_other − a_base)·∂metric/∂a, recomputed here from the runs' caches and one backward pass
// with Eigen block sums, on every activation, both directions and by position; the estimate against the
// activation-patching sweep it stands for on the demo model's induction circuit (the same four heads, and a
// correlation over the cells); AtP* closer than the linear estimate on q and k cells; the refusals.

#include "model/analysis/circuits/activation_patching.h"
#include "model/analysis/gradients/attribution_patching.h"
#include "model/analysis/gradients/metric_gradients.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "support/induction_pair.h"
#include "support/test_paths.h"

#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

PatchingOptions answerSweep(PatchHook hook, const InductionPair& p, PatchDirection direction, bool byPosition) {
    PatchingOptions o;
    o.hook = hook;
    o.direction = direction;
    o.byPosition = byPosition;
    o.metric.kind = PatchingMetricKind::LogitDiff;
    o.metric.token = p.answer;
    o.metric.counterToken = p.corruptAnswer;
    return o;
}

/// The cell's block of a layer's activations (LayerCache) or gradients (LayerGradients: the same field names):
/// rows [r0, r1), the head's columns (or all).
template <class Fields>
Matrix cellBlock(const Fields& c, PatchHook hook, int head, int d_head, int position) {
    const Matrix* m = nullptr;
    switch (hook) {
    case PatchHook::ResidPre: m = &c.resid_pre; break;
    case PatchHook::AttnOut: m = &c.attn_out; break;
    case PatchHook::MlpOut: m = &c.mlp_out; break;
    case PatchHook::Z: m = &c.z; break;
    case PatchHook::Q: m = &c.q; break;
    case PatchHook::K: m = &c.k; break;
    case PatchHook::V: m = &c.v; break;
    case PatchHook::Pattern: m = &c.pattern[size_t(head)]; break;
    }
    const Eigen::Index rows = position < 0 ? m->rows() : 1, r0 = position < 0 ? 0 : position;
    const bool columns = head >= 0 && hook != PatchHook::Pattern;
    return m->block(r0, columns ? Eigen::Index(head) * d_head : 0, rows, columns ? d_head : m->cols());
}

double correlation(const std::vector<double>& a, const std::vector<double>& b) {
    const Eigen::Map<const Eigen::VectorXd> x(a.data(), Eigen::Index(a.size())), y(b.data(), Eigen::Index(b.size()));
    const Eigen::VectorXd dx = x.array() - x.mean(), dy = y.array() - y.mean();
    return dx.dot(dy) / (dx.norm() * dy.norm());
}

} // namespace

class TestAttributionPatching : public QObject {
    Q_OBJECT
    std::shared_ptr<const Model> demo_;
    InductionPair pair_;
    PatchingRuns runs_;

private slots:
    void initTestCase() {
        demo_ = loadModel(demoDir());
        pair_ = inductionPair(demo_->config(), 10);
        runs_ = preparePatchingRuns(*demo_, pair_.clean, pair_.corrupt);
    }

    void equalsTheFormula_data() {
        QTest::addColumn<int>("hook");
        QTest::addColumn<bool>("noise");
        QTest::addColumn<bool>("byPosition");
        for (PatchHook h : {PatchHook::ResidPre, PatchHook::AttnOut, PatchHook::MlpOut, PatchHook::Z, PatchHook::Q, PatchHook::K,
                            PatchHook::V, PatchHook::Pattern})
            for (bool noise : {false, true})
                for (bool byPosition : {false, true}) {
                    if (byPosition && !isHeadHook(h)) continue;
                    QTest::addRow("%s %s%s", qPrintable(patchHookName(h)), noise ? "noise" : "denoise", byPosition ? " by position" : "")
                        << int(h) << noise << byPosition;
                }
    }

    void equalsTheFormula() {
        QFETCH(int, hook);
        QFETCH(bool, noise);
        QFETCH(bool, byPosition);
        const PatchHook h = PatchHook(hook);
        const PatchingOptions o = answerSweep(h, pair_, noise ? PatchDirection::Noise : PatchDirection::Denoise, byPosition);
        const PatchingSweep s = runAttributionPatching(*demo_, runs_, o);
        QCOMPARE(s.method, PatchingMethod::Attribution);
        QCOMPARE(s.cells.size(), patchingCells(demo_->config(), int(pair_.clean.size()), o).size());

        const ActivationCache& base = noise ? *runs_.clean : *runs_.corrupt;
        const ActivationCache& other = noise ? *runs_.corrupt : *runs_.clean;
        PatchingMetric m = o.metric;
        m.position = int(pair_.clean.size()) - 1;
        BackwardOptions b;
        const MetricGradients g = metricGradients(*demo_, base, m, RowVector(), b);
        const int last = base.logitRow(m.position);
        QCOMPARE(g.value, double(base.logits(last, pair_.answer)) - double(base.logits(last, pair_.corruptAnswer)));
        QCOMPARE(s.clean, double(runs_.clean->logits(last, pair_.answer)) - double(runs_.clean->logits(last, pair_.corruptAnswer)));
        int moved = 0;
        for (const PatchingCell& c : s.cells) {
            const int L = demo_->config().d_head;
            const Matrix delta = cellBlock(*other.layer(c.layer), h, c.head, L, c.position) - cellBlock(*base.layer(c.layer), h, c.head, L, c.position);
            const double expected = g.value + delta.cast<double>().cwiseProduct(cellBlock(g.gradients.layers[size_t(c.layer)], h, c.head, L, c.position).cast<double>()).sum();
            QVERIFY2(std::abs(c.metric - expected) <= 1e-5 * (1 + std::abs(expected)),
                     qPrintable(QStringLiteral("L%1 H%2 pos %3: %4 vs %5").arg(c.layer).arg(c.head).arg(c.position).arg(c.metric).arg(expected)));
            QVERIFY(c.done);
            QCOMPARE(c.normalised, normalisedMetric(c.metric, s.clean, s.corrupt));
            if (std::abs(c.metric - g.value) > 1e-3) ++moved;
        }
        QVERIFY(moved > 0);
    }

    /// On the induction pair, the estimate finds the circuit the z sweep finds (L0H0 and the induction heads
    /// L1H1–L1H3, tst_activation_patching) and follows the actual cells.
    void estimatesTheSweep() {
        const PatchingOptions o = answerSweep(PatchHook::Z, pair_, PatchDirection::Denoise, false);
        const PatchingSweep actual = runPatchingSweep(*demo_, runs_, o);
        const PatchingSweep estimate = runAttributionPatching(*demo_, runs_, o);
        std::vector<double> a, e;
        QString text;
        for (size_t i = 0; i < actual.cells.size(); ++i) {
            a.push_back(actual.cells[i].normalised);
            e.push_back(estimate.cells[i].normalised);
            text += QStringLiteral("L%1H%2 %3/%4  ").arg(actual.cells[i].layer).arg(actual.cells[i].head).arg(a.back(), 0, 'f', 3).arg(e.back(), 0, 'f', 3);
        }
        qInfo().noquote() << "actual/estimate:" << text << "r =" << correlation(a, e);
        QVERIFY2(correlation(a, e) > 0.8, qPrintable(text));
        for (const PatchingSweep* s : {&actual, &estimate}) {
            const Matrix grid = patchingGrid(demo_->config(), int(pair_.clean.size()), *s, true);
            const float circuitMin = std::min({std::abs(grid(0, 0)), std::abs(grid(1, 1)), std::abs(grid(1, 2)), std::abs(grid(1, 3))});
            const float othersMax = std::max({std::abs(grid(0, 1)), std::abs(grid(0, 2)), std::abs(grid(0, 3)), std::abs(grid(1, 0))});
            QVERIFY2(circuitMin > othersMax, qPrintable(text));
        }
    }

    /// AtP*'s exact softmax brings q and k cells closer to the actual patching than the linear estimate.
    void atpStarIsCloserOnQueriesAndKeys_data() {
        QTest::addColumn<int>("hook");
        QTest::newRow("q") << int(PatchHook::Q);
        QTest::newRow("k") << int(PatchHook::K);
    }
    void atpStarIsCloserOnQueriesAndKeys() {
        QFETCH(int, hook);
        const PatchingOptions o = answerSweep(PatchHook(hook), pair_, PatchDirection::Denoise, true);
        const PatchingSweep actual = runPatchingSweep(*demo_, runs_, o);
        const PatchingSweep atp = runAttributionPatching(*demo_, runs_, o);
        const PatchingSweep star = runAttributionPatching(*demo_, runs_, o, true);
        QCOMPARE(star.method, PatchingMethod::AtpStar);
        double errAtp = 0, errStar = 0;
        for (size_t i = 0; i < actual.cells.size(); ++i) {
            errAtp += std::abs(atp.cells[i].metric - actual.cells[i].metric);
            errStar += std::abs(star.cells[i].metric - actual.cells[i].metric);
        }
        qInfo() << "mean |error|: AtP" << errAtp / double(actual.cells.size()) << "AtP*" << errStar / double(actual.cells.size());
        QVERIFY2(errStar < errAtp, qPrintable(QStringLiteral("AtP* %1, AtP %2").arg(errStar).arg(errAtp)));
    }

    void refusals() {
        PatchingOptions o = answerSweep(PatchHook::Z, pair_, PatchDirection::Denoise, false);
        o.ablation = AblationKind::Zero;
        try {
            runAttributionPatching(*demo_, runs_, o);
            QFAIL("an ablation was accepted");
        } catch (const InputError& e) {
            QCOMPARE(QString(e.what()), QStringLiteral("Attribution patching estimates patching between the clean and corrupted runs; it takes no ablation."));
        }
        o.ablation = AblationKind::None;
        PatchingRuns cleanOnly = runs_;
        cleanOnly.corrupt.reset();
        QVERIFY_THROWS_EXCEPTION(InputError, runAttributionPatching(*demo_, cleanOnly, o));
        o.metric.token = demo_->config().d_vocab;
        QVERIFY_THROWS_EXCEPTION(InputError, runAttributionPatching(*demo_, runs_, o));
    }
};

QTEST_GUILESS_MAIN(TestAttributionPatching)
#include "tst_attribution_patching.moc"
