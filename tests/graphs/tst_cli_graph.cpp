// The command line's attribution graph, run as a real process on the demo model with its bundled transcoders:
// --graph's "graph" member equals the library's graph in this process (nodes, kept edges and weights, scores),
// --graph-json writes Neuronpedia's layout (required members, node ids as circuit-tracer writes them, links among
// the listed nodes), and bad invocations fail with their messages.

#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/attribution_targets.h"
#include "model/analysis/graphs/edge_routes.h"
#include "model/analysis/graphs/feature_intervention.h"
#include "model/analysis/graphs/graph_pruning.h"
#include "model/analysis/graphs/replacement_model.h"
#include "model/features/dictionary_set.h"
#include "model/formats/model_loader.h"
#include "model/transformer/prompt.h"
#include "support/cli_process.h"
#include "support/error_capture.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QJsonArray>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {
const QString kPrompt = QStringLiteral("In the beginning God created the");
}

class TestCliGraph : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void graphDumpEqualsTheLibrary();
    void neuronpediaLayout();
    void badInvocations();
    void interventionAndRoutes();
    void featureNodeBoundAndTargets();

private:
    QTemporaryDir tmp_;
    std::shared_ptr<const Model> model_;
    DictionarySet set_;
    ReplacementModel rm_;
    AttributionGraph graph_;
    PrunedGraph pruned_;
};

void TestCliGraph::initTestCase() {
    model_ = loadModel(demoDir());
    set_ = openDictionaries(QStringLiteral(ATTNSCOPE_SOURCE_DIR "/resources/demo-features/transcoders"));
    rm_ = buildReplacementModel(*model_, set_, tokenizePrompt(model_->tokenizer(), kPrompt, true));
    graph_ = attributeGraph(rm_);
    pruned_ = pruneGraph(graph_, {0.7, 0.95});
}

void TestCliGraph::graphDumpEqualsTheLibrary() {
    const QJsonObject g = demoDumpOf(QStringLiteral(ATTNSCOPE_EXE), tmp_.path(),
                                     {"--prompt", kPrompt, "--transcoders", "transcoders", "--graph", "--node-threshold", "0.7",
                                      "--edge-threshold", "0.95"},
                                     QStringLiteral("graph"));
    QVERIFY(!g.isEmpty());
    QVERIFY(g["conventions"].toString().contains(QStringLiteral("frozen")));
    QCOMPARE(g["settings"].toObject()["node_threshold"].toDouble(), 0.7);
    QCOMPARE(g["counts"].toObject()["nodes"].toInt(), graph_.nNodes());
    QCOMPARE(g["counts"].toObject()["kept_nodes"].toInt(), pruned_.keptNodes());
    const QJsonArray nodes = g["nodes"].toArray();
    QCOMPARE(nodes.size(), graph_.nNodes());
    for (int i = 0; i < graph_.nNodes(); ++i) {
        QCOMPARE(nodes[i]["kept"].toBool(), bool(pruned_.nodeMask[size_t(i)]));
        if (graph_.nodes[size_t(i)].kind == GraphNodeKind::Feature) QCOMPARE(nodes[i]["feature"].toInt(), graph_.nodes[size_t(i)].id);
    }
    QCOMPARE(nodes[graph_.logitOffset]["kind"].toString(), QStringLiteral("logit"));
    QCOMPARE(nodes[graph_.logitOffset]["token"].toString(), QStringLiteral(" word"));
    const QJsonArray edges = g["edges"].toArray();
    QCOMPARE(edges.size(), int(pruned_.edges.size()));
    for (int i = 0; i < edges.size(); ++i) {
        const auto [t, s] = pruned_.edges[size_t(i)];
        QCOMPARE(edges[i]["target"].toInt(), t);
        QCOMPARE(edges[i]["source"].toInt(), s);
        QCOMPARE(float(edges[i]["weight"].toDouble()), graph_.adjacency(t, s));
    }
    const GraphScores sc = graphScores(graph_);
    QVERIFY(std::abs(g["scores"].toObject()["replacement"].toDouble() - sc.replacement) < 1e-12);
    QVERIFY(std::abs(g["scores"].toObject()["completeness"].toDouble() - sc.completeness) < 1e-12);
}

void TestCliGraph::neuronpediaLayout() {
    const QString file = tmp_.filePath(QStringLiteral("demo-graph.json"));
    const CliRun r = runCli(QStringLiteral(ATTNSCOPE_EXE), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders",
                                                            "--graph-json", file});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject j = readJsonObject(file);
    for (const char* key : {"metadata", "qParams", "nodes", "links"}) QVERIFY2(j.contains(QLatin1String(key)), key);
    const QJsonObject meta = j["metadata"].toObject();
    QCOMPARE(meta["slug"].toString(), QStringLiteral("demo-graph"));
    QCOMPARE(meta["scan"].toString(), QStringLiteral("attnscope-demo/transcoders")); // config.yaml's scan
    QCOMPARE(meta["prompt"].toString(), kPrompt);
    QCOMPARE(meta["prompt_tokens"].toArray().size(), graph_.nPositions());
    QCOMPARE(meta["prompt_tokens"][1].toString(), QStringLiteral("In"));
    QCOMPARE(meta["node_threshold"].toDouble(), 0.8);
    const PrunedGraph p = pruneGraph(graph_);
    QSet<QString> ids;
    int features = 0, logits = 0, tokens = 0;
    for (const QJsonValue& v : j["nodes"].toArray()) {
        const QJsonObject n = v.toObject();
        for (const char* key : {"node_id", "feature", "layer", "ctx_idx", "feature_type", "jsNodeId", "clerp"})
            QVERIFY2(n.contains(QLatin1String(key)), key);
        ids.insert(n["node_id"].toString());
        const QString type = n["feature_type"].toString();
        features += type == QLatin1String("cross layer transcoder");
        tokens += type == QLatin1String("embedding");
        if (type == QLatin1String("logit")) {
            ++logits;
            QCOMPARE(n["layer"].toString(), QStringLiteral("3")); // n_layers + 1
            QVERIFY(n["clerp"].toString().startsWith(QStringLiteral("Output \"")));
        }
    }
    QCOMPARE(logits, graph_.nNodes() - graph_.logitOffset);
    QCOMPARE(tokens, graph_.nPositions());
    QVERIFY(features > 0);
    QVERIFY(features <= p.keptNodes());
    // the top logit " word" (id 570) at position 6, and a feature id as circuit-tracer writes it
    QVERIFY(ids.contains(QStringLiteral("3_570_6")));
    const GraphNode& f = graph_.nodes[size_t(std::distance(p.nodeMask.begin(), std::find(p.nodeMask.begin(), p.nodeMask.end(), char(1))))];
    QVERIFY(f.kind != GraphNodeKind::Feature || ids.contains(QStringLiteral("%1_%2_%3").arg(f.layer).arg(f.id).arg(f.position)));
    const QJsonArray links = j["links"].toArray();
    QVERIFY(links.size() > 0);
    QVERIFY(links.size() <= int(p.edges.size()));
    for (const QJsonValue& l : links) {
        QVERIFY(ids.contains(l["source"].toString()));
        QVERIFY(ids.contains(l["target"].toString()));
        QVERIFY(l["weight"].isDouble());
    }
}

void TestCliGraph::badInvocations() {
    const QString exe = QStringLiteral(ATTNSCOPE_EXE);
    CliRun r = runCli(exe, {"--model", "demo", "--prompt", "x", "--graph", "--dump-json", tmp_.filePath("a.json")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("--graph and --graph-json go with --transcoders PATH")), qPrintable(r.err));
    r = runCli(exe, {"--model", "demo", "--prompt", "x", "--transcoders", "transcoders", "--graph"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("--graph adds to the --dump-json output")), qPrintable(r.err));
    r = runCli(exe, {"--model", "demo", "--prompt", "x", "--transcoders", "transcoders", "--graph", "--node-threshold", "1.5",
                     "--dump-json", tmp_.filePath("b.json")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("--node-threshold must be a number in (0, 1], got '1.5'")), qPrintable(r.err));
    // an SAE is not a transcoder set: a clear error, exit 1
    r = runCli(exe, {"--model", "demo", "--prompt", "x", "--transcoders", "resid-topk", "--graph", "--dump-json", tmp_.filePath("c.json")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(QStringLiteral("an attribution graph needs one transcoder per layer: the set has 1 but the model has 2 layers")),
             qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(tmp_.filePath("c.json")));
}

void TestCliGraph::interventionAndRoutes() {
    // the three most influential features of tests/data/graphs ablated (one by value, two by factor), and the routes
    // of the three strongest kept cross-position edges: each equal to the library's in this process
    const QString file = tmp_.filePath(QStringLiteral("intervened.json"));
    const CliRun run = runCli(QStringLiteral(ATTNSCOPE_EXE), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders", "--graph",
                                                             "--graph-intervene", "0:6:104=0,1:6:48*0", "--graph-intervene", "0:6:164*0",
                                                             "--edge-routes", "3", "--generate", "3", "--dump-json", file});
    QVERIFY2(run.exitCode == 0, qPrintable(run.err));
    const QJsonObject dump = readJsonObject(file);
    const QJsonObject iv = dump["graph_intervention"].toObject();
    QCOMPARE(iv["edits"].toArray().size(), 3);
    const std::vector<FeatureIntervention> edits{{0, 6, 104, 0.0f}, {1, 6, 48, 0.0f}, {0, 6, 164, 0.0f}};
    InterventionOptions o;
    o.continuationTokens = 3;
    const InterventionResult r = interveneOnFeatures(rm_, edits, o);
    const QJsonArray after = iv["top_logits_after"].toArray();
    QCOMPARE(after.size(), 10);
    for (const QJsonValue& v : after)
        QVERIFY(std::abs(v["logit"].toDouble() - r.logits(6, v["id"].toInt())) < 1e-5);
    QCOMPARE(after[0]["token"].toString(), QStringLiteral(" word")); // the reference's top token after the ablation
    QCOMPARE(iv["active_features_after"].toInt(), r.activeFeatures);
    QCOMPARE(iv["interventions"].toArray()[1].toObject()["activation_before"].toDouble(), double(rm_.activations[1](6, 48)));
    QCOMPARE(iv["generated_ids"].toArray().size(), 3);
    QCOMPARE(iv["generated_ids"].toArray()[0].toInt(), r.continuation[0]);
    const QJsonArray routes = dump["edge_routes"].toArray();
    QCOMPARE(routes.size(), 3);
    double previous = std::numeric_limits<double>::infinity();
    for (const QJsonValue& v : routes) {
        const int t = v["target"].toInt(), s = v["source"].toInt();
        QVERIFY(graph_.nodes[size_t(t)].position != graph_.nodes[size_t(s)].position);
        QVERIFY(std::abs(v["edge"].toDouble()) <= previous);
        previous = std::abs(v["edge"].toDouble());
        const EdgeRoutes lib = edgeRoutes(rm_, graph_, t, s);
        QCOMPARE(v["edge"].toDouble(), lib.edge);
        const QJsonArray heads = v["heads"].toArray();
        QVERIFY(!heads.isEmpty());
        QCOMPARE(heads[0].toObject()["layer"].toInt(), lib.heads[0].layer);
        QCOMPARE(heads[0].toObject()["head"].toInt(), lib.heads[0].head);
        QVERIFY(std::abs(heads[0].toObject()["value"].toDouble() - lib.heads[0].value) < 1e-12);
    }
    // a malformed edit: exit 1, the form to write, and no file
    const CliRun bad = runCli(QStringLiteral(ATTNSCOPE_EXE), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders", "--graph",
                                                             "--graph-intervene", "0:6=1", "--dump-json", tmp_.filePath("bad.json")});
    QCOMPARE(bad.exitCode, 1);
    QVERIFY2(bad.err.contains(QStringLiteral("'0:6=1' is not an intervention: write LAYER:POS:FEATURE=VALUE")), qPrintable(bad.err));
    QVERIFY(!QFileInfo::exists(tmp_.filePath("bad.json")));
    // and without --graph
    const CliRun alone = runCli(QStringLiteral(ATTNSCOPE_EXE), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders",
                                                               "--graph-json", tmp_.filePath("g.json"), "--edge-routes", "2"});
    QCOMPARE(alone.exitCode, 2);
    QVERIFY2(alone.err.contains(QStringLiteral("--graph-intervene and --edge-routes add to --graph: give --graph too")), qPrintable(alone.err));
}

void TestCliGraph::featureNodeBoundAndTargets() {
    // --max-feature-nodes and --graph-targets: the dump and the Neuronpedia file against the library with the same options
    const QString file = tmp_.filePath(QStringLiteral("bounded.json"));
    const QStringList args{"--prompt", kPrompt, "--transcoders", "transcoders", "--graph", "--max-feature-nodes", "100",
                           "--graph-targets", "diff: word, beginning", "--graph-json", file};
    const QJsonObject g = demoDumpOf(QStringLiteral(ATTNSCOPE_EXE), tmp_.path(), args, QStringLiteral("graph"));
    QVERIFY(!g.isEmpty());
    AttributionOptions o;
    o.maxFeatureNodes = 100;
    o.targets = parseAttributionTargets(QStringLiteral("diff: word, beginning"), rm_);
    const AttributionGraph want = attributeGraph(rm_, o);
    QCOMPARE(g["settings"].toObject()["max_feature_nodes"].toInt(), 100);
    QCOMPARE(g["counts"].toObject()["active_features"].toInt(), graph_.nFeatures());
    QCOMPARE(g["counts"].toObject()["features"].toInt(), 100);
    QCOMPARE(g["counts"].toObject()["nodes"].toInt(), want.nNodes());
    const QJsonArray nodes = g["nodes"].toArray();
    for (int i = 0; i < want.nFeatures(); ++i) QCOMPARE(nodes[i]["feature"].toInt(), want.nodes[size_t(i)].id);
    const QJsonObject target = nodes[want.logitOffset].toObject();
    QCOMPARE(target["target"].toString(), QStringLiteral("logit( word) − logit( beginning)"));
    QCOMPARE(target["target_id"].toInt(), model_->config().d_vocab);
    QCOMPARE(target["weight"].toDouble(), 1.0);
    QVERIFY(std::abs(target["value"].toDouble() - want.values[size_t(want.logitOffset)]) <= 1e-6);
    const QJsonObject settings = readJsonObject(file)["metadata"].toObject()["generation_settings"].toObject();
    QCOMPARE(settings["max_feature_nodes"].toInt(), 100);
    QCOMPARE(settings["batch_size"].toInt(), 256);
    QCOMPARE(settings["max_n_logits"].toInt(), 10);
    // a target the model cannot read fails with its message
    const CliRun bad = runCli(QStringLiteral(ATTNSCOPE_EXE), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders",
                                                              "--graph-json", tmp_.filePath(QStringLiteral("none.json")), "--graph-targets", "ids: 99999"});
    QVERIFY(bad.exitCode != 0);
    QVERIFY2(bad.err.contains(QStringLiteral("--graph-targets \"ids: 99999\": \"99999\" is not a token id (0 … 4095)")), qPrintable(bad.err));
}

QTEST_GUILESS_MAIN(TestCliGraph)
#include "tst_cli_graph.moc"
