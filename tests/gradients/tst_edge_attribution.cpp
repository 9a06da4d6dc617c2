// Edge attribution (model/analysis/gradients/edge_attribution.h):
//  - the graph of EAP-IG's code: node and edge counts (gpt2-small's 32 491 edges) and names;
//  - every sampled edge's EAP and EAP-IG score against float64 central differences of an independent forward
//    (support/hooked_forward64.h) whose receiver input is moved along the sender's corrupt − clean output: the
//    derivative of the metric along Δ_u at v's input is Δ_u · g_v. EAP-IG's steps run the same float64 forward
//    with the embeddings moved to corrupt + (k/m)(clean − corrupt). tiny-gpt2, stories260K (grouped-query
//    heads scored per query head), a random Mistral (sliding window, q/k/v biases, untied head), Qwen 3 (q/k norms),
//    and Gemma 2 and Gemma 3 (post-norms: the quotients in the forward with the post-attention divisors frozen, as
//    the scores are defined there; with them live some scores are missed); each sampled receiver's edges sum to the
//    quotient along its whole input difference;
//  - faithfulness: every edge gives the clean metric, none the corrupted one, and leaving out all of one
//    sender's edges equals noising that sender with a hooked forward pass (post-norm models: the float64 forward
//    with the post-attention divisors frozen at the clean run's);
//  - on the demo model's induction pair, the EAP-IG circuit recovers the metric and beats a random circuit;
//  - refusals and cancel.

#include "model/analysis/circuits/activation_patching.h"
#include "model/analysis/gradients/edge_attribution.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/gguf_q8_copy.h"
#include "support/gradient_cases.h"
#include "support/stories_reference.h"
#include "support/hooked_forward64.h"
#include "support/induction_pair.h"
#include "support/test_paths.h"

#include <QTemporaryDir>
#include <QtTest>
#include <random>

using namespace attnscope;
using namespace attnscope::test;

namespace {

struct Case {
    std::shared_ptr<const Model> model;
    std::vector<int> clean, corrupt;
    int token = 0, counter = 0; ///< metric: logit[token] − logit[counter] at the last position
};

PatchingMetric logitDiff(const Case& c) {
    PatchingMetric m;
    m.kind = PatchingMetricKind::LogitDiff;
    m.token = c.token;
    m.counterToken = c.counter;
    return m;
}

double metric64(const Case& c, const Hooked64Options& o) {
    const Matrix64 logits = hookedLogits64(*c.model, c.clean, o);
    const Eigen::Index last = logits.rows() - 1;
    return logits(last, c.token) - logits(last, c.counter);
}

/// The post-attention norms' divisors of the float64 forward of `tokens` (post-norm models), with an optional shift of
/// the token embeddings (EAP-IG's steps).
Frozen64 divisors64(const Case& c, const std::vector<int>& tokens, const Matrix64& embedShift = {}) {
    Frozen64 f;
    Hooked64Options o;
    o.record = &f;
    if (embedShift.size()) o.more = {{QStringLiteral("hook_embed"), embedShift}};
    hookedLogits64(*c.model, tokens, o);
    return f;
}

/// Sender s's corrupt − clean output [pos, d_model] in double, from the caches' stored z and mlp_out. On post-norm
/// models a head's output is its share z_h·W_O^h ⊙ w/σ of the normed attn_out, σ each run's own post-attention divisor
/// (from the float64 forward's `cleanNorms` and `corruptNorms`).
Matrix64 senderDelta(const Model& model, const EdgeSender& s, const ActivationCache& clean, const ActivationCache& corrupt,
                     const Frozen64* cleanNorms = nullptr, const Frozen64* corruptNorms = nullptr) {
    const int L = model.config().d_head;
    switch (s.kind) {
    case EdgeSender::Kind::Input: return (corrupt.embed - clean.embed).cast<double>();
    case EdgeSender::Kind::Mlp: return (corrupt.stored(s.layer).mlp_out - clean.stored(s.layer).mlp_out).cast<double>();
    case EdgeSender::Kind::Head: {
        const Matrix64 W_O = model.layer(s.layer).W_O_head(s.head, L).toMatrix().cast<double>();
        auto output = [&](const ActivationCache& run, const Frozen64* norms) {
            Matrix64 r = run.stored(s.layer).z.middleCols(s.head * L, L).cast<double>() * W_O;
            if (!model.config().postNorms) return r;
            const Eigen::VectorXd& sigma = norms->divisors.at(QStringLiteral("blocks.%1.ln1_post").arg(s.layer));
            const Eigen::RowVectorXd w = model.layer(s.layer).ln1_post_w.toMatrix().cast<double>().row(0);
            for (Eigen::Index p = 0; p < r.rows(); ++p) r.row(p) = r.row(p).cwiseProduct(w) / sigma(p);
            return r;
        };
        return output(corrupt, corruptNorms) - output(clean, cleanNorms);
    }
    }
    return {};
}

/// The float64 forward's hook where sender s's output enters the residual stream.
QString senderHook(const EdgeSender& s) {
    switch (s.kind) {
    case EdgeSender::Kind::Input: return QStringLiteral("hook_embed");
    case EdgeSender::Kind::Head: return QStringLiteral("blocks.%1.hook_attn_out").arg(s.layer);
    case EdgeSender::Kind::Mlp: return QStringLiteral("blocks.%1.hook_mlp_out").arg(s.layer);
    }
    return {};
}

/// The float64 forward's hook for receiver r's input.
QString receiverHook(const ModelConfig& cfg, const EdgeReceiver& r) {
    switch (r.kind) {
    case EdgeReceiver::Kind::Q: return QStringLiteral("blocks.%1.hook_q_input.%2").arg(r.layer).arg(r.head);
    case EdgeReceiver::Kind::K: return QStringLiteral("blocks.%1.hook_k_input.%2").arg(r.layer).arg(r.head);
    case EdgeReceiver::Kind::V: return QStringLiteral("blocks.%1.hook_v_input.%2").arg(r.layer).arg(r.head);
    case EdgeReceiver::Kind::Mlp: return QStringLiteral("blocks.%1.hook_mlp_in").arg(r.layer);
    case EdgeReceiver::Kind::Logits: return QStringLiteral("blocks.%1.hook_resid_post").arg(cfg.n_layers - 1);
    }
    return {};
}

/// Metric of the clean prompt with every edge outside `keep` patched, via hooks: the sender (all of whose edges
/// are left out) noised, i.e. its output replaced by the corrupted run's.
double noisedSender(const Case& c, const EdgeSender& s, const ActivationCache& corrupt) {
    const ModelConfig& cfg = c.model->config();
    auto hooks = std::make_shared<ForwardHooks>();
    if (s.kind == EdgeSender::Kind::Head)
        hooks->z = [&](int l, Matrix& z) {
            if (l == s.layer) z.middleCols(s.head * cfg.d_head, cfg.d_head) = corrupt.stored(l).z.middleCols(s.head * cfg.d_head, cfg.d_head);
        };
    else if (s.kind == EdgeSender::Kind::Mlp)
        hooks->mlp_out = [&](int l, Matrix& m) {
            if (l == s.layer) m = corrupt.stored(l).mlp_out;
        };
    else
        hooks->resid_pre = [&](int l, Matrix& x) {
            if (l == 0) x = corrupt.embed + corrupt.pos_embed;
        };
    ForwardOptions o;
    o.hooks = hooks;
    const ActivationCache run = runForward(*c.model, c.clean, o);
    const Eigen::Index last = run.logits.rows() - 1;
    return double(run.logits(last, c.token)) - double(run.logits(last, c.counter));
}

} // namespace

class TestEdgeAttribution : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::map<QString, Case> cases_;

    PatchingRuns runsOf(const Case& c) { return preparePatchingRuns(*c.model, c.clean, c.corrupt); }

private slots:
    void initTestCase() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QVERIFY(tmp_.isValid());
        // the gradient suites' three models and prompts (support/gradient_cases.h), each with a corrupted prompt
        for (const auto& [name, g] : gradientCases(tmp_.path())) {
            Case c{g.model, g.tokens, g.tokens, g.token, g.counter};
            if (name == "tiny-gpt2") c.corrupt[2] = 77, c.corrupt[5] = 300;
            else if (name == "stories260K") c.corrupt[2] = 60, c.corrupt[5] = 200;
            else c.corrupt[1] = 41, c.corrupt[4] = 70;
            cases_[name] = c;
        }
        QCOMPARE(cases_.at("mistral").model->config().n_kv_heads, 2);
        // stories260K with its matrices in Q8_0 blocks: the per-head columns and transposed reads of quantized weights
        QFile q8(tmp_.filePath("stories260K-q8.gguf"));
        QVERIFY(q8.open(QIODevice::WriteOnly));
        q8.write(ggufQ8_0Copy(storiesFile("stories260K.gguf"), Q8Copy::Q8_0));
        q8.close();
        Case quantized = cases_.at("stories260K");
        quantized.model = loadModel(q8.fileName());
        QVERIFY(quantized.model->layer(0).W_Q.type == WeightType::Blocks);
        cases_["stories260K-q8"] = quantized;
    }

    void graphIsEapIgs() {
        ModelConfig cfg;
        cfg.n_layers = 12;
        cfg.n_heads = 12;
        const EdgeGraph g = edgeGraph(cfg);
        QCOMPARE(g.senders.size(), size_t(157));
        QCOMPARE(g.receivers.size(), size_t(445));
        QCOMPARE(g.edges.size(), size_t(32491)); // Syed et al., and EAP-IG's Graph.from_model("gpt2")
        QCOMPARE(g.edgeName(g.edges.front()), QStringLiteral("input->a0.h0<q>"));
        QCOMPARE(g.edgeName(g.edges.back()), QStringLiteral("m11->logits"));
        // layer 1's MLP reads the input, layer 0's heads and MLP, and layer 1's heads
        int intoM1 = 0;
        for (const ScoredEdge& e : g.edges)
            if (edgeReceiverName(g.receivers[size_t(e.receiver)]) == QLatin1String("m1")) {
                ++intoM1;
                const EdgeSender& s = g.senders[size_t(e.sender)];
                QVERIFY(s.layer <= 1 && !(s.layer == 1 && s.kind == EdgeSender::Kind::Mlp));
            }
        QCOMPARE(intoM1, 1 + 13 + 12);
    }

    void scoresMatchFiniteDifferences_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("ig");
        for (const char* m : {"tiny-gpt2", "stories260K", "mistral", "qwen3", "stories260K-q8", "gemma2", "gemma3"}) {
            QTest::addRow("%s eap", m) << QString(m) << false;
            QTest::addRow("%s eap-ig", m) << QString(m) << true;
        }
    }

    /// Post-norm models (Gemma 2, 3): the difference quotients are taken in the float64 forward with the post-attention
    /// divisors frozen at the base run's (the clean run, or EAP-IG's step), and the heads' Δ are their shares under each
    /// run's own divisor; the same quotients with the divisors live miss some scores (what freezing changes).
    void scoresMatchFiniteDifferences() {
        QFETCH(QString, model);
        QFETCH(bool, ig);
        const Case& c = cases_.at(model);
        const ModelConfig& cfg = c.model->config();
        const bool postNorms = cfg.postNorms;
        const PatchingRuns runs = runsOf(c);
        EdgeAttributionOptions o;
        o.method = ig ? EdgeAttributionMethod::EapIg : EdgeAttributionMethod::Eap;
        o.steps = 3;
        o.metric = logitDiff(c);
        const EdgeAttribution a = runEdgeAttribution(*c.model, runs, o);
        QCOMPARE(a.graph.edges.size(), edgeGraph(cfg).edges.size());
        const Eigen::Index last = runs.clean->logits.rows() - 1;
        QCOMPARE(a.clean, double(runs.clean->logits(last, c.token)) - double(runs.clean->logits(last, c.counter)));

        // the 12 largest edges and 24 others at random
        std::vector<int> sample = selectCircuitEdges(a.graph, 12);
        std::mt19937 rng(5);
        std::uniform_int_distribution<int> any(0, int(a.graph.edges.size()) - 1);
        for (int i = 0; i < 24; ++i) sample.push_back(any(rng));
        double largest = 0;
        for (const ScoredEdge& e : a.graph.edges) largest = std::max(largest, std::abs(e.score));
        QVERIFY(largest > 1e-3);

        const Matrix64 embedShift = (runs.corrupt->embed - runs.clean->embed).cast<double>(); // corrupt − clean
        const int passes = ig ? o.steps : 1;
        // each pass's base run: the embeddings' shift and (post-norm models) its post-attention divisors
        std::vector<Matrix64> shifts(static_cast<size_t>(passes));
        std::vector<Frozen64> bases(static_cast<size_t>(passes));
        for (int k = 0; k < passes; ++k) {
            if (ig) shifts[size_t(k)] = (1.0 - double(k) / o.steps) * embedShift;
            if (postNorms) bases[size_t(k)] = divisors64(c, c.clean, shifts[size_t(k)]);
        }
        const Frozen64 cleanNorms = postNorms ? divisors64(c, c.clean) : Frozen64{};
        const Frozen64 corruptNorms = postNorms ? divisors64(c, c.corrupt) : Frozen64{};
        const double eps = 1e-4;
        // the derivative of the metric along `delta` at `hook`, averaged over the passes; frozen: the post-attention
        // divisors held at each pass's base run
        auto quotient = [&](const QString& hook, const Matrix64& delta, bool frozen) {
            double sum = 0;
            for (int k = 0; k < passes; ++k) {
                Hooked64Options h;
                h.hook = hook;
                if (ig) h.more = {{QStringLiteral("hook_embed"), shifts[size_t(k)]}};
                h.freezePostAttentionNorm = frozen && postNorms;
                h.frozen = &bases[size_t(k)];
                h.delta = eps * delta;
                const double plus = metric64(c, h);
                h.delta = -eps * delta;
                sum += (plus - metric64(c, h)) / (2 * eps) / passes;
            }
            return sum;
        };
        const double tolerance = 1e-4 * largest + 1e-6;
        int liveMisses = 0;
        for (int e : sample) {
            const ScoredEdge& edge = a.graph.edges[size_t(e)];
            const Matrix64 delta = senderDelta(*c.model, a.graph.senders[size_t(edge.sender)], *runs.clean, *runs.corrupt,
                                               &cleanNorms, &corruptNorms);
            const QString hook = receiverHook(cfg, a.graph.receivers[size_t(edge.receiver)]);
            const double expected = quotient(hook, delta, true);
            QVERIFY2(std::abs(edge.score - expected) <= tolerance,
                     qPrintable(QStringLiteral("%1: score %2, float64 difference quotient %3 (largest |score| %4)")
                                    .arg(a.graph.edgeName(edge)).arg(edge.score, 0, 'g', 9).arg(expected, 0, 'g', 9).arg(largest)));
            if (postNorms && std::abs(edge.score - quotient(hook, delta, false)) > 10 * tolerance) ++liveMisses;
        }
        if (postNorms) QVERIFY2(liveMisses >= 3, qPrintable(QStringLiteral("%1 scores differ from the live model's").arg(liveMisses)));

        // a receiver's edges sum to its whole input difference (corrupt − clean residual where it reads) times g_v: the
        // heads' shares of each run add up to that run's attn_out
        const Matrix64 residShift = (runs.corrupt->stored(cfg.n_layers - 1).resid_post - runs.clean->stored(cfg.n_layers - 1).resid_post).cast<double>();
        for (int r = 0; r < int(a.graph.receivers.size()); r += std::max(1, int(a.graph.receivers.size()) / 7)) {
            const EdgeReceiver& v = a.graph.receivers[size_t(r)];
            Matrix64 total = residShift;
            if (v.kind == EdgeReceiver::Kind::Mlp)
                total = (runs.corrupt->stored(v.layer).resid_mid - runs.clean->stored(v.layer).resid_mid).cast<double>();
            else if (v.kind != EdgeReceiver::Kind::Logits)
                total = (runs.corrupt->stored(v.layer).resid_pre - runs.clean->stored(v.layer).resid_pre).cast<double>();
            double sum = 0;
            for (const ScoredEdge& e : a.graph.edges)
                if (e.receiver == r) sum += e.score;
            const double expected = quotient(receiverHook(cfg, v), total, true);
            QVERIFY2(std::abs(sum - expected) <= 10 * tolerance,
                     qPrintable(QStringLiteral("%1: Σ scores %2, along the whole input difference %3")
                                    .arg(edgeReceiverName(v)).arg(sum, 0, 'g', 9).arg(expected, 0, 'g', 9)));
        }
    }

    void faithfulnessEnds_data() {
        QTest::addColumn<QString>("model");
        for (const char* m : {"tiny-gpt2", "stories260K", "mistral", "qwen3", "stories260K-q8", "gemma2", "gemma3"})
            QTest::addRow("%s", m) << QString(m);
    }

    /// Every edge: the clean metric; no edge: the corrupted metric; all of one sender's edges left out: that
    /// sender noised (its output the corrupted run's) in a hooked forward pass. Post-norm models: in the float64
    /// forward with the post-attention divisors frozen at the clean run's, the sender's corrupt − clean share added
    /// where it enters the residual stream.
    void faithfulnessEnds() {
        QFETCH(QString, model);
        const Case& c = cases_.at(model);
        const PatchingRuns runs = runsOf(c);
        const PatchingMetric m = logitDiff(c);
        const EdgeGraph g = edgeGraph(c.model->config());
        std::vector<int> all(g.edges.size());
        std::iota(all.begin(), all.end(), 0);
        const CircuitFaithfulness full = evaluateCircuit(*c.model, runs, m, g, all);
        const double span = std::abs(full.clean - full.corrupt);
        QVERIFY(span > 1e-2);
        QVERIFY2(std::abs(full.metric - full.clean) < 1e-4 * (1 + std::abs(full.clean)), qPrintable(QString::number(full.metric - full.clean)));
        QVERIFY(std::abs(full.recovered - 1) < 1e-3);
        const CircuitFaithfulness none = evaluateCircuit(*c.model, runs, m, g, {});
        QVERIFY2(std::abs(none.metric - none.corrupt) < 1e-4 * (1 + std::abs(none.corrupt)), qPrintable(QString::number(none.metric - none.corrupt)));
        QCOMPARE(none.edges, 0);

        const bool postNorms = c.model->config().postNorms;
        const Frozen64 cleanNorms = postNorms ? divisors64(c, c.clean) : Frozen64{};
        const Frozen64 corruptNorms = postNorms ? divisors64(c, c.corrupt) : Frozen64{};
        int differs = 0;
        for (size_t s = 0; s < g.senders.size(); ++s) {
            std::vector<int> keep;
            for (int e = 0; e < int(g.edges.size()); ++e)
                if (g.edges[size_t(e)].sender != int(s)) keep.push_back(e);
            const CircuitFaithfulness f = evaluateCircuit(*c.model, runs, m, g, keep);
            double hooked = 0;
            if (postNorms) {
                Hooked64Options h;
                h.freezePostAttentionNorm = true;
                h.frozen = &cleanNorms;
                h.hook = senderHook(g.senders[s]);
                h.delta = senderDelta(*c.model, g.senders[s], *runs.clean, *runs.corrupt, &cleanNorms, &corruptNorms);
                hooked = metric64(c, h);
            } else {
                hooked = noisedSender(c, g.senders[s], *runs.corrupt);
            }
            QVERIFY2(std::abs(f.metric - hooked) < 1e-4 * (1 + std::abs(hooked)),
                     qPrintable(QStringLiteral("without %1's edges %2, noised %3").arg(edgeSenderName(g.senders[s])).arg(f.metric).arg(hooked)));
            if (std::abs(f.metric - full.clean) > 1e-3 * span) ++differs;
        }
        QVERIFY(differs >= 3);
    }

    /// On the demo model's induction pair the EAP-IG circuit of the top 20 of its 110 edges recovers most of the
    /// metric (0.77 here), and far more than 20 edges at random.
    void demoCircuit() {
        const std::shared_ptr<const Model> demo = loadModel(demoDir());
        const InductionPair p = inductionPair(demo->config(), 10);
        const PatchingRuns runs = preparePatchingRuns(*demo, p.clean, p.corrupt);
        EdgeAttributionOptions o;
        o.metric.kind = PatchingMetricKind::LogitDiff;
        o.metric.token = p.answer;
        o.metric.counterToken = p.corruptAnswer;
        const EdgeAttribution a = runEdgeAttribution(*demo, runs, o);
        QCOMPARE(a.options.steps, 5);
        const std::vector<int> top = selectCircuitEdges(a.graph, 20);
        const CircuitFaithfulness f = evaluateCircuit(*demo, runs, o.metric, a.graph, top);
        std::vector<int> random(a.graph.edges.size());
        std::iota(random.begin(), random.end(), 0);
        std::shuffle(random.begin(), random.end(), std::mt19937(3));
        random.resize(20);
        const CircuitFaithfulness r = evaluateCircuit(*demo, runs, o.metric, a.graph, random);
        qInfo("demo induction pair: %zu edges; top 20 by EAP-IG recover %.3f, 20 at random %.3f (clean %.3f, corrupt %.3f)",
              a.graph.edges.size(), f.recovered, r.recovered, f.clean, f.corrupt);
        QVERIFY(f.recovered > 0.7);
        QVERIFY(f.recovered > r.recovered + 0.4);
        // thresholds: every kept edge is at least as large as every edge left out
        const std::vector<int> above = selectCircuitEdges(a.graph, 0, std::abs(a.graph.edges[size_t(top[4])].score));
        QVERIFY(above.size() >= 5);
        QCOMPARE(std::vector<int>(above.begin(), above.begin() + 5), std::vector<int>(top.begin(), top.begin() + 5));
        for (size_t i = 1; i < top.size(); ++i)
            QVERIFY(std::abs(a.graph.edges[size_t(top[i - 1])].score) >= std::abs(a.graph.edges[size_t(top[i])].score));
    }

    void refusals() {
        const Case& c = cases_.at("tiny-gpt2");
        PatchingRuns runs = runsOf(c);
        EdgeAttributionOptions o;
        o.metric = logitDiff(c);
        o.steps = 0;
        try {
            runEdgeAttribution(*c.model, runs, o);
            QFAIL("steps 0 accepted");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromUtf8(e.what()), QStringLiteral("EAP-IG needs at least 1 step, got 0."));
        }
        o.steps = 2;
        PatchingRuns noCorrupt{runs.clean, nullptr, {}};
        try {
            runEdgeAttribution(*c.model, noCorrupt, o);
            QFAIL("a missing corrupted run accepted");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromUtf8(e.what()), QStringLiteral("Edge attribution needs a clean and a corrupted prompt."));
        }
        std::vector<int> shorter(c.clean.begin(), c.clean.end() - 1);
        PatchingRuns uneven{runs.clean, std::make_shared<const ActivationCache>(runForward(*c.model, shorter)), {}};
        try {
            runEdgeAttribution(*c.model, uneven, o);
            QFAIL("prompts of different lengths accepted");
        } catch (const InputError& e) {
            QVERIFY(QString::fromUtf8(e.what()).startsWith("The clean prompt has 8 tokens and the corrupted 7"));
        }
        const EdgeGraph g = edgeGraph(c.model->config());
        const int bad = int(g.edges.size());
        try {
            evaluateCircuit(*c.model, runs, o.metric, g, std::span(&bad, 1));
            QFAIL("an edge out of range accepted");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromUtf8(e.what()), QStringLiteral("Edge %1 is not in the graph's %1 edges.").arg(bad));
        }
        o.metric.token = c.model->config().d_vocab;
        QVERIFY_THROWS_EXCEPTION(InputError, runEdgeAttribution(*c.model, runs, o));
        o.metric = logitDiff(c);
        // over the memory budget: refused before the backward passes, with the sizes
        qputenv("ATTNSCOPE_MEMORY_BUDGET", "20000");
        try {
            runEdgeAttribution(*c.model, runs, o);
            qunsetenv("ATTNSCOPE_MEMORY_BUDGET");
            QFAIL("edge attribution over the budget ran");
        } catch (const InputError& e) {
            qunsetenv("ATTNSCOPE_MEMORY_BUDGET");
            const QString m = QString::fromUtf8(e.what());
            QVERIFY2(m.startsWith("Edge attribution over 8 positions needs ") && m.contains("but the memory budget is 19.5 kB") &&
                         m.contains("ATTNSCOPE_MEMORY_BUDGET"), qPrintable(m));
        }
        Progress cancel;
        int calls = 0;
        cancel.isCancelled = [&] { return ++calls > 2; };
        QVERIFY_THROWS_EXCEPTION(Cancelled, runEdgeAttribution(*c.model, runs, o, cancel));
        QVERIFY(calls > 2);
    }
};

QTEST_GUILESS_MAIN(TestEdgeAttribution)
#include "tst_edge_attribution.moc"
