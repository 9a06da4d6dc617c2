// The command line's attribution graph, run as a real process on the demo model with its bundled transcoders:
// --graph's "graph" member equals the library's graph in this process (nodes, kept edges and weights, scores),
// --graph-json writes Neuronpedia's layout (required members, node ids as circuit-tracer writes them, links among
// the listed nodes), and bad invocations fail with their messages. --open-graph FILE, with no model: --dump-json's
// "graph_file" counts what the file holds (read here with QJsonDocument), --graph-json writes the file back member for
// member, --export draws the Graph tab's figure with its pins and supernodes (PNG by size and content, SVG, PDF); the demo
// graph written by the library and a real Neuronpedia file (../shared/testdata/real-world/graphs) are both opened.

#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/attribution_targets.h"
#include "model/analysis/graphs/graph_document.h"
#include "model/analysis/graphs/graph_json.h"
#include "model/analysis/graphs/edge_routes.h"
#include "model/analysis/graphs/feature_intervention.h"
#include "model/analysis/graphs/head_loadings.h"
#include "model/analysis/graphs/graph_pruning.h"
#include "model/analysis/graphs/qk_trace.h"
#include "model/analysis/graphs/replacement_model.h"
#include "model/features/dictionary_set.h"
#include "model/formats/model_loader.h"
#include "model/transformer/prompt.h"
#include "support/cli_process.h"
#include "support/error_capture.h"
#include "support/image_checks.h"
#include "support/json_schema_check.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QImage>
#include <QJsonArray>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {
const QString kPrompt = QStringLiteral("In the beginning God created the");

/// --open-graph FILE --dump-json OUT --graph-json BACK --export FIG.png: each output checked against the file as read
/// here with QJsonDocument. Returns the PNG (null on a failure, after QVERIFY's message).
QImage checkOpenGraph(const QString& file, const QString& dir) {
    const QString dump = dir + QStringLiteral("/graph-file.json"), back = dir + QStringLiteral("/back.json"), png = dir + QStringLiteral("/graph.png");
    const CliRun r = runCli(attnscope::test::attnscopeExe(), {"--open-graph", file, "--dump-json", dump, "--graph-json", back, "--export", png, "--force"});
    if (r.exitCode != 0) {
        qWarning("%s", qPrintable(r.err));
        return {};
    }
    const QJsonObject raw = readJsonObject(file);
    const QJsonObject g = readJsonObject(dump).value("graph_file").toObject();
    // the counts by kind, links, layers (the logits' layer is n_layers + 1), positions, prompt, pins and supernodes
    QJsonObject counts{{"feature", 0}, {"error", 0}, {"token", 0}, {"logit", 0}};
    int logitLayer = -1;
    const QJsonArray nodes = raw.value("nodes").toArray();
    for (const QJsonValue& v : nodes) {
        const QString type = v["feature_type"].toString();
        const char* kind = type == "embedding" ? "token" : type == "logit" ? "logit" : type == "mlp reconstruction error" ? "error" : "feature";
        counts[kind] = counts[kind].toInt() + 1;
        if (type == "logit") logitLayer = v["layer"].toVariant().toInt();
    }
    counts["total"] = int(nodes.size());
    const QJsonObject meta = raw.value("metadata").toObject(), q = raw.value("qParams").toObject();
    bool ok = g.value("nodes").toObject() == counts && g.value("links").toInt() == raw.value("links").toArray().size() &&
              g.value("n_layers").toInt() == logitLayer - 1 && g.value("n_positions").toInt() == meta.value("prompt_tokens").toArray().size() &&
              g.value("prompt_tokens").toArray() == meta.value("prompt_tokens").toArray() && g.value("prompt").toString() == meta.value("prompt").toString() &&
              g.value("pinned_ids").toArray() == q.value("pinnedIds").toArray() && g.value("notes").toArray().isEmpty() &&
              g.value("file").toString() == file;
    const QJsonArray supernodes = g.value("supernodes").toArray(), rawSupernodes = q.value("supernodes").toArray();
    ok = ok && supernodes.size() == rawSupernodes.size();
    for (int i = 0; ok && i < supernodes.size(); ++i) {
        QJsonArray group = rawSupernodes[i].toArray();
        ok = supernodes[i]["name"].toString() == group[0].toString();
        group.removeFirst();
        ok = ok && supernodes[i]["members"].toArray() == group;
    }
    if (!ok) {
        qWarning("graph_file %s against %s", QJsonDocument(g).toJson().constData(), qPrintable(file));
        return {};
    }
    // the file written back: every member as it was
    const QJsonObject written = readJsonObject(back);
    if (written != raw) {
        qWarning("%s is not written back as it was", qPrintable(file));
        return {};
    }
    return QImage(png);
}
}

class TestCliGraph : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void graphDumpEqualsTheLibrary();
    void neuronpediaLayout();
    void badInvocations();
    void interventionAndRoutes();
    void qkTracesInTheDumpAndTheGraphFile();
    void qkTraceBadInvocations();
    void headLoadingsOfKeptEdges();
    void featureNodeBoundAndTargets();
    void openGraphFileOfTheDemo();
    void openRealGraphFile();
    void openGraphBadInvocations();
    void featureLabelsAsClerp();

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
    set_ = openDictionaries(attnscope::test::sourceFile(QStringLiteral("resources/demo-features/transcoders")));
    rm_ = buildReplacementModel(*model_, set_, tokenizePrompt(model_->tokenizer(), kPrompt, true));
    graph_ = attributeGraph(rm_);
    pruned_ = pruneGraph(graph_, {0.7, 0.95});
}

void TestCliGraph::graphDumpEqualsTheLibrary() {
    const QJsonObject g = demoDumpOf(attnscope::test::attnscopeExe(), tmp_.path(),
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
    const CliRun r = runCli(attnscope::test::attnscopeExe(), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders",
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
    const QString exe = attnscope::test::attnscopeExe();
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
    const CliRun run = runCli(attnscope::test::attnscopeExe(), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders", "--graph",
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
    const CliRun bad = runCli(attnscope::test::attnscopeExe(), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders", "--graph",
                                                             "--graph-intervene", "0:6=1", "--dump-json", tmp_.filePath("bad.json")});
    QCOMPARE(bad.exitCode, 1);
    QVERIFY2(bad.err.contains(QStringLiteral("'0:6=1' is not an intervention: write LAYER:POS:FEATURE=VALUE")), qPrintable(bad.err));
    QVERIFY(!QFileInfo::exists(tmp_.filePath("bad.json")));
    // and without --graph
    const CliRun alone = runCli(attnscope::test::attnscopeExe(), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders",
                                                               "--graph-json", tmp_.filePath("g.json"), "--edge-routes", "2"});
    QCOMPARE(alone.exitCode, 2);
    QVERIFY2(alone.err.contains(QStringLiteral("--graph-intervene, --edge-routes and --head-loadings add to --graph: give --graph too")), qPrintable(alone.err));
}

void TestCliGraph::headLoadingsOfKeptEdges() {
    // --head-loadings 1: the 20 strongest kept edges that cross layer 1's attention (default thresholds), each split into
    // a bypass and one loading per head that sum to the edge, equal to the library's in this process
    const QString file = tmp_.filePath(QStringLiteral("loadings.json"));
    const CliRun run = runCli(attnscope::test::attnscopeExe(), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders",
                                                             "--graph", "--head-loadings", "1", "--dump-json", file, "--force"});
    QVERIFY2(run.exitCode == 0, qPrintable(run.err));
    const QJsonObject hl = readJsonObject(file)["head_loadings"].toObject();
    QCOMPARE(hl["layer"].toInt(), 1);
    const PrunedGraph p = pruneGraph(graph_);
    int crossing = 0;
    for (const auto& [t, s] : p.edges) crossing += crossesAttentionLayer(graph_, t, s, 1);
    QVERIFY(crossing > 20);
    const QJsonArray edges = hl["edges"].toArray();
    QCOMPARE(edges.size(), 20);
    double previous = std::numeric_limits<double>::infinity(), worst = 0;
    int split = 0;
    for (const QJsonValue& v : edges) {
        const int t = v["target"].toInt(), s = v["source"].toInt();
        QVERIFY(crossesAttentionLayer(graph_, t, s, 1));
        QCOMPARE(v["source_id"].toString(), neuronpediaNodeId(graph_, s));
        const double edge = v["edge"].toDouble();
        QCOMPARE(edge, double(graph_.adjacency(t, s)));
        QVERIFY(std::abs(edge) <= previous);
        previous = std::abs(edge);
        const QJsonArray heads = v["heads"].toArray();
        QCOMPARE(heads.size(), model_->config().n_heads);
        double sum = v["bypass"].toDouble();
        for (const QJsonValue& h : heads) sum += h.toDouble();
        QVERIFY(std::abs(sum - v["sum"].toDouble()) <= 1e-12 * std::max(1.0, std::abs(sum)));
        worst = std::max(worst, std::abs(sum - edge) / std::abs(edge));
        split += std::abs(sum - v["bypass"].toDouble()) > 0.1 * std::abs(edge);
        const GraphNode &tn = graph_.nodes[size_t(t)], &sn = graph_.nodes[size_t(s)];
        if (sn.kind != GraphNodeKind::Token && tn.position != sn.position) // from layer 0 to another position: heads only
            QVERIFY(std::abs(v["bypass"].toDouble()) <= 1e-7 * std::abs(edge));
        const HeadLoadings lib = headLoadings(rm_, graph_, t, s, 1);
        for (int h = 0; h < heads.size(); ++h) QVERIFY(std::abs(heads[h].toDouble() - lib.heads[size_t(h)]) <= 1e-12 * std::max(1.0, std::abs(edge)));
    }
    QVERIFY2(worst <= 1e-4, qPrintable(QString::number(worst)));
    QVERIFY(split >= 3); // the heads carry real parts (the error at position 3 into the logits: heads only; most strong
                         // kept edges across layer 1 stay at the last position and go round its attention)
    // a layer the model does not have: exit 1, named, and no file
    const CliRun bad = runCli(attnscope::test::attnscopeExe(), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders",
                                                             "--graph", "--head-loadings", "2", "--dump-json", tmp_.filePath("bad-layer.json")});
    QCOMPARE(bad.exitCode, 1);
    QVERIFY2(bad.err.contains(QStringLiteral("--head-loadings 2 is out of range: the model has 2 layers (0..1)")), qPrintable(bad.err));
    QVERIFY(!QFileInfo::exists(tmp_.filePath("bad-layer.json")));
}

void TestCliGraph::qkTracesInTheDumpAndTheGraphFile() {
    // one asked cell and the three strongest edges' cells, under a feature-node bound that leaves contributors out
    const QString dump = tmp_.filePath(QStringLiteral("qk.json")), file = tmp_.filePath(QStringLiteral("qk-graph.json"));
    const CliRun r = runCli(attnscope::test::attnscopeExe(), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders", "--graph",
                                                            "--max-feature-nodes", "40", "--qk-trace", "1.2:6:3", "--qk-trace-edges", "3",
                                                            "--qk-top", "5", "--dump-json", dump, "--graph-json", file, "--force"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject d = readJsonObject(dump);
    const QJsonArray traces = d["qk_traces"].toArray(), qkOnly = d["qk_only_nodes"].toArray();
    const QJsonArray nodes = d["graph"].toObject()["nodes"].toArray();
    QVERIFY(traces.size() >= 2 && traces.size() <= 4);
    // the asked cell equals the library's trace on the same bounded graph
    AttributionOptions o;
    o.maxFeatureNodes = 40;
    const AttributionGraph g = attributeGraph(rm_, o);
    QCOMPARE(nodes.size(), g.nNodes());
    const QkTracer tracer(rm_);
    const QkTrace want = tracer.trace(1, 2, 6, 3, 5);
    const QJsonObject t0 = traces[0].toObject();
    QCOMPARE(t0["layer"].toInt(), 1);
    QCOMPARE(t0["head"].toInt(), 2);
    QCOMPARE(t0["score"].toDouble(), want.score);
    QCOMPARE(t0["pairs"].toArray().size(), 5);
    for (int i = 0; i < 5; ++i) {
        const QJsonObject p = t0["pairs"][i].toObject();
        QCOMPARE(p["attribution"].toDouble(), want.pairs[size_t(i)].attribution);
        // the index names the same node: the graph's, or a qk-only one past the graph's nodes
        for (auto [side, column] : {std::pair{"q", want.pairs[size_t(i)].q}, std::pair{"k", want.pairs[size_t(i)].k}}) {
            const int index = p[QLatin1String(side)].toInt();
            const GraphNode& c = tracer.columns()[size_t(column)];
            if (index < nodes.size()) {
                QCOMPARE(index, tracer.graphNode(g, column));
            } else {
                const QJsonObject extra = qkOnly[index - int(nodes.size())].toObject();
                QCOMPARE(extra["index"].toInt(), index);
                QCOMPARE(extra["layer"].toInt(), c.layer);
                QCOMPARE(extra["position"].toInt(), c.position);
                QCOMPARE(extra["feature"].toInt(), c.id);
            }
        }
    }
    QVERIFY(!qkOnly.isEmpty()); // the bound left contributors out, and they are still named
    // every trace: the pairs' total and the constants make the score; edge traces name a kept cross-position edge
    for (const QJsonValue& v : traces) {
        const QJsonObject t = v.toObject();
        const double sum = t["pairs_total"].toDouble() + t["constant"].toDouble() + t["q_constant"].toDouble() + t["k_constant"].toDouble();
        QVERIFY2(std::abs(sum - t["score"].toDouble()) <= 1e-5 * std::max(1.0, std::abs(t["score"].toDouble())), qPrintable(QString::number(sum)));
        QVERIFY(t["q_marginals"].toArray().size() <= 5 && !t["k_marginals"].toArray().isEmpty());
        if (t.contains(QStringLiteral("target")))
            QCOMPARE(t["key"].toInt(), nodes[t["source"].toInt()]["position"].toInt());
    }
    QVERIFY(traces.last().toObject().contains(QStringLiteral("target")));
    // the graph file: qk_tracing_results on the traced edges' targets; every contributor is a node or a qk-only node
    const QJsonObject j = readJsonObject(file);
    QSet<QString> ids;
    for (const QJsonValue& n : j["nodes"].toArray()) ids.insert(n["node_id"].toString());
    const QJsonObject only = j["qk_only_nodes"].toObject();
    int traced = 0;
    for (const QJsonValue& n : j["nodes"].toArray()) {
        if (!n.toObject().contains(QStringLiteral("qk_tracing_results"))) continue;
        ++traced;
        const QJsonObject q = n["qk_tracing_results"].toObject();
        QVERIFY(!q["pair_wise_contributors"].toArray().isEmpty());
        for (const QJsonValue& p : q["pair_wise_contributors"].toArray())
            for (int k = 0; k < 2; ++k) QVERIFY2(ids.contains(p[k].toString()) || only.contains(p[k].toString()), qPrintable(p[k].toString()));
        for (const char* m : {"top_q_marginal_contributors", "top_k_marginal_contributors"})
            for (const QJsonValue& p : q[QLatin1String(m)].toArray()) QVERIFY(ids.contains(p[0].toString()) || only.contains(p[0].toString()));
    }
    QVERIFY(traced >= 1);
    for (const QString& k : only.keys()) QVERIFY(!ids.contains(k) && only[k]["node_id"].toString() == k);
    const QString schemaFile = testdata(QStringLiteral("real-world/graphs/hijohnnylin+neuronpedia+apps+webapp+app+api+graph/graph-schema.json"));
    if (!QFile::exists(schemaFile)) QSKIP(qPrintable(QStringLiteral("no %1: the file's schema check needs the shared reference data").arg(schemaFile)));
    QCOMPARE(jsonSchemaViolations(j, readJsonObject(schemaFile)).join('\n'), QString());
}

void TestCliGraph::qkTraceBadInvocations() {
    const QString exe = attnscope::test::attnscopeExe();
    const QStringList base{"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders", "--graph", "--dump-json", tmp_.filePath("bad.json"), "--force"};
    CliRun r = runCli(exe, base + QStringList{"--qk-trace", "1.2:3:5"});
    QVERIFY(r.exitCode != 0);
    QVERIFY2(r.err.contains(QStringLiteral("Key position 5 comes after query position 3")), qPrintable(r.err));
    r = runCli(exe, base + QStringList{"--qk-trace", "1:3:5"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("--qk-trace wants LAYER.HEAD:QUERY:KEY")), qPrintable(r.err));
    r = runCli(exe, {"--model", "demo", "--prompt", kPrompt, "--qk-trace-edges", "3"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("add to --graph or --graph-json")), qPrintable(r.err));
    r = runCli(exe, base + QStringList{"--qk-trace", "5.0:3:1"});
    QVERIFY(r.exitCode != 0);
    QVERIFY2(r.err.contains(QStringLiteral("Layer 5 is outside")), qPrintable(r.err));
}

void TestCliGraph::featureNodeBoundAndTargets() {
    // --max-feature-nodes and --graph-targets: the dump and the Neuronpedia file against the library with the same options
    const QString file = tmp_.filePath(QStringLiteral("bounded.json"));
    const QStringList args{"--prompt", kPrompt, "--transcoders", "transcoders", "--graph", "--max-feature-nodes", "100",
                           "--graph-targets", "diff: word, beginning", "--graph-json", file};
    const QJsonObject g = demoDumpOf(attnscope::test::attnscopeExe(), tmp_.path(), args, QStringLiteral("graph"));
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
    const CliRun bad = runCli(attnscope::test::attnscopeExe(), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders",
                                                              "--graph-json", tmp_.filePath(QStringLiteral("none.json")), "--graph-targets", "ids: 99999"});
    QVERIFY(bad.exitCode != 0);
    QVERIFY2(bad.err.contains(QStringLiteral("--graph-targets \"ids: 99999\": \"99999\" is not a token id (0 … 4095)")), qPrintable(bad.err));
}

void TestCliGraph::openGraphFileOfTheDemo() {
    // the demo graph as the library writes it, opened with no model: the dump, the file written back and the figure
    const QString file = tmp_.filePath(QStringLiteral("open-demo.json"));
    const CliRun made = runCli(attnscope::test::attnscopeExe(), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders",
                                                               "--graph-json", file});
    QVERIFY2(made.exitCode == 0, qPrintable(made.err));
    QTemporaryDir out;
    const QImage png = checkOpenGraph(file, out.path());
    QVERIFY(!png.isNull());
    QVERIFY2(png.width() >= 600 && png.height() >= 400, qPrintable(QStringLiteral("%1 x %2").arg(png.width()).arg(png.height())));
    QVERIFY(distinctColours(png) > 20); // nodes, edges in two colours, labels: not blank
    const QString svg = out.filePath(QStringLiteral("graph.svg"));
    const CliRun r = runCli(attnscope::test::attnscopeExe(), {"--open-graph", file, "--export", svg});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray text = f.readAll();
    QVERIFY(text.contains("<svg") && text.count("<path") > 20);
    // --open-graph FILE alone with no display (runCli unsets DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM): not Qt's
    // abort, but the summary --dump-json writes, on stdout, and why there is no window
    const CliRun alone = runCli(attnscope::test::attnscopeExe(), {"--open-graph", file});
    QVERIFY2(alone.exitCode == 0, qPrintable(alone.err));
    QVERIFY2(alone.err.contains(QStringLiteral("attnscope: no display to open the window on (DISPLAY and WAYLAND_DISPLAY are unset); "
                                               "the file's summary follows")), qPrintable(alone.err));
    QCOMPARE(QJsonDocument::fromJson(alone.out.toUtf8()).object().value("graph_file").toObject(),
             readJsonObject(out.filePath(QStringLiteral("graph-file.json"))).value("graph_file").toObject());
    // a display that is named and does not answer (a stale DISPLAY): the same, not Qt's xcb plugin aborting
    const CliRun stale = runCli(attnscope::test::attnscopeExe(), {"--open-graph", file}, {"DISPLAY=:4097"});
    QVERIFY2(stale.exitCode == 0, qPrintable(stale.err));
    QVERIFY2(stale.err.contains(QStringLiteral("attnscope: no display to open the window on (none answered at DISPLAY=:4097); "
                                               "the file's summary follows")), qPrintable(stale.err));
    QCOMPARE(QJsonDocument::fromJson(stale.out.toUtf8()).object().value("graph_file").toObject(),
             readJsonObject(out.filePath(QStringLiteral("graph-file.json"))).value("graph_file").toObject());
    const CliRun noWindow = runCli(attnscope::test::attnscopeExe(), {});
    QCOMPARE(noWindow.exitCode, 1);
    QVERIFY2(noWindow.err.contains(QStringLiteral("attnscope: no display to open the window on (DISPLAY and WAYLAND_DISPLAY are unset); "
                                                "headless work (--export, --dump-json, …) needs none")), qPrintable(noWindow.err));
    // --open-graph FILE alone opens the window with the file in the Graph tab: its picture at 1280 × 800
    const QString shot = out.filePath(QStringLiteral("window.png"));
    const CliRun w = runCli(attnscope::test::attnscopeExe(), {"--open-graph", file, "--screenshot", "graphs", "--out", shot, "--width", "1280",
                                                            "--height", "800"});
    QVERIFY2(w.exitCode == 0, qPrintable(w.err));
    QVERIFY2(w.out.contains(QStringLiteral("(1280×800, graphs)")), qPrintable(w.out));
    QVERIFY2(!w.err.contains(QStringLiteral("warning")), qPrintable(w.err));
    const QImage window(shot);
    QCOMPARE(window.size(), QSize(1280, 800));
    QVERIFY(distinctColours(window) > 20);
}

void TestCliGraph::openRealGraphFile() {
    ATTNSCOPE_REQUIRE_TESTDATA();
    // a Neuronpedia graph with pins and supernodes, made by circuit-tracer on gemma-2-2b
    const QString file = testdata(QStringLiteral("real-world/graphs/decoderesearch+circuit-tracer+demos+graph_files/"
                                                 "gemma-small-big-en_2025-11-13T10-16-02-770Z.json"));
    QTemporaryDir out;
    const QImage png = checkOpenGraph(file, out.path());
    QVERIFY(!png.isNull());
    QVERIFY(distinctColours(png) > 20);
}

void TestCliGraph::openGraphBadInvocations() {
    const QString file = tmp_.filePath(QStringLiteral("open-bad.json"));
    const CliRun made = runCli(attnscope::test::attnscopeExe(), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders",
                                                               "--graph-json", file});
    QVERIFY2(made.exitCode == 0, qPrintable(made.err));
    const std::vector<std::pair<QStringList, QString>> cases{
        {{"--open-graph", file, "--screenshot", "logit-lens", "--out", tmp_.filePath(QStringLiteral("x.png"))},
         QStringLiteral("--open-graph FILE shows the window's Graph tab: --screenshot graphs --out FILE.png")},
        {{"--open-graph", file, "--screenshot", "graphs", "--out", tmp_.filePath(QStringLiteral("x.png")), "--dump-json", tmp_.filePath(QStringLiteral("x.json"))},
         QStringLiteral("--screenshot goes alone: not with --export, --dump-json or --graph-json")},
        {{"--open-graph", tmp_.filePath(QStringLiteral("none.json")), "--screenshot", "graphs", "--out", tmp_.filePath(QStringLiteral("x.png"))},
         QStringLiteral("Cannot open the graph: ")},
        {{"--open-graph", file, "--export", tmp_.filePath(QStringLiteral("fig.txt"))},
         QStringLiteral("--export with --open-graph is a figure file, FIG.png, FIG.svg or FIG.pdf, got '%1'").arg(tmp_.filePath(QStringLiteral("fig.txt")))},
        {{"--open-graph", file, "--model", "demo", "--dump-json", tmp_.filePath(QStringLiteral("x.json"))},
         QStringLiteral("--open-graph FILE needs no model: it takes --dump-json, --graph-json, --export FIG.png|svg|pdf (with --width, "
                        "--height, --scale), --screenshot graphs --out FILE.png, --feature-labels and --force, not --model")},
    };
    for (const auto& [args, message] : cases) {
        const CliRun r = runCli(attnscope::test::attnscopeExe(), args);
        QVERIFY(r.exitCode != 0);
        QVERIFY2(r.err.contains(message), qPrintable(r.err));
    }
}

void TestCliGraph::featureLabelsAsClerp() {
    // a layer,feature,label CSV naming some of the demo graph's features: --graph-json writes each as its nodes' clerp,
    // straight from the model and through --open-graph; nodes the CSV does not name get none, logits keep their own
    QTemporaryDir dir;
    const QString plain = dir.filePath(QStringLiteral("plain.json"));
    const CliRun made = runCli(attnscopeExe(), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders", "--graph-json", plain});
    QVERIFY2(made.exitCode == 0, qPrintable(made.err));
    const QJsonArray nodes = readJsonObject(plain).value("nodes").toArray();
    QByteArray csv = "layer,feature,label\n";
    QHash<QString, QString> expected; // node_id → label
    int features = 0;
    for (const QJsonValue& v : nodes) {
        if (v["feature_type"].toString() != QLatin1String("cross layer transcoder")) continue;
        QVERIFY2(v["clerp"].toString().isEmpty(), qPrintable(v["clerp"].toString())); // AttnScope writes no label of its own
        const QStringList id = v["node_id"].toString().split('_'); // L_F_P
        if (features++ % 2) continue;
        const QString label = QStringLiteral("L%1 \"f%2\", named").arg(id[0], id[1]);
        csv += id[0].toUtf8() + ',' + id[1].toUtf8() + ",\"" + QString(label).replace("\"", "\"\"").toUtf8() + "\"\n";
        for (const QJsonValue& w : nodes) // the feature at every position
            if (w["node_id"].toString().startsWith(id[0] + '_' + id[1] + '_') && w["feature_type"] == v["feature_type"]) expected.insert(w["node_id"].toString(), label);
    }
    QVERIFY2(expected.size() >= 2, "the demo graph has too few feature nodes to label");
    const QString labels = dir.filePath(QStringLiteral("labels.csv"));
    QFile f(labels);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(csv);
    f.close();
    const auto check = [&](const QString& file) {
        int labelled = 0;
        for (const QJsonValue& v : readJsonObject(file).value("nodes").toArray()) {
            const QString id = v["node_id"].toString();
            if (v["feature_type"].toString() == QLatin1String("logit")) {
                if (!v["clerp"].toString().startsWith(QStringLiteral("Output \""))) return -1;
                continue;
            }
            if (v["clerp"].toString() != expected.value(id)) {
                qWarning("%s: clerp \"%s\", expected \"%s\"", qPrintable(id), qPrintable(v["clerp"].toString()), qPrintable(expected.value(id)));
                return -1;
            }
            labelled += expected.contains(id);
        }
        return labelled;
    };
    const QString direct = dir.filePath(QStringLiteral("direct.json"));
    const CliRun a = runCli(attnscopeExe(), {"--model", "demo", "--prompt", kPrompt, "--transcoders", "transcoders", "--graph-json", direct,
                                             "--feature-labels", labels});
    QVERIFY2(a.exitCode == 0, qPrintable(a.err));
    const int n = check(direct);
    QCOMPARE(n, int(expected.size()));
    QVERIFY2(a.out.contains(QStringLiteral("labelled %1 feature nodes (").arg(n)), qPrintable(a.out));
    const QString back = dir.filePath(QStringLiteral("back.json"));
    const CliRun b = runCli(attnscopeExe(), {"--open-graph", plain, "--graph-json", back, "--feature-labels", labels});
    QVERIFY2(b.exitCode == 0, qPrintable(b.err));
    QCOMPARE(check(back), n);
    // a bad label file: exit 1 with its message, nothing written
    const QString bad = dir.filePath(QStringLiteral("bad.csv"));
    QFile g(bad);
    QVERIFY(g.open(QIODevice::WriteOnly));
    g.write("feature,label\nseven,x\n");
    g.close();
    const QString none = dir.filePath(QStringLiteral("none.json"));
    const CliRun c = runCli(attnscopeExe(), {"--open-graph", plain, "--graph-json", none, "--feature-labels", bad});
    QCOMPARE(c.exitCode, 1);
    QVERIFY2(c.err.contains(bad + QStringLiteral(": line 2: field \"feature\" must be a whole number ≥ 0, not \"seven\"")), qPrintable(c.err));
    QVERIFY(!QFileInfo::exists(none));
    // labels with nothing to label
    const CliRun d = runCli(attnscopeExe(), {"--model", "demo", "--prompt", kPrompt, "--feature-labels", labels});
    QCOMPARE(d.exitCode, 2);
    QVERIFY2(d.err.contains(QStringLiteral("--feature-labels labels what --graph-json writes, --sae's --features and --feature, or a --screenshot: give one of them too")),
             qPrintable(d.err));
}

QTEST_GUILESS_MAIN(TestCliGraph)
#include "tst_cli_graph.moc"
