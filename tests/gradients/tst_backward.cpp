// The backward pass (model/transformer/backward.h) against float64 central differences of an independent
// forward (support/hooked_forward64.h, which shares no code with forward.cpp or backward.cpp): for every hook
// point, the directional derivative along a random direction, (f(a + εu) − f(a − εu)) / 2ε, against ⟨∂f/∂a, u⟩,
// with and without each stop-gradient switch (a frozen nonlinearity is held at the base run's values in the
// float64 forward, which is what detaching means). Models: tiny-gpt2 (LayerNorm, gelu_new, learned positions,
// tied), stories260K (RMSNorm, SwiGLU, interleaved RoPE, GQA), and a random Mistral (rotate_half RoPE, GQA,
// sliding window 3, q/k/v biases, untied head). Also the metrics' logit gradients against differences of
// patchingMetricValue, and the refusals (position, budget, cancel, non-finite gradients).

#include "model/analysis/circuits/patching_metric.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/transformer/backward.h"
#include "model/transformer/cache_budget.h"
#include "model/transformer/forward.h"
#include "support/gradient_cases.h"
#include "support/hooked_forward64.h"
#include "support/llama_checkpoint.h"
#include "support/stories_reference.h"
#include "support/test_paths.h"

#include <QTemporaryDir>
#include <QtTest>
#include <random>

using namespace attnscope;
using namespace attnscope::test;

namespace {

using Case = GradientCase;

/// The hook points checked: every field of the gradient cache, the pattern of the first and the last head.
std::vector<std::pair<QString, const Matrix*>> hooks(const GradientCache& g, int nHeads) {
    std::vector<std::pair<QString, const Matrix*>> out{{QStringLiteral("hook_embed"), &g.embed}};
    for (int l = 0; l < g.nLayers(); ++l) {
        const LayerGradients& x = g.layers[size_t(l)];
        const QString p = QStringLiteral("blocks.%1.").arg(l);
        out.insert(out.end(), {{p + "hook_resid_pre", &x.resid_pre},
                               {p + "attn.hook_q", &x.q},
                               {p + "attn.hook_k", &x.k},
                               {p + "attn.hook_v", &x.v},
                               {p + "attn.hook_pattern.0", &x.pattern.front()},
                               {p + QStringLiteral("attn.hook_pattern.%1").arg(nHeads - 1), &x.pattern.back()},
                               {p + "attn.hook_z", &x.z},
                               {p + "hook_attn_out", &x.attn_out},
                               {p + "hook_resid_mid", &x.resid_mid},
                               {p + "mlp.hook_pre", &x.mlp_pre},
                               {p + "mlp.hook_post", &x.mlp_post},
                               {p + "hook_mlp_out", &x.mlp_out},
                               {p + "hook_resid_post", &x.resid_post}});
    }
    return out;
}

double metric64(const Case& c, const Hooked64Options& o) {
    const Matrix64 logits = hookedLogits64(*c.model, c.tokens, o);
    const Eigen::Index last = logits.rows() - 1;
    return logits(last, c.token) - logits(last, c.counter);
}

GradientCache backwardOf(const Case& c, const StopGradients& stops) {
    const ActivationCache cache = runForward(*c.model, c.tokens);
    RowVector d = RowVector::Zero(c.model->config().d_vocab);
    d(c.token) = 1;
    d(c.counter) = -1;
    const LogitGradient seed{int(c.tokens.size()) - 1, d};
    return runBackward(*c.model, cache, std::span(&seed, 1), BackwardOptions{stops, true});
}

} // namespace

class TestBackward : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::map<QString, Case> cases_;

private slots:
    void initTestCase() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QVERIFY(tmp_.isValid());
        cases_ = gradientCases(tmp_.path());
        QCOMPARE(cases_.at("mistral").model->config().sliding_window, 3);
        QCOMPARE(cases_.at("mistral").model->config().n_kv_heads, 2);
    }

    void matchesFiniteDifferences_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("norm");
        QTest::addColumn<bool>("pattern");
        QTest::addColumn<bool>("mlp");
        for (const char* m : {"tiny-gpt2", "stories260K", "mistral", "qwen3", "gemma2", "gemma3"}) {
            QTest::addRow("%s exact", m) << QString(m) << false << false << false;
            QTest::addRow("%s frozen norm", m) << QString(m) << true << false << false;
            QTest::addRow("%s frozen pattern", m) << QString(m) << false << true << false;
            QTest::addRow("%s frozen mlp", m) << QString(m) << false << false << true;
            QTest::addRow("%s all frozen", m) << QString(m) << true << true << true;
        }
    }

    void matchesFiniteDifferences() {
        QFETCH(QString, model);
        QFETCH(bool, norm);
        QFETCH(bool, pattern);
        QFETCH(bool, mlp);
        const Case& c = cases_.at(model);
        const GradientCache g = backwardOf(c, StopGradients{norm, pattern, mlp});
        QVERIFY(g.firstNonFinite.isEmpty());
        QCOMPARE(g.nLayers(), c.model->config().n_layers);

        Frozen64 frozen;
        Hooked64Options base;
        base.record = &frozen;
        const double f0 = metric64(c, base);
        // the float32 pass and the float64 reference agree on the metric before anything is perturbed
        const ActivationCache cache = runForward(*c.model, c.tokens);
        const Eigen::Index last = cache.logits.rows() - 1;
        QVERIFY(std::abs(double(cache.logits(last, c.token) - cache.logits(last, c.counter)) - f0) < 1e-4 * (1 + std::abs(f0)));

        std::mt19937 rng(12345);
        std::normal_distribution<double> normal;
        const double eps = 1e-4;
        int nonzero = 0;
        for (const auto& [hook, grad] : hooks(g, c.model->config().n_heads)) {
            Matrix64 u(grad->rows(), grad->cols());
            for (Eigen::Index i = 0; i < u.size(); ++i) u(i) = normal(rng);
            Hooked64Options o;
            o.freezeNorm = norm;
            o.freezePattern = pattern;
            o.freezeMlp = mlp;
            o.frozen = &frozen;
            o.hook = hook;
            o.delta = eps * u;
            const double plus = metric64(c, o);
            o.delta = -eps * u;
            const double minus = metric64(c, o);
            const double fd = (plus - minus) / (2 * eps);
            Matrix64 gradMasked = grad->cast<double>();
            if (hook.contains("pattern")) // only the kept cells are perturbed: compare on those
                for (Eigen::Index i = 0; i < u.rows(); ++i)
                    for (Eigen::Index j = 0; j < u.cols(); ++j) {
                        const int w = c.model->config().windowOf(hook.section('.', 1, 1).toInt()); // "blocks.l.attn…"
                        if (j > i || (w > 0 && j <= i - w)) {
                            QCOMPARE(gradMasked(i, j), 0.0);
                            u(i, j) = 0;
                        }
                    }
            const double analytic = (gradMasked.array() * u.array()).sum();
            const double scale = gradMasked.norm() * u.norm();
            QVERIFY2(std::abs(fd - analytic) <= 2e-5 * scale + 1e-7,
                     qPrintable(QStringLiteral("%1: finite difference %2, backward %3 (|g|·|u| = %4)")
                                    .arg(hook).arg(fd, 0, 'g', 9).arg(analytic, 0, 'g', 9).arg(scale)));
            if (std::abs(fd) > 1e-3) ++nonzero;
            // a frozen pattern passes nothing to q and k; a frozen gated MLP nothing through the gate
            if (pattern && (hook.endsWith("hook_q") || hook.endsWith("hook_k"))) QCOMPARE(grad->cwiseAbs().maxCoeff(), 0.0f);
        }
        QVERIFY2(nonzero >= 10, qPrintable(QStringLiteral("only %1 hook points with a gradient").arg(nonzero)));
    }

    /// The switches change what they should and only that: a frozen norm leaves the last layer's MLP output
    /// gradient alone (it is the residual's), and each switch changes the embedding gradient.
    void switchesChangeTheGradient() {
        const Case& c = cases_.at("tiny-gpt2");
        const GradientCache exact = backwardOf(c, {});
        for (const StopGradients s : {StopGradients{true, false, false}, StopGradients{false, true, false}, StopGradients{false, false, true}}) {
            const GradientCache frozen = backwardOf(c, s);
            QVERIFY((frozen.embed - exact.embed).norm() > 1e-3 * exact.embed.norm());
        }
        const GradientCache frozenMlp = backwardOf(c, StopGradients{false, false, true});
        const int last = exact.nLayers() - 1;
        QCOMPARE(frozenMlp.layers[size_t(last)].mlp_out, exact.layers[size_t(last)].mlp_out); // above the MLP: unchanged
        QCOMPARE(frozenMlp.layers[size_t(last)].mlp_post, exact.layers[size_t(last)].mlp_post);
        QVERIFY(frozenMlp.layers[size_t(last)].mlp_pre != exact.layers[size_t(last)].mlp_pre);
    }

    void metricLogitGradients_data() {
        QTest::addColumn<QString>("metric");
        for (const char* m : {"logit_diff", "logit", "prob", "logprob", "kl"}) QTest::newRow(m) << QString(m);
    }

    /// ∂metric/∂logits against central differences of patchingMetricValue (double), entry by entry.
    void metricLogitGradients() {
        QFETCH(QString, metric);
        PatchingMetric m;
        m.kind = metric == "logit_diff" ? PatchingMetricKind::LogitDiff
                 : metric == "logit"    ? PatchingMetricKind::Logit
                 : metric == "prob"     ? PatchingMetricKind::Prob
                 : metric == "logprob"  ? PatchingMetricKind::LogProb
                                        : PatchingMetricKind::KL;
        QCOMPARE(patchingMetricKindName(m.kind), metric);
        m.token = 3;
        m.counterToken = 5;
        RowVector logits(8), clean(8);
        logits << 0.5f, -1.0f, 2.0f, 1.5f, 0.0f, -0.5f, 1.0f, 0.25f;
        clean << 1.0f, 0.0f, -1.0f, 2.0f, 0.5f, 0.0f, 0.0f, 1.0f;
        const RowVector d = patchingMetricLogitGradient(m, logits, clean);
        for (Eigen::Index v = 0; v < 8; ++v) {
            RowVector up = logits, down = logits;
            const float h = 1.0f / 64; // exact in float: the difference quotient's error is h²·f‴, not rounding
            up(v) += h;
            down(v) -= h;
            const double fd = (patchingMetricValue(m, up, clean) - patchingMetricValue(m, down, clean)) / (2 * h);
            QVERIFY2(std::abs(fd - d(v)) < 1e-3, qPrintable(QStringLiteral("%1 d/dlogit[%2]: %3 vs %4").arg(metric).arg(v).arg(fd).arg(d(v))));
        }
    }

    void refusals() {
        const Case& c = cases_.at("tiny-gpt2");
        const ActivationCache cache = runForward(*c.model, c.tokens);
        LogitGradient seed{int(c.tokens.size()), RowVector::Zero(512)};
        try {
            runBackward(*c.model, cache, std::span(&seed, 1));
            QFAIL("a position past the prompt was accepted");
        } catch (const InputError& e) {
            QCOMPARE(QString(e.what()), QStringLiteral("The metric's position 8 is outside the prompt's 8 positions."));
        }
        seed.position = 7;
        seed.d_logits = RowVector::Zero(10);
        QVERIFY_THROWS_EXCEPTION(InputError, runBackward(*c.model, cache, std::span(&seed, 1)));

        // over the budget: refused before allocating, with both sizes and the budget's origin
        seed.d_logits = RowVector::Zero(512);
        qputenv("ATTNSCOPE_MEMORY_BUDGET", "1000");
        try {
            runBackward(*c.model, cache, std::span(&seed, 1));
            qunsetenv("ATTNSCOPE_MEMORY_BUDGET");
            QFAIL("a backward over the budget ran");
        } catch (const InputError& e) {
            qunsetenv("ATTNSCOPE_MEMORY_BUDGET");
            const QString m = e.what();
            QVERIFY2(m.startsWith(QStringLiteral("The gradients of 8 positions need %1 but the memory budget is %2 (")
                                      .arg(formatBytes(estimateGradientBytes(c.model->config(), 8, {})), formatBytes(1000))) &&
                         m.contains("ATTNSCOPE_MEMORY_BUDGET"), qPrintable(m));
            QVERIFY(estimateGradientBytes(c.model->config(), 8, {}) > 8 * 64 * 4 * 10); // every layer's residual gradients at least
        }
        // cancelled between layers
        int steps = 0;
        Progress cancelAfterOne;
        cancelAfterOne.report = [&](qint64, qint64, const QString&) { ++steps; };
        cancelAfterOne.isCancelled = [&] { return steps >= 1; };
        seed.d_logits(3) = 1;
        QVERIFY_THROWS_EXCEPTION(Cancelled, runBackward(*c.model, cache, std::span(&seed, 1), {}, cancelAfterOne));
        QCOMPARE(steps, 1);

        // a non-finite logit gradient is reported at the first hook it reaches, not drawn as a blank
        seed.d_logits(3) = std::numeric_limits<float>::infinity();
        const GradientCache g = runBackward(*c.model, cache, std::span(&seed, 1));
        QCOMPARE(g.firstNonFinite, QStringLiteral("blocks.1.hook_resid_post"));
    }
};

QTEST_GUILESS_MAIN(TestBackward)
#include "tst_backward.moc"
