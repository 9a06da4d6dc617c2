// The Graph tab's document (model/analysis/graphs/graph_document.h): the demo model's attribution graph with its bundled
// transcoders becomes the kept nodes and edges with each node's graph index, survives a write and a read exactly (ids,
// layers, positions, weights, pins, supernodes); a hand-written Neuronpedia file is read member by member; hostile files
// are refused with a message naming the file and what is wrong. Every real graph file in
// ../shared/testdata/real-world/graphs (circuit-tracer 1.0.0, Neuronpedia's graph server, Neuronpedia's fixtures; 64-bit
// Cantor-paired feature ids, null activations, logits at n_layers + 1, non-ASCII clerps) opens with the counts, ids and
// feature values the JSON holds, and is written back unchanged and valid against Neuronpedia's graph-schema.json.
#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/graph_document.h"
#include "model/analysis/graphs/graph_document_from_graph.h"
#include "model/analysis/graphs/graph_json.h"
#include "model/analysis/graphs/graph_pruning.h"
#include "model/analysis/graphs/replacement_model.h"
#include "model/features/dictionary_set.h"
#include "model/formats/model_loader.h"
#include "model/transformer/prompt.h"
#include "support/error_capture.h"
#include "support/json_schema_check.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {
const QString kTranscoders = attnscope::test::sourceFile(QStringLiteral("resources/demo-features/transcoders"));

/// A small graph of a 2-layer model over 3 tokens: an embedding, a layer-0 feature, a layer-1 error, a logit.
QJsonObject smallGraph() {
    return QJsonObject{
        {"metadata", QJsonObject{{"slug", "small"}, {"scan", "demo"}, {"prompt", "a b c"}, {"prompt_tokens", QJsonArray{"<s>", " b", " c"}},
                                 {"node_threshold", 0.7}, {"transcoder_list", QJsonArray{"x"}}}},
        {"qParams", QJsonObject{{"pinnedIds", QJsonArray{"0_17_1", "nowhere"}}, {"supernodes", QJsonArray{QJsonValue(QJsonArray{"group", "0_17_1", "E_5_1"})}}}},
        {"nodes", QJsonArray{
                      QJsonObject{{"node_id", "E_5_1"}, {"feature", 1}, {"layer", "E"}, {"ctx_idx", 1}, {"feature_type", "embedding"}, {"influence", 0.2}},
                      QJsonObject{{"node_id", "0_17_1"}, {"feature", 17}, {"layer", "0"}, {"ctx_idx", 1}, {"feature_type", "cross layer transcoder"},
                                  {"influence", 0.5}, {"activation", 2.5}, {"clerp", "subject"}},
                      QJsonObject{{"node_id", "0_1_2"}, {"feature", -1}, {"layer", 1}, {"ctx_idx", 2}, {"feature_type", "mlp reconstruction error"},
                                  {"influence", 0.6}},
                      // circuit-tracer with the width known: feature = 23 + 1000 · layer, the id in node_id; influence null
                      QJsonObject{{"node_id", "1_23_2"}, {"feature", 1023}, {"layer", "1"}, {"ctx_idx", 2}, {"feature_type", "cross layer transcoder"},
                                  {"influence", QJsonValue::Null}, {"activation", 0.5}},
                      QJsonObject{{"node_id", "3_42_2"}, {"feature", 42}, {"layer", "3"}, {"ctx_idx", 2}, {"feature_type", "logit"},
                                  {"token_prob", 0.75}, {"is_target_logit", true}, {"clerp", "Output \" God\" (p=0.750)"}}}},
        {"links", QJsonArray{QJsonObject{{"source", "E_5_1"}, {"target", "0_17_1"}, {"weight", 1.5}},
                             QJsonObject{{"source", "0_17_1"}, {"target", "3_42_2"}, {"weight", -0.25}},
                             QJsonObject{{"source", "0_1_2"}, {"target", "3_42_2"}, {"weight", 0.125}}}}};
}

QString writeTemp(const QTemporaryDir& dir, const QString& name, const QByteArray& bytes) {
    const QString path = dir.filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(bytes);
    return path;
}

QByteArray json(const QJsonObject& o) { return QJsonDocument(o).toJson(); }

const QString kRealGraphs = QStringLiteral("real-world/graphs");
const QString kGraphSchema = QStringLiteral("real-world/graphs/hijohnnylin+neuronpedia+apps+webapp+app+api+graph/graph-schema.json");

/// One real file's numbers, read with python3's json module (PROVENANCE.md there says where each file comes from).
struct RealGraph {
    const char* file;
    int features, errors, tokens, logits, links;
    const char* largestId;    ///< the node with the largest feature value
    qint64 largestFeature;    ///< its feature as the file writes it
    const char* logitId;      ///< the first logit node
    int logitFileLayer;       ///< its layer as the file writes it (n_layers + 1)
    int promptTokens, pins, supernodes;
};
const RealGraph kRealGraphFiles[] = {
    {"decoderesearch+circuit-tracer+demos+graph_files/3plus5-plt.json", 463, 80, 7, 8, 22789, "25_15920_6", 2515920LL, "27_235321_6", 27, 7, 0, 0},
    {"decoderesearch+circuit-tracer+demos+graph_files/bee-insect-clt.json", 209, 40, 7, 10, 2929, "0_98149_1", 4816760324LL, "27_35312_6", 27, 7, 0, 0},
    {"decoderesearch+circuit-tracer+demos+graph_files/gemma-small-big-en_2025-11-13T10-16-02-770Z.json", 563, 112, 9, 10, 23559, "25_16043_8",
     2516043LL, "27_13210_8", 27, 9, 17, 5},
    {"decoderesearch+circuit-tracer+demos+graph_files/nobelcomesfromth-1761108237891_2025-10-22T04-46-53-163Z.json", 227, 58, 7, 10, 2770,
     "0_98149_1", 4816760324LL, "27_24318_6", 27, 7, 0, 0},
    {"decoderesearch+circuit-tracer+demos+graph_files/thelargestplanet-1763017024609_2025-11-13T06-58-01-950Z.json", 248, 56, 9, 10, 3697,
     "0_98149_1", 4816760324LL, "27_48453_8", 27, 9, 6, 0},
    {"decoderesearch+circuit-tracer+graph_files/night-clt-hp.json", 390, 126, 13, 3, 3392, "0_98223_3", 4824026199LL, "27_3354_12", 27, 13, 0, 0},
    {"hijohnnylin+neuronpedia+apps+graph+tests+fixtures+graphs/123-gemma-2-2b-clt-hp.json", 13, 2, 4, 5, 75, "0_95057_3", 4518059210LL,
     "27_235310_3", 27, 4, 0, 0},
    {"hijohnnylin+neuronpedia+apps+graph+tests+fixtures+graphs/123-gemma-2-2b-gemmascope-transcoder-16k.json", 30, 10, 4, 5, 238, "0_15528_2",
     120582684LL, "27_235310_3", 27, 4, 0, 0},
    {"hijohnnylin+neuronpedia+apps+graph+tests+fixtures+graphs/123-qwen3-4b-transcoder-hp.json", 89, 28, 4, 1, 877, "35_160816_3",
     12936763342LL, "37_19_3", 37, 4, 0, 0},
};
} // namespace

class TestGraphDocument : public QObject {
    Q_OBJECT
private slots:
    void demoGraphRoundTrip();
    void readsANeuronpediaFile();
    void refusesHostileFiles();
    void readsAnErrorIdThatEqualsAFeatures();
    void writesLargeFeatureIdsAsIntegers();
    void opensEveryRealGraphFile();
    void schemaCheckerFindsViolations();
};

void TestGraphDocument::demoGraphRoundTrip() {
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    QSKIP("the demo's transcoder set is a circuit-tracer config.yaml: this build has no yaml-cpp (the arm64 sysroot)");
#endif
    const auto model = loadModel(demoDir());
    const DictionarySet set = openDictionaries(kTranscoders);
    const std::vector<int> tokens = tokenizePrompt(model->tokenizer(), QStringLiteral("In the beginning God created the"), true);
    const ReplacementModel rm = buildReplacementModel(*model, set, tokens);
    const AttributionGraph graph = attributeGraph(rm);
    const PrunedGraph pruned = pruneGraph(graph);
    NeuronpediaGraphInfo info;
    info.slug = QStringLiteral("demo");
    info.prompt = QStringLiteral("In the beginning God created the");
    GraphDocument doc = graphDocumentFromGraph(graph, pruned, model->tokenizer(), {}, info);
    // every kept node (pruning leaves none without an edge), each naming its graph node; every kept edge with its weight
    QCOMPARE(int(doc.nodes.size()), pruned.keptNodes());
    QCOMPARE(int(doc.nodes.size()), 52); // docs/graphs.md: 52 nodes and 611 edges
    QCOMPARE(int(doc.links.size()), int(pruned.edges.size()));
    QCOMPARE(doc.nLayers(), 2);
    QCOMPARE(doc.nPositions(), 7);
    QCOMPARE(doc.promptTokens.size(), 7);
    for (const GraphDocumentNode& n : doc.nodes) {
        QVERIFY(n.graphIndex >= 0);
        const GraphNode& g = graph.nodes[size_t(n.graphIndex)];
        QCOMPARE(n.nodeId, neuronpediaNodeId(graph, n.graphIndex));
        QCOMPARE(n.kind, g.kind);
        QCOMPARE(n.ctxIdx, g.position);
        QCOMPARE(n.layer, g.kind == GraphNodeKind::Token ? -1 : g.layer); // logits: n_layers
        if (g.kind == GraphNodeKind::Feature) {
            QCOMPARE(n.feature, g.id);
            QCOMPARE(n.activation, double(g.activation));
            QCOMPARE(n.influence, pruned.cumulative[size_t(n.graphIndex)]);
        }
        if (g.kind == GraphNodeKind::Logit) QCOMPARE(n.tokenProb, double(g.activation));
    }
    for (const GraphDocumentLink& l : doc.links)
        QCOMPARE(l.weight, double(graph.adjacency(doc.nodes[size_t(l.target)].graphIndex, doc.nodes[size_t(l.source)].graphIndex)));
    QVERIFY(!doc.isOffline());

    // pins and a supernode, written and read back
    doc.pinnedIds = {doc.nodes[3].nodeId, doc.nodes[10].nodeId};
    doc.supernodes = {{QStringLiteral("early"), doc.nodes[3].nodeId, doc.nodes[10].nodeId}};
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("demo-graph.json"));
    writeGraphFile(doc, path);
    const GraphDocument back = readGraphFile(path);
    QVERIFY(back.isOffline());
    QCOMPARE(back.label, path);
    QCOMPARE(back.nodes.size(), doc.nodes.size());
    QCOMPARE(back.links.size(), doc.links.size());
    for (size_t i = 0; i < doc.nodes.size(); ++i) {
        QCOMPARE(back.nodes[i].nodeId, doc.nodes[i].nodeId);
        QCOMPARE(back.nodes[i].kind, doc.nodes[i].kind);
        QCOMPARE(back.nodes[i].layer, doc.nodes[i].layer);
        QCOMPARE(back.nodes[i].ctxIdx, doc.nodes[i].ctxIdx);
        QCOMPARE(back.nodes[i].feature, doc.nodes[i].feature);
        QCOMPARE(back.nodes[i].influence, doc.nodes[i].influence);
        QCOMPARE(back.nodes[i].activation, doc.nodes[i].activation);
        QCOMPARE(back.nodes[i].fileFeature, doc.nodes[i].fileFeature);
        QCOMPARE(back.nodes[i].featureType, doc.nodes[i].featureType);
        QCOMPARE(back.nodes[i].jsNodeId, doc.nodes[i].jsNodeId);
        QCOMPARE(back.nodes[i].clerp, doc.nodes[i].clerp);
        QCOMPARE(back.nodes[i].tokenProb, doc.nodes[i].tokenProb);
        QCOMPARE(back.nodes[i].isTargetLogit, doc.nodes[i].isTargetLogit);
    }
    // one writer: the document built from the graph and the file read back write the same JSON, member for member
    QVERIFY(graphDocumentToJson(back) == graphDocumentToJson(doc));
    for (size_t i = 0; i < doc.links.size(); ++i) {
        QCOMPARE(back.links[i].source, doc.links[i].source);
        QCOMPARE(back.links[i].target, doc.links[i].target);
        QCOMPARE(back.links[i].weight, doc.links[i].weight); // exact: JSON keeps the shortest round-trip form
    }
    QCOMPARE(back.pinnedIds, doc.pinnedIds);
    QCOMPARE(back.supernodes.size(), size_t(1));
    QCOMPARE(back.supernodes[0], doc.supernodes[0]);
    QCOMPARE(back.promptTokens, doc.promptTokens);
    QCOMPARE(back.slug, QStringLiteral("demo"));
    QVERIFY(back.notes.isEmpty());
    // the metadata members the document does not model are kept (the generator)
    QCOMPARE(graphDocumentToJson(back).value("metadata").toObject().value("info").toObject().value("generator").toObject().value("name").toString(),
             QStringLiteral("AttnScope"));
}

void TestGraphDocument::readsANeuronpediaFile() {
    QTemporaryDir dir;
    const QString path = writeTemp(dir, QStringLiteral("small.json"), json(smallGraph()));
    const GraphDocument doc = readGraphFile(path);
    QCOMPARE(int(doc.nodes.size()), 5);
    QCOMPARE(doc.nodes[0].kind, GraphNodeKind::Token);
    QCOMPARE(doc.nodes[0].layer, -1);
    QCOMPARE(doc.nodes[0].ctxIdx, 1);
    QCOMPARE(doc.nodes[1].kind, GraphNodeKind::Feature);
    QCOMPARE(doc.nodes[1].layer, 0);
    QCOMPARE(doc.nodes[1].feature, 17);
    QCOMPARE(doc.nodes[1].activation, 2.5);
    QCOMPARE(doc.nodes[1].clerp, QStringLiteral("subject"));
    QCOMPARE(doc.nodes[2].kind, GraphNodeKind::Error);
    QCOMPARE(doc.nodes[2].layer, 1); // a number is read as well as a string
    QCOMPARE(doc.nodes[2].ctxIdx, 2);
    QCOMPARE(doc.nodes[3].kind, GraphNodeKind::Feature);
    QCOMPARE(doc.nodes[3].feature, 23);
    QCOMPARE(doc.nodes[3].fileFeature, 1023);
    QCOMPARE(doc.nodes[3].influence, 0.0);
    QCOMPARE(doc.nodes[4].kind, GraphNodeKind::Logit);
    QCOMPARE(doc.nodes[4].layer, 2); // Neuronpedia writes n_layers + 1
    QCOMPARE(doc.nodes[4].feature, 42);
    QCOMPARE(doc.nodes[4].tokenProb, 0.75);
    QVERIFY(doc.nodes[4].isTargetLogit);
    QCOMPARE(doc.nLayers(), 2);
    QCOMPARE(doc.nPositions(), 3);
    QCOMPARE(int(doc.links.size()), 3);
    QCOMPARE(doc.links[1].source, 1);
    QCOMPARE(doc.links[1].target, 4);
    QCOMPARE(doc.links[1].weight, -0.25);
    QCOMPARE(doc.nodeThreshold, 0.7);
    QCOMPARE(doc.pinnedIds, QStringList{"0_17_1"});
    QCOMPARE(doc.supernodes.size(), size_t(1));
    QCOMPARE(doc.supernodes[0], (QStringList{"group", "0_17_1", "E_5_1"}));
    QCOMPARE(doc.notes.size(), 1);
    QVERIFY2(doc.notes[0].contains("nowhere"), qPrintable(doc.notes[0]));
    QCOMPARE(doc.nodeLabel(1), QStringLiteral("L0 F17 @1"));
    QCOMPARE(doc.nodeLabel(4), QStringLiteral("logit \" God\" (p=0.750)"));
    QCOMPARE(doc.nodeLabel(3), QStringLiteral("L1 F23 @2"));
    QCOMPARE(doc.strongestLinks(4, true, 5), (std::vector<int>{1, 2}));
    QCOMPARE(doc.strongestLinks(1, false, 5), (std::vector<int>{1}));
    QCOMPARE(doc.sizeWeight(1), 0.5);
    // written back: Neuronpedia's layers again ("E", n_layers + 1), the unknown metadata kept
    const QJsonObject out = graphDocumentToJson(doc);
    const QJsonArray nodes = out.value("nodes").toArray();
    QCOMPARE(nodes[0].toObject().value("layer").toString(), QStringLiteral("E"));
    QCOMPARE(nodes[4].toObject().value("layer").toString(), QStringLiteral("3"));
    QCOMPARE(nodes[3].toObject().value("feature").toInt(), 1023); // as the file had it
    QCOMPARE(out.value("metadata").toObject().value("transcoder_list").toArray().size(), 1);
}

void TestGraphDocument::refusesHostileFiles() {
    QTemporaryDir dir;
    const auto refusal = [&](const QString& name, const QByteArray& bytes) {
        const QString path = writeTemp(dir, name, bytes);
        return inputErrorOf([&] { readGraphFile(path); });
    };
    const auto edited = [](const std::function<void(QJsonObject&)>& edit) {
        QJsonObject o = smallGraph();
        edit(o);
        return json(o);
    };
    const auto editNode = [&](int i, const std::function<void(QJsonObject&)>& edit) {
        return edited([&](QJsonObject& o) {
            QJsonArray nodes = o.value("nodes").toArray();
            QJsonObject n = nodes[i].toObject();
            edit(n);
            nodes[i] = n;
            o.insert("nodes", nodes);
        });
    };
    const QString p = dir.path() + QLatin1Char('/');
    QCOMPARE(refusal("text.json", "this is not json"),
             p + "text.json: not JSON: illegal value at byte 1");
    QCOMPARE(refusal("array.json", "[1, 2]"), p + "array.json: not a graph: the JSON is not an object");
    QCOMPARE(refusal("missing-node.json", edited([](QJsonObject& o) {
                 QJsonArray links = o.value("links").toArray();
                 links.append(QJsonObject{{"source", "0_17_1"}, {"target", "1_99_2"}, {"weight", 1.0}});
                 o.insert("links", links);
             })),
             p + "missing-node.json: links[3].target \"1_99_2\" is not a node of the graph");
    QCOMPARE(refusal("nodes-object.json", edited([](QJsonObject& o) { o.insert("nodes", QJsonObject{{"a", 1}}); })),
             p + "nodes-object.json: nodes is not an array");
    QCOMPARE(refusal("no-links.json", edited([](QJsonObject& o) { o.remove("links"); })), p + "no-links.json: links is missing");
    QCOMPARE(refusal("no-metadata.json", edited([](QJsonObject& o) { o.remove("metadata"); })), p + "no-metadata.json: metadata is missing");
    QCOMPARE(refusal("layer.json", editNode(1, [](QJsonObject& n) { n.insert("layer", "twelve"); })),
             p + "layer.json: nodes[1].layer \"twelve\" is not a layer (a number or \"E\")");
    QCOMPARE(refusal("layer-frac.json", editNode(1, [](QJsonObject& n) { n.insert("layer", 1.5); })),
             p + "layer-frac.json: nodes[1].layer is not an integer");
    QCOMPARE(refusal("layer-huge.json", editNode(1, [](QJsonObject& n) { n.insert("layer", "99999999"); })),
             p + "layer-huge.json: nodes[1].layer 99999999 is not a layer (0 to 1000)");
    QCOMPARE(refusal("type.json", editNode(2, [](QJsonObject& n) { n.remove("feature_type"); })),
             p + "type.json: nodes[2].feature_type is missing");
    QCOMPARE(refusal("feature.json", editNode(0, [](QJsonObject& n) { n.insert("feature", "one"); })),
             p + "feature.json: nodes[0].feature is not an integer");
    QCOMPARE(refusal("ctx.json", editNode(0, [](QJsonObject& n) { n.insert("ctx_idx", 3); })),
             p + "ctx.json: nodes[0].ctx_idx 3 is outside the prompt's 3 tokens");
    QCOMPARE(refusal("dup.json", editNode(3, [](QJsonObject& n) { n.insert("node_id", "0_17_1"); })),
             p + "dup.json: nodes[3].node_id \"0_17_1\" repeats nodes[1]'s");
    QCOMPARE(refusal("node-array.json", edited([](QJsonObject& o) {
                 QJsonArray nodes = o.value("nodes").toArray();
                 nodes.append(7);
                 o.insert("nodes", nodes);
             })),
             p + "node-array.json: nodes[5] is not an object");
    QCOMPARE(refusal("weight.json", edited([](QJsonObject& o) {
                 QJsonArray links = o.value("links").toArray();
                 QJsonObject l = links[0].toObject();
                 l.insert("weight", "big");
                 links[0] = l;
                 o.insert("links", links);
             })),
             p + "weight.json: links[0].weight is not a finite number");
    QCOMPARE(refusal("supernode.json", edited([](QJsonObject& o) {
                 o.insert("qParams", QJsonObject{{"supernodes", QJsonArray{"flat"}}});
             })),
             p + "supernode.json: qParams.supernodes[0] is not an array");
    QCOMPARE(inputErrorOf([&] { readGraphFile(p + "absent.json"); }), p + "absent.json: cannot open: No such file or directory");
}

void TestGraphDocument::readsAnErrorIdThatEqualsAFeatures() {
    // circuit-tracer's error node of layer 1 at position 2 is "0_1_2"; a layer-0 feature 1 at position 2 is too. Both are
    // read; the link into the layer-1 feature comes from the layer-0 feature (the one below), the link into the logit
    // from the first listed (the feature), and the clash is noted
    QJsonObject g = smallGraph();
    QJsonArray nodes = g.value("nodes").toArray();
    nodes.insert(1, QJsonObject{{"node_id", "0_1_2"}, {"feature", 1}, {"layer", "0"}, {"ctx_idx", 2}, {"feature_type", "cross layer transcoder"},
                                {"influence", 0.4}, {"activation", 1.0}});
    g.insert("nodes", nodes);
    QJsonArray links = g.value("links").toArray();
    links.append(QJsonObject{{"source", "0_1_2"}, {"target", "1_23_2"}, {"weight", 0.5}});
    g.insert("links", links);
    const GraphDocument doc = graphDocumentFromJson(g, QStringLiteral("clash.json"));
    QCOMPARE(int(doc.nodes.size()), 6);
    QCOMPARE(doc.nodes[1].kind, GraphNodeKind::Feature);
    QCOMPARE(doc.nodes[3].kind, GraphNodeKind::Error);
    QCOMPARE(doc.nodes[3].nodeId, doc.nodes[1].nodeId);
    QCOMPARE(int(doc.links.size()), 4);
    QCOMPARE(doc.links[2].source, 1); // "0_1_2" → the logit: both are below it, the feature is listed first
    QCOMPARE(doc.links[3].source, 1); // "0_1_2" → layer-1 feature 23: the layer-0 feature, not the layer-1 error
    QCOMPARE(doc.links[3].target, 4);
    QVERIFY2(doc.notes.join(' ').contains(QStringLiteral("1 node ids name both a feature and an error node")), qPrintable(doc.notes.join(' ')));
}

void TestGraphDocument::writesLargeFeatureIdsAsIntegers() {
    // a Cantor-paired id past 2^32 and a null feature: read as 64-bit / −1, written back as the same integer and null
    QJsonObject g = smallGraph();
    QJsonArray nodes = g.value("nodes").toArray();
    QJsonObject big = nodes[1].toObject();
    big.insert("feature", qint64(13000000000));
    big.insert("run_idx", 3); // a member the document does not model
    nodes[1] = big;
    QJsonObject nullFeature = nodes[2].toObject();
    nullFeature.insert("feature", QJsonValue::Null);
    nullFeature.insert("activation", QJsonValue::Null);
    nodes[2] = nullFeature;
    g.insert("nodes", nodes);
    const GraphDocument doc = graphDocumentFromJson(g, QStringLiteral("big.json"));
    QCOMPARE(doc.nodes[1].fileFeature, qint64(13000000000));
    QCOMPARE(doc.nodes[1].feature, qint64(17)); // from node_id
    QCOMPARE(doc.nodes[2].fileFeature, qint64(-1));
    const QByteArray text = QJsonDocument(graphDocumentToJson(doc)).toJson();
    QVERIFY2(text.contains("\"feature\": 13000000000,"), text.constData());
    QVERIFY(!text.contains("e+"));
    const QJsonArray back = graphDocumentToJson(doc).value("nodes").toArray();
    QCOMPARE(back[1].toObject().value("run_idx").toInt(), 3);
    QVERIFY(back[2].toObject().value("feature").isNull());
    QVERIFY(back[2].toObject().value("activation").isNull());
    // past 2^53 a JSON number holds no exact integer: refused
    big.insert("feature", 1e17);
    nodes[1] = big;
    g.insert("nodes", nodes);
    QCOMPARE(inputErrorOf([&] { graphDocumentFromJson(g, "huge.json"); }), QStringLiteral("huge.json: nodes[1].feature is not an integer"));
}

void TestGraphDocument::opensEveryRealGraphFile() {
    const QString folder = testdata(kRealGraphs);
    if (!QDir(folder).exists()) QSKIP(qPrintable(QStringLiteral("no %1 (the shared reference data, docs/development.md#tests)").arg(folder)));
    const QJsonObject schema = readJsonObject(testdata(kGraphSchema));
    // every graph file there is in the table (a new file must be added to it)
    QStringList found;
    for (const QString& sub : QDir(folder).entryList(QDir::Dirs | QDir::NoDotAndDotDot))
        for (const QString& f : QDir(folder + QLatin1Char('/') + sub).entryList({QStringLiteral("*.json")}, QDir::Files))
            if (!f.contains(QLatin1String("schema")) && f != QLatin1String("graph-metadata.json")) found << sub + QLatin1Char('/') + f;
    QCOMPARE(found.size(), int(std::size(kRealGraphFiles)));
    QTemporaryDir dir;
    for (const RealGraph& r : kRealGraphFiles) {
        const QString path = folder + QLatin1Char('/') + QLatin1String(r.file);
        QVERIFY2(found.contains(QLatin1String(r.file)), r.file);
        const QJsonObject raw = readJsonObject(path);
        const GraphDocument doc = readGraphFile(path);
        // counts by kind, links, prompt, pins and supernodes
        int counts[4] = {0, 0, 0, 0};
        for (const GraphDocumentNode& n : doc.nodes) ++counts[int(n.kind)];
        QCOMPARE(counts[int(GraphNodeKind::Feature)], r.features);
        QCOMPARE(counts[int(GraphNodeKind::Error)], r.errors);
        QCOMPARE(counts[int(GraphNodeKind::Token)], r.tokens);
        QCOMPARE(counts[int(GraphNodeKind::Logit)], r.logits);
        QCOMPARE(int(doc.links.size()), r.links);
        QCOMPARE(int(doc.promptTokens.size()), r.promptTokens);
        QCOMPARE(int(doc.pinnedIds.size()), r.pins);
        QCOMPARE(int(doc.supernodes.size()), r.supernodes);
        QVERIFY2(doc.notes.isEmpty(), qPrintable(doc.notes.join(' ')));
        // the largest feature id exactly, and the logits at n_layers + 1
        const int largest = doc.indexOf(QLatin1String(r.largestId));
        QVERIFY2(largest >= 0, r.largestId);
        QCOMPARE(doc.nodes[size_t(largest)].fileFeature, r.largestFeature);
        QCOMPARE(doc.nodes[size_t(largest)].feature, QString::fromLatin1(r.largestId).section('_', 1, 1).toLongLong());
        const int logit = doc.indexOf(QLatin1String(r.logitId));
        QVERIFY2(logit >= 0 && doc.nodes[size_t(logit)].kind == GraphNodeKind::Logit, r.logitId);
        QCOMPARE(doc.nodes[size_t(logit)].layer, r.logitFileLayer - 1);
        QCOMPARE(doc.nLayers(), r.logitFileLayer - 1);
        // every node against the JSON read independently: id, feature value, kind, position
        const QJsonArray rawNodes = raw.value("nodes").toArray();
        QCOMPARE(rawNodes.size(), qsizetype(doc.nodes.size()));
        const bool cantor = raw.value("metadata").toObject().contains("schema_version"); // generations B and C
        for (int i = 0; i < rawNodes.size(); ++i) {
            const QJsonObject o = rawNodes[i].toObject();
            const GraphDocumentNode& n = doc.nodes[size_t(i)];
            QCOMPARE(n.nodeId, o.value("node_id").toString());
            QCOMPARE(n.fileFeature, o.value("feature").toInteger());
            QCOMPARE(n.ctxIdx, o.value("ctx_idx").toInt());
            QCOMPARE(n.clerp, o.value("clerp").toString());
            const QString type = o.value("feature_type").toString();
            QCOMPARE(n.kind, type == "embedding" ? GraphNodeKind::Token : type == "logit" ? GraphNodeKind::Logit
                             : type == "mlp reconstruction error" ? GraphNodeKind::Error : GraphNodeKind::Feature);
            if (n.kind == GraphNodeKind::Error) QCOMPARE(n.fileFeature, qint64(-1));
            if (cantor && n.kind == GraphNodeKind::Feature) { // Neuronpedia's feature: the Cantor pairing of (layer, index)
                const qint64 s = n.layer + n.feature;
                QCOMPARE(n.fileFeature, s * (s + 1) / 2 + n.feature);
            }
        }
        // written back: every member of every node, link, metadata and qParams as the file had it
        const QString out = dir.filePath(QStringLiteral("back-%1.json").arg(&r - kRealGraphFiles));
        writeGraphFile(doc, out);
        QFile written(out);
        QVERIFY(written.open(QIODevice::ReadOnly));
        const QByteArray text = written.readAll();
        const QJsonObject back = QJsonDocument::fromJson(text).object();
        QCOMPARE(back.keys(), raw.keys());
        QCOMPARE(back.value("metadata").toObject(), raw.value("metadata").toObject());
        QCOMPARE(back.value("qParams").toObject(), raw.value("qParams").toObject());
        const QJsonArray backNodes = back.value("nodes").toArray(), backLinks = back.value("links").toArray(), rawLinks = raw.value("links").toArray();
        QCOMPARE(backNodes.size(), rawNodes.size());
        for (int i = 0; i < rawNodes.size(); ++i) QVERIFY2(backNodes[i] == rawNodes[i], qPrintable(QString::number(i)));
        QCOMPARE(backLinks.size(), rawLinks.size());
        for (int i = 0; i < rawLinks.size(); ++i) QVERIFY2(backLinks[i] == rawLinks[i], qPrintable(QString::number(i)));
        // feature values as integers in the text (QJsonValue's == would take 1.3e+10 for 13000000000)
        static const QRegularExpression integerFeature(QStringLiteral("\"feature\": -?[0-9]+[,\\n]"));
        QCOMPARE(int(QString::fromUtf8(text).count(integerFeature)), rawNodes.size());
        QVERIFY2(text.contains(QByteArray("\"feature\": ") + QByteArray::number(r.largestFeature)), r.file);
        // and read back: the same ids, features and links
        const GraphDocument again = readGraphFile(out);
        QCOMPARE(again.nodes.size(), doc.nodes.size());
        for (size_t i = 0; i < doc.nodes.size(); ++i) {
            QCOMPARE(again.nodes[i].nodeId, doc.nodes[i].nodeId);
            QCOMPARE(again.nodes[i].fileFeature, doc.nodes[i].fileFeature);
            QCOMPARE(again.nodes[i].clerp, doc.nodes[i].clerp);
        }
        QCOMPARE(again.links.size(), doc.links.size());
        for (size_t i = 0; i < doc.links.size(); ++i)
            QVERIFY(again.links[i].source == doc.links[i].source && again.links[i].target == doc.links[i].target &&
                    again.links[i].weight == doc.links[i].weight);
        // valid against Neuronpedia's schema, as the file was
        QCOMPARE(jsonSchemaViolations(raw, schema).join('\n'), QString());
        QCOMPARE(jsonSchemaViolations(back, schema).join('\n'), QString());
    }
    // the non-ASCII clerp of the Gemma fixture's logit, read and written as UTF-8
    const GraphDocument gemma = readGraphFile(folder + QLatin1Char('/') + QLatin1String(kRealGraphFiles[6].file));
    const int macau = gemma.indexOf(QStringLiteral("27_144988_3"));
    QVERIFY(macau >= 0);
    QCOMPARE(gemma.nodes[size_t(macau)].clerp, QStringLiteral("Output \"\u6FB3\u95E8\" (p=0.110)"));
    QCOMPARE(gemma.nodeLabel(macau), QStringLiteral("logit \"\u6FB3\u95E8\" (p=0.110)"));
}

void TestGraphDocument::schemaCheckerFindsViolations() {
    // the checker the real files pass can fail: a mistyped feature, a missing clerp, a missing member
    const QJsonObject feature{{"type", QJsonArray{"integer", "null"}}};
    const QJsonObject node{{"type", "object"}, {"required", QJsonArray{"clerp"}}, {"properties", QJsonObject{{"feature", feature}}}};
    const QJsonObject nodes{{"type", "array"}, {"items", node}};
    const QJsonObject schema{{"type", "object"}, {"required", QJsonArray{"nodes", "metadata"}}, {"properties", QJsonObject{{"nodes", nodes}}}};
    const QJsonObject good{{"metadata", QJsonObject{}}, {"nodes", QJsonArray{QJsonObject{{"feature", qint64(13000000000)}, {"clerp", ""}},
                                                                            QJsonObject{{"feature", QJsonValue::Null}, {"clerp", "x"}}}}};
    QCOMPARE(jsonSchemaViolations(good, schema), QStringList());
    const QJsonObject bad{{"nodes", QJsonArray{QJsonObject{{"feature", 1.5}, {"clerp", ""}}, QJsonObject{{"feature", "7"}}}}};
    QCOMPARE(jsonSchemaViolations(bad, schema),
             (QStringList{"$: lacks the required member \"metadata\"", "$.nodes[0].feature: is number, not integer or null",
                          "$.nodes[1]: lacks the required member \"clerp\"", "$.nodes[1].feature: is string, not integer or null"}));
    QCOMPARE(jsonSchemaViolations(QJsonObject{}, QJsonObject{{"oneOf", QJsonArray{}}}),
             QStringList{"$: the schema's keyword \"oneOf\" is not one this checker knows"});
}

QTEST_MAIN(TestGraphDocument)
#include "tst_graph_document.moc"
