// Activation patching sweeps (model/analysis/circuits/activation_patching.h): metrics and their parsing, the
// token-length check, the endpoints and the normalisation, cells that cannot change anything, ablations
// against independent computations (zero and mean ablation of z against ForwardOptions::ablations, resample
// = noising, reference means by hand), and the demo model's induction circuit: on a repeated random-token
// prompt corrupted in its first half, the previous-token head L0H0 and the induction heads L1H1–L1H3 carry
// the effect in the z sweep.

#include "model/analysis/circuits/activation_patching.h"
#include "model/analysis/attention/head_detectors.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/induction_pair.h"
#include "support/test_paths.h"

#include <QtTest>
#include <random>

using namespace attnscope;
using namespace attnscope::test;

namespace {

std::shared_ptr<const Model> demo() { return loadModel(demoDir()); }

/// A sweep of `hook` measuring logit[answer] − logit[corrupted answer].
PatchingOptions answerSweep(PatchHook hook, const InductionPair& p) {
    PatchingOptions o;
    o.hook = hook;
    o.metric.kind = PatchingMetricKind::LogitDiff;
    o.metric.token = p.answer;
    o.metric.counterToken = p.corruptAnswer;
    return o;
}

double logitAt(const Model& model, const std::vector<int>& tokens, int token, const ForwardOptions& o = {}) {
    ForwardOptions last = o;
    last.allLogits = false;
    last.cacheHeadResults = false;
    return double(runForward(model, tokens, last).logits(0, token));
}

} // namespace

class TestActivationPatching : public QObject {
    Q_OBJECT
private slots:
    void parsesMetrics() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto model = loadModel(testdata("tiny-gpt2"));
        const Tokenizer& tok = model->tokenizer();
        const PatchingMetric d = parsePatchingMetric(tok, QStringLiteral("logit_diff: a, b"));
        QCOMPARE(d.kind, PatchingMetricKind::LogitDiff);
        QCOMPARE(d.token, tok.encode(QStringLiteral(" a")).at(0));
        QCOMPARE(d.counterToken, tok.encode(QStringLiteral(" b")).at(0));
        QCOMPARE(parsePatchingMetric(tok, QStringLiteral("prob: a")).kind, PatchingMetricKind::Prob);
        QCOMPARE(parsePatchingMetric(tok, QStringLiteral("logit:a")).token, tok.encode(QStringLiteral("a")).at(0));
        QCOMPARE(parsePatchingMetric(tok, QStringLiteral("KL")).kind, PatchingMetricKind::KL);
        for (const char* bad : {"logit_diff: a", "logit: a, b", "entropy: a", "prob", "kl: a"}) {
            bool threw = false;
            try {
                parsePatchingMetric(tok, QString::fromLatin1(bad));
            } catch (const InputError& e) {
                threw = !e.message().isEmpty();
            }
            QVERIFY2(threw, bad);
        }
    }

    void metricValues() {
        RowVector clean(3), run(3);
        clean << 1.0f, 2.0f, 3.0f;
        run << 3.0f, 2.0f, 1.0f;
        PatchingMetric m;
        m.kind = PatchingMetricKind::LogitDiff;
        m.token = 0;
        m.counterToken = 2;
        QCOMPARE(patchingMetricValue(m, run, clean), 2.0);
        m.kind = PatchingMetricKind::Prob;
        const double z = std::exp(3.0) + std::exp(2.0) + std::exp(1.0);
        QVERIFY(std::abs(patchingMetricValue(m, run, clean) - std::exp(3.0) / z) < 1e-12);
        m.kind = PatchingMetricKind::KL;
        double kl = 0;
        for (int i = 0; i < 3; ++i) {
            const double p = std::exp(double(clean(i))) / z, q = std::exp(double(run(i))) / z;
            kl += p * std::log(p / q);
        }
        QVERIFY(std::abs(patchingMetricValue(m, run, clean) - kl) < 1e-12);
        QCOMPARE(patchingMetricValue(m, clean, clean), 0.0);
        QCOMPARE(normalisedMetric(3.0, 5.0, 1.0), 0.5);
        QVERIFY(std::isnan(normalisedMetric(3.0, 1.0, 1.0)));
    }

    void lengthMismatchShowsBothTokenizations() {
        const auto model = demo();
        const Tokenizer& tok = model->tokenizer();
        const std::vector<int> a = tok.encode(QStringLiteral("In the beginning God")), b = tok.encode(QStringLiteral("In the end"));
        try {
            preparePatchingRuns(*model, a, b);
            QFAIL("no error");
        } catch (const InputError& e) {
            QVERIFY2(e.message().contains(QStringLiteral("has %1").arg(a.size())) && e.message().contains(tok.displayToken(a.back())) &&
                         e.message().contains(tok.displayToken(b.back())),
                     qPrintable(e.message()));
        }
    }

    void endpointsAndCellsThatChangeNothing() {
        const auto model = demo();
        const ModelConfig& cfg = model->config();
        const InductionPair p = inductionPair(cfg, 10);
        const PatchingRuns runs = preparePatchingRuns(*model, p.clean, p.corrupt);
        const PatchingOptions o = answerSweep(PatchHook::ResidPre, p);
        int reported = 0;
        const PatchingSweep s = runPatchingSweep(*model, runs, o, {}, [&](const PatchingSweep&, size_t first, size_t count) {
            QCOMPARE(int(first), reported);
            reported += int(count);
        });
        const int S = int(p.clean.size());
        QCOMPARE(reported, cfg.n_layers * S);
        QCOMPARE(s.clean, logitAt(*model, p.clean, p.answer) - logitAt(*model, p.clean, p.corruptAnswer));
        QCOMPARE(s.corrupt, logitAt(*model, p.corrupt, p.answer) - logitAt(*model, p.corrupt, p.corruptAnswer));
        QVERIFY(s.clean - s.corrupt > 2.0);
        for (const PatchingCell& c : s.cells) {
            // position 0 (BOS) and the shared second half are the same in both runs: nothing to rerun
            const bool same = p.clean[size_t(c.position)] == p.corrupt[size_t(c.position)] && (c.layer == 0 || c.position == 0);
            QCOMPARE(c.recomputed, !same);
            if (same) QCOMPARE(c.metric, s.corrupt);
        }
        const Matrix grid = patchingGrid(cfg, S, s, true);
        QString text;
        for (int l = 0; l < grid.rows(); ++l) {
            for (int c = 0; c < grid.cols(); ++c) text += QStringLiteral("%1 ").arg(grid(l, c), 0, 'f', 2);
            text += QLatin1Char('\n');
        }
        // the circuit: at layer 1 the first copy of the answer (its token and, from L0H0, its previous token) brings
        // the answer back; at layer 0 the clean token before it alone makes the induction heads copy the corrupted answer
        const int answerPos = 1 + 10 - 1;
        QVERIFY2(grid(1, answerPos) > 0.9f, qPrintable(text));
        QVERIFY2(grid(0, answerPos - 1) < -0.5f, qPrintable(text));
        for (int c = 0; c < S; ++c)
            if (c != answerPos && c != answerPos - 1) QVERIFY2(std::abs(grid(0, c)) < 0.1f && std::abs(grid(1, c)) < 0.1f, qPrintable(text));
    }

    void zeroAndMeanAblationMatchTheForwardsAblations() {
        const auto model = demo();
        const InductionPair p = inductionPair(model->config(), 8);
        const PatchingRuns runs = preparePatchingRuns(*model, p.clean, {});
        for (AblationKind kind : {AblationKind::Zero, AblationKind::Mean}) {
            PatchingOptions o;
            o.hook = PatchHook::Z;
            o.ablation = kind;
            o.metric.kind = PatchingMetricKind::Logit;
            o.metric.token = p.answer;
            const PatchingSweep s = runPatchingSweep(*model, runs, o);
            for (const PatchingCell& c : s.cells) {
                ForwardOptions f;
                f.ablations = {{c.layer, c.head, kind == AblationKind::Zero ? HeadAblation::Kind::Zero : HeadAblation::Kind::Mean}};
                QVERIFY2(std::abs(c.metric - logitAt(*model, p.clean, p.answer, f)) < 1e-4,
                         qPrintable(QStringLiteral("L%1H%2").arg(c.layer).arg(c.head)));
            }
            QVERIFY(std::isnan(s.corrupt) && std::isnan(s.cells[0].normalised)); // no corrupted run: no normalisation
        }
    }

    void resampleIsNoisingAndReferenceMeansAreMeans() {
        const auto model = demo();
        const ModelConfig& cfg = model->config();
        const InductionPair p = inductionPair(cfg, 8);
        const InductionPair q = inductionPair(cfg, 6); // another length: mean over all positions
        const PatchingRuns runs = preparePatchingRuns(*model, p.clean, p.corrupt, {p.corrupt, q.clean});
        PatchingOptions o;
        o.hook = PatchHook::AttnOut;
        o.metric.kind = PatchingMetricKind::KL;
        o.ablation = AblationKind::Resample;
        const PatchingSweep resample = runPatchingSweep(*model, runs, o);
        o.ablation = AblationKind::None;
        o.direction = PatchDirection::Noise;
        const PatchingSweep noise = runPatchingSweep(*model, runs, o);
        for (size_t i = 0; i < noise.cells.size(); ++i) QCOMPARE(resample.cells[i].metric, noise.cells[i].metric);
        QCOMPARE(noise.clean, 0.0);
        QVERIFY(noise.corrupt > 0.1);

        // reference mean of mlp_out at layer 0 over [corrupt (length S), q.clean (another length)]: all positions
        o.hook = PatchHook::MlpOut;
        o.ablation = AblationKind::ReferenceMean;
        o.metric.kind = PatchingMetricKind::Logit;
        o.metric.token = p.answer;
        const PatchingSweep ref = runPatchingSweep(*model, runs, o);
        const Matrix& a = runs.reference[0]->layer(0)->mlp_out;
        const Matrix& b = runs.reference[1]->layer(0)->mlp_out;
        const RowVector mean = (a.colwise().sum() + b.colwise().sum()) / float(a.rows() + b.rows());
        const int pos = 3;
        auto hooks = std::make_shared<ForwardHooks>();
        hooks->mlp_out = [&](int l, Matrix& x) {
            if (l == 0) x.row(pos) = mean;
        };
        ForwardOptions f;
        f.hooks = hooks;
        const double want = logitAt(*model, p.clean, p.answer, f);
        const auto cell = std::find_if(ref.cells.begin(), ref.cells.end(), [&](const PatchingCell& c) { return c.layer == 0 && c.position == pos; });
        QVERIFY(std::abs(cell->metric - want) < 1e-4);
    }

    void demoInductionHeadsCarryTheEffect() {
        const auto model = demo();
        const ModelConfig& cfg = model->config();
        const InductionPair p = inductionPair(cfg, 20);
        const PatchingRuns runs = preparePatchingRuns(*model, p.clean, p.corrupt);
        const PatchingOptions o = answerSweep(PatchHook::Z, p);
        const PatchingSweep s = runPatchingSweep(*model, runs, o);
        const Matrix grid = patchingGrid(cfg, int(p.clean.size()), s, true);
        QString text;
        for (int l = 0; l < grid.rows(); ++l)
            for (int h = 0; h < grid.cols(); ++h) text += QStringLiteral("L%1H%2 %3  ").arg(l).arg(h).arg(grid(l, h), 0, 'f', 3);
        qInfo().noquote() << text;
        // the four circuit heads have the four largest effects, each larger than every other head's
        const float circuitMin = std::min({std::abs(grid(0, 0)), std::abs(grid(1, 1)), std::abs(grid(1, 2)), std::abs(grid(1, 3))});
        const float othersMax = std::max({std::abs(grid(0, 1)), std::abs(grid(0, 2)), std::abs(grid(0, 3)), std::abs(grid(1, 0))});
        QVERIFY2(circuitMin > 2 * othersMax, qPrintable(text));
        QVERIFY(grid(1, 1) + grid(1, 2) + grid(1, 3) > 0.5f); // the induction heads' z restores the answer
    }
};

QTEST_GUILESS_MAIN(TestActivationPatching)
#include "tst_activation_patching.moc"
