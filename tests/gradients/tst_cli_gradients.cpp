// The gradient modes of the command line, run as a real process on the demo model: --gradients writes every
// hook point's gradient under its TransformerLens name with the numbers the library computes in this process
// (which tst_backward holds against finite differences), --stop-gradient reaches the backward pass,
// --attribution-patch writes the --patch JSON with "method": "attribution" (and "atp_star" with --atp-star),
// --eap writes every edge's score, the circuit and its faithfulness as the library computes them, and the bad
// combinations exit 2 with their message.

#include "model/analysis/gradients/attribution_patching.h"
#include "model/analysis/gradients/edge_attribution.h"
#include "model/analysis/gradients/input_attribution.h"
#include "model/analysis/gradients/metric_gradients.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/transformer/prompt.h"
#include "support/cli_process.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {
CliRun runExe(const QStringList& args) { return runCli(attnscope::test::attnscopeExe(), args); }
const QString kClean = QStringLiteral("In the beginning God created the heaven and the earth. In the beginning God");
const QString kCorrupt = QStringLiteral("In the beginning Lord made the heaven and the earth. In the beginning God");
const QString kMetric = QStringLiteral("logit_diff: created, made");
} // namespace

class TestCliGradients : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    std::shared_ptr<const Model> demo_ = loadModel(demoDir());

    QJsonObject dumpOf(const QStringList& args, const QString& key) { return demoDumpOf(attnscope::test::attnscopeExe(), dir_.path(), args, key); }

private slots:
    void gradients_data() {
        QTest::addColumn<QString>("stops");
        QTest::newRow("exact") << QString();
        QTest::newRow("frozen norm and pattern") << QStringLiteral("norm,pattern");
    }
    void gradients() {
        QFETCH(QString, stops);
        QStringList args{"--prompt", kClean, "--metric", kMetric, "--gradients"};
        if (!stops.isEmpty()) args << "--stop-gradient" << stops;
        const QJsonObject g = dumpOf(args, "gradients");
        QCOMPARE(g["run"].toString(), QStringLiteral("prompt"));
        QVERIFY(g["first_non_finite"].isNull());
        QCOMPARE(g["stop_gradients"].toArray(), stops.isEmpty() ? QJsonArray{} : (QJsonArray{"norm", "pattern"}));
        QVERIFY(g["conventions"].toObject().contains("hooks"));
        const QJsonObject hooks = g["hooks"].toObject();
        const ModelConfig& cfg = demo_->config();
        QCOMPARE(hooks.size(), 1 + 12 * cfg.n_layers);

        const Tokenizer& tok = demo_->tokenizer();
        const std::vector<int> ids = tokenizePrompt(tok, kClean, tok.addsBos());
        const int S = int(ids.size());
        const ActivationCache cache = runForward(*demo_, ids);
        BackwardOptions o;
        o.stops = StopGradients{!stops.isEmpty(), !stops.isEmpty(), false};
        const MetricGradients m = metricGradients(*demo_, cache, parsePatchingMetric(tok, kMetric), RowVector(), o);
        QCOMPARE(g["value"].toDouble(), m.value);
        QCOMPARE(g["position"].toInt(), S - 1);
        QCOMPARE(matrixFromJson(hooks["hook_embed"].toArray()), m.gradients.embed);
        const LayerGradients& l1 = m.gradients.layers[1];
        QCOMPARE(matrixFromJson(hooks["blocks.1.hook_resid_pre"].toArray()), l1.resid_pre);
        QCOMPARE(matrixFromJson(hooks["blocks.1.attn.hook_k"].toArray()), l1.k);
        QCOMPARE(matrixFromJson(hooks["blocks.1.mlp.hook_post"].toArray()), l1.mlp_post);
        const QJsonArray pattern = hooks["blocks.1.attn.hook_pattern"].toArray();
        QCOMPARE(pattern.size(), cfg.n_heads);
        QCOMPARE(matrixFromJson(pattern[2].toArray()), l1.pattern[2]);
        QCOMPARE(hooks["blocks.0.hook_mlp_out"].toArray().size(), S);
        QCOMPARE(hooks["blocks.0.mlp.hook_pre"].toArray()[0].toArray().size(), cfg.d_mlp);
        if (!stops.isEmpty()) QCOMPARE(l1.q.cwiseAbs().maxCoeff(), 0.0f); // the frozen pattern passes nothing to q
    }

    void gradientsOnTheCorruptedRunWithKl() {
        const QJsonObject g = dumpOf({"--prompt", kClean, "--corrupt-prompt", kCorrupt, "--metric", "kl", "--gradients"}, "gradients");
        QCOMPARE(g["run"].toString(), QStringLiteral("corrupted"));
        QVERIFY(g["value"].toDouble() > 0.01); // the corrupted run's distribution differs from the prompt's
        QCOMPARE(g["metric"].toObject()["kind"].toString(), QStringLiteral("kl"));
    }

    void saliency() {
        const QJsonObject s = dumpOf({"--prompt", kClean, "--metric", "logit: created", "--saliency", "ig", "--ig-steps", "16",
                                      "--baseline", " the"}, "saliency");
        QCOMPARE(s["method"].toString(), QStringLiteral("ig"));
        QCOMPARE(s["steps"].toInt(), 16);
        QCOMPARE(s["baseline"].toObject()["token"].toString(), QStringLiteral(" the"));
        const Tokenizer& tok = demo_->tokenizer();
        const std::vector<int> ids = tokenizePrompt(tok, kClean, true);
        InputAttributionOptions o;
        o.steps = 16;
        o.baselineToken = s["baseline"].toObject()["token_id"].toInt();
        o.metric = parsePatchingMetric(tok, QStringLiteral("logit: created"));
        const InputAttribution a = attributeInput(*demo_, ids, o);
        const QJsonArray attributions = s["attributions"].toArray();
        QCOMPARE(attributions.size(), qsizetype(ids.size()));
        for (int i = 0; i < attributions.size(); ++i) QCOMPARE(attributions[i].toDouble(), a.attributions[size_t(i)]);
        QCOMPARE(s["completeness_error"].toDouble(), a.completenessError);
        QCOMPARE(s["tokens"].toArray().size(), attributions.size());
    }

    /// --eap writes every edge with the library's score, the circuit of the --top edges and its faithfulness;
    /// --ig-steps 0 is EAP.
    void edgeAttribution_data() {
        QTest::addColumn<int>("steps");
        QTest::newRow("eap-ig 3") << 3;
        QTest::newRow("eap") << 0;
    }
    void edgeAttribution() {
        QFETCH(int, steps);
        const QJsonObject e = dumpOf({"--prompt", kClean, "--corrupt-prompt", kCorrupt, "--metric", kMetric, "--eap", "--ig-steps",
                                      QString::number(steps), "--top", "12"}, "edge_attribution");
        QCOMPARE(e["method"].toString(), steps > 0 ? QStringLiteral("eap-ig") : QStringLiteral("eap"));
        const Tokenizer& tok = demo_->tokenizer();
        const PatchingRuns runs = preparePatchingRuns(*demo_, tokenizePrompt(tok, kClean, true), tokenizePrompt(tok, kCorrupt, true));
        EdgeAttributionOptions o;
        o.method = steps > 0 ? EdgeAttributionMethod::EapIg : EdgeAttributionMethod::Eap;
        o.steps = std::max(steps, 1);
        o.metric = parsePatchingMetric(tok, kMetric);
        const EdgeAttribution a = runEdgeAttribution(*demo_, runs, o);
        const QJsonArray edges = e["edges"].toArray();
        QCOMPARE(edges.size(), qsizetype(a.graph.edges.size()));
        QCOMPARE(e["n_edges"].toInt(), int(a.graph.edges.size()));
        int inCircuit = 0;
        for (int i = 0; i < edges.size(); ++i) {
            const QJsonObject x = edges[i].toObject();
            QCOMPARE(x["score"].toDouble(), a.graph.edges[size_t(i)].score);
            QCOMPARE(x["name"].toString(), a.graph.edgeName(a.graph.edges[size_t(i)]));
            QCOMPARE(x["name"].toString(), x["source"].toString() + "->" + x["target"].toString());
            inCircuit += x["in_circuit"].toBool();
        }
        QCOMPARE(inCircuit, 12);
        const std::vector<int> circuit = selectCircuitEdges(a.graph, 12);
        for (int i : circuit) QVERIFY(edges[i].toObject()["in_circuit"].toBool());
        const CircuitFaithfulness f = evaluateCircuit(*demo_, runs, o.metric, a.graph, circuit);
        const QJsonObject c = e["circuit"].toObject();
        QCOMPARE(c["edges"].toInt(), 12);
        QCOMPARE(c["recovered"].toDouble(), f.recovered);
        QCOMPARE(e["clean"].toDouble(), a.clean);
        QVERIFY(e["conventions"].toObject()["score"].toString().contains(steps > 0 ? "EAP-IG" : "EAP)"));
    }

    void attributionPatch_data() {
        QTest::addColumn<QString>("hook");
        QTest::addColumn<bool>("star");
        QTest::newRow("z") << "z" << false;
        QTest::newRow("k AtP*") << "k" << true;
    }
    void attributionPatch() {
        QFETCH(QString, hook);
        QFETCH(bool, star);
        QStringList args{"--prompt", kClean, "--corrupt-prompt", kCorrupt, "--metric", kMetric, "--attribution-patch", hook};
        if (star) args << "--atp-star";
        const QJsonObject p = dumpOf(args, "patching");
        QCOMPARE(p["method"].toString(), star ? QStringLiteral("atp_star") : QStringLiteral("attribution"));
        QCOMPARE(p["activation"].toString(), hook);
        QVERIFY(p["conventions"].toObject()["method"].toString().startsWith("attribution patching"));
        const Tokenizer& tok = demo_->tokenizer();
        const std::vector<int> clean = tokenizePrompt(tok, kClean, true), corrupt = tokenizePrompt(tok, kCorrupt, true);
        PatchingOptions o;
        o.hook = *patchHookFromName(hook);
        o.metric = parsePatchingMetric(tok, kMetric);
        const PatchingSweep s = runAttributionPatching(*demo_, preparePatchingRuns(*demo_, clean, corrupt), o, star);
        const QJsonArray cells = p["cells"].toArray();
        QCOMPARE(cells.size(), qsizetype(s.cells.size()));
        for (int i = 0; i < cells.size(); ++i) QCOMPARE(cells[i].toObject()["metric"].toDouble(), s.cells[size_t(i)].metric);
    }

    void badCombinations_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("no metric") << QStringList{"--prompt", "x", "--gradients"} << "--gradients needs --metric";
        QTest::newRow("kl alone") << QStringList{"--prompt", "x", "--gradients", "--metric", "kl"} << "--gradients with the kl metric needs --corrupt-prompt";
        QTest::newRow("stop without gradients") << QStringList{"--prompt", "x", "--stop-gradient", "norm"} << "--stop-gradient goes with --gradients";
        QTest::newRow("unknown stop") << QStringList{"--prompt", "x", "--gradients", "--metric", "logit: the", "--stop-gradient", "norm,softmax"}
                                      << "--stop-gradient takes norm, pattern and mlp, got 'softmax'";
        QTest::newRow("atp* alone") << QStringList{"--prompt", "x", "--atp-star"} << "--atp-star goes with --attribution-patch";
        QTest::newRow("both patches") << QStringList{"--prompt", "x", "--patch", "z", "--attribution-patch", "z"} << "give one of --patch and --attribution-patch";
        QTest::newRow("ablation") << QStringList{"--prompt", "x", "--metric", "logit: the", "--attribution-patch", "z", "--ablate", "zero"}
                                  << "--attribution-patch estimates patching between --prompt and --corrupt-prompt; it takes no --ablate";
        QTest::newRow("no corrupted prompt") << QStringList{"--prompt", "x", "--metric", "logit: the", "--attribution-patch", "mlp_out"}
                                             << "--attribution-patch needs --corrupt-prompt";
        QTest::newRow("saliency method") << QStringList{"--prompt", "x", "--metric", "logit: the", "--saliency", "lime"}
                                         << "--saliency must be ig or grad-x-input, got 'lime'";
        QTest::newRow("saliency kl") << QStringList{"--prompt", "x", "--metric", "kl", "--saliency", "ig"} << "--saliency takes logit_diff, logit, prob or logprob";
        QTest::newRow("ig steps alone") << QStringList{"--prompt", "x", "--ig-steps", "8"} << "--ig-steps goes with --saliency or --eap";
        QTest::newRow("eap without corrupted prompt") << QStringList{"--prompt", "x", "--metric", "logit: the", "--eap"} << "--eap needs --corrupt-prompt";
        QTest::newRow("eap without metric") << QStringList{"--prompt", "x", "--corrupt-prompt", "y", "--eap"} << "--eap needs --metric";
        QTest::newRow("eap negative steps") << QStringList{"--prompt", "x", "--corrupt-prompt", "y", "--metric", "logit: the", "--eap", "--ig-steps", "-1"}
                                            << "--ig-steps must be an integer ≥ 0, got '-1'";
        QTest::newRow("eap and saliency") << QStringList{"--prompt", "x", "--metric", "logit: the", "--eap", "--saliency", "ig"} << "give one of --patch";
        QTest::newRow("ig steps 0") << QStringList{"--prompt", "x", "--metric", "logit: the", "--saliency", "ig", "--ig-steps", "0"}
                                    << "--ig-steps must be an integer ≥ 1, got '0'";
        QTest::newRow("two modes") << QStringList{"--prompt", "x", "--metric", "logit: the", "--gradients", "--flow"} << "give one of --patch";
    }
    void badCombinations() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const CliRun r = runExe(QStringList{"--model", "demo", "--dump-json", dir_.filePath("never.json")} + args);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(message), qPrintable(r.err));
        QVERIFY(!QFile::exists(dir_.filePath("never.json")));
    }
};

QTEST_GUILESS_MAIN(TestCliGradients)
#include "tst_cli_gradients.moc"
