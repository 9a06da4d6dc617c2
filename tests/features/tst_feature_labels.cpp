// Feature labels made elsewhere (model/features/feature_labels.h): Neuronpedia's explanation exports (.jsonl and gzip'd
// .jsonl.gz, rows as neuronpedia-utils' export-data.py writes them from the Explanation table), a folder of batch files
// read in natural order, and feature,label / layer,feature,label CSVs with RFC 4180 quoting; each label at the
// (layer, index) the file gives, the first label of a feature kept; bad rows refused by file, line and field; a gzip
// bomb refused before it is inflated whole. Labels then land on a graph's feature nodes as clerp
// (model/analysis/graphs/graph_labels.h), and on a real Neuronpedia graph file's nodes without touching the clerps it has.
#include "model/analysis/graphs/graph_document.h"
#include "model/analysis/graphs/graph_labels.h"
#include "model/core/errors.h"
#include "model/features/feature_labels.h"
#include "model/formats/gzip_file.h"
#include "support/error_capture.h"
#include "support/test_paths.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#ifdef ATTNSCOPE_TEST_ZLIB
#include <zlib.h>
#endif

using namespace attnscope;
using attnscope::test::anyErrorOf;

namespace {

QString writeFile(const QString& path, const QByteArray& bytes) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size()) return {};
    return path;
}

/// One explanation row as export-data.py writes it (index a string; an embedding, ids and model names beside).
QByteArray row(const QString& model, const QString& source, const QJsonValue& index, const QString& description) {
    const QJsonObject o{{"id", "clx" + source + index.toVariant().toString()}, {"modelId", model}, {"layer", source}, {"index", index},
                        {"authorId", "auto"}, {"description", description}, {"typeName", "oai_token-act-pair"},
                        {"explanationModelName", "gpt-4o-mini"}, {"embedding", QJsonArray{0.125, -0.5}}, {"umap_x", QJsonValue::Null}};
    return QJsonDocument(o).toJson(QJsonDocument::Compact) + '\n';
}

#ifdef ATTNSCOPE_TEST_ZLIB
/// `bytes` as a gzip member, made with zlib's deflate and a gzip wrapper (windowBits 16 + 15).
QByteArray gzip(const QByteArray& bytes) {
    z_stream zs{};
    if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
    QByteArray out(int(deflateBound(&zs, uLong(bytes.size()))) + 64, '\0');
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.constData()));
    zs.avail_in = uInt(bytes.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = uInt(out.size());
    const int rc = deflate(&zs, Z_FINISH);
    out.resize(int(zs.total_out));
    deflateEnd(&zs);
    return rc == Z_STREAM_END ? out : QByteArray();
}
#endif

} // namespace

class TestFeatureLabels : public QObject {
    Q_OBJECT
private slots:
    void neuronpediaJsonl() {
        QTemporaryDir dir;
        const QString path = writeFile(dir.filePath("batch-0.jsonl"),
                                       row("gpt2-small", "6-res-jb", "17", "the word \"God\", in scripture") + row("gpt2-small", "6-res-jb", 3, "commas, lists") +
                                           "\n" + row("gpt2-small", "7-res-jb", "17", "  names of kings  ") +
                                           row("gpt2-small", "6-res-jb", "17", "a second explanation of 17") + row("gpt2-small", "6-res-jb", "9", "   "));
        const FeatureLabels labels = readFeatureLabels(path);
        QCOMPARE(int(labels.labels.size()), 3);
        QCOMPARE(labels.label(6, 17), QStringLiteral("the word \"God\", in scripture"));
        QCOMPARE(labels.label(6, 3), QStringLiteral("commas, lists"));
        QCOMPARE(labels.label(7, 17), QStringLiteral("names of kings")); // trimmed
        QCOMPARE(labels.label(7, 3), QString());
        QCOMPARE(labels.label(6, 9), QString()); // an empty description labels nothing
        QCOMPARE(labels.duplicates, 1);          // the second explanation of 6/17 is not used
        QCOMPARE(labels.modelIds, QStringList{"gpt2-small"});
        QCOMPARE(labels.sources, (QStringList{"6-res-jb", "7-res-jb"}));
        QCOMPARE(labels.summary(), QStringLiteral("3 labels from 1 file (model gpt2-small; sources 6-res-jb, 7-res-jb; 1 later duplicates ignored)"));
    }

    void gzippedBatchesInNaturalOrder() {
#ifndef ATTNSCOPE_TEST_ZLIB
        QSKIP("this build has no zlib (install zlib1g-dev): .jsonl.gz labels are not read");
#else
        QVERIFY(gzipSupported());
        QTemporaryDir dir;
        // Neuronpedia's layout: <model>/<source>/explanations/batch-N.jsonl.gz; batch-10 after batch-2 (natural order),
        // so feature 5's label comes from batch-2
        const QString root = dir.filePath("gemma-2-2b");
        QVERIFY(!writeFile(root + "/20-gemmascope-res-16k/explanations/batch-10.jsonl.gz", gzip(row("gemma-2-2b", "20-gemmascope-res-16k", "5", "from batch 10"))).isEmpty());
        QVERIFY(!writeFile(root + "/20-gemmascope-res-16k/explanations/batch-2.jsonl.gz",
                           gzip(row("gemma-2-2b", "20-gemmascope-res-16k", "5", "from batch 2") + row("gemma-2-2b", "20-gemmascope-res-16k", "16383", "last")))
                     .isEmpty());
        // two gzip members back to back read as one file, as gzip -d reads them
        QVERIFY(!writeFile(root + "/3-gemmascope-transcoder-16k/explanations/batch-0.jsonl.gz",
                           gzip(row("gemma-2-2b", "3-gemmascope-transcoder-16k", "1", "one")) + gzip(row("gemma-2-2b", "3-gemmascope-transcoder-16k", "2", "two")))
                     .isEmpty());
        writeFile(root + "/README.txt", "not a label file");
        const FeatureLabels labels = readFeatureLabels(root);
        QCOMPARE(labels.files.size(), 3);
        QCOMPARE(labels.label(20, 5), QStringLiteral("from batch 2"));
        QCOMPARE(labels.label(20, 16383), QStringLiteral("last"));
        QCOMPARE(labels.label(3, 1), QStringLiteral("one"));
        QCOMPARE(labels.label(3, 2), QStringLiteral("two"));
        QCOMPARE(labels.duplicates, 1);

        // a gzip bomb: 2 GiB of zeros would inflate past the 1 GiB cap; refused without inflating it whole. A smaller
        // one through readGzipFile's own cap shows the same refusal
        const QByteArray zeros(4 << 20, '\0');
        const QString bomb = writeFile(dir.filePath("bomb.gz"), gzip(zeros));
        QCOMPARE(readGzipFile(bomb, "bomb.gz", 8 << 20).size(), zeros.size());
        QCOMPARE(anyErrorOf([&] { readGzipFile(bomb, "bomb.gz", 1 << 20); }), QStringLiteral("bomb.gz: inflates to more than 1048576 bytes"));
        const QByteArray whole = gzip(row("m", "1-x", "1", "a"));
        const QString cut = writeFile(dir.filePath("cut.jsonl.gz"), whole.left(whole.size() - 6));
        QVERIFY(anyErrorOf([&] { readFeatureLabels(cut); }).endsWith(QStringLiteral("cut.jsonl.gz: truncated gzip data")));
        QByteArray flipped = whole;
        flipped[12] = char(flipped[12] ^ 0x5a);
        const QString bad = writeFile(dir.filePath("bad.jsonl.gz"), flipped);
        QVERIFY2(anyErrorOf([&] { readFeatureLabels(bad); }).contains(QStringLiteral("bad.jsonl.gz: corrupt gzip data")) ||
                     anyErrorOf([&] { readFeatureLabels(bad); }).contains(QStringLiteral("bad.jsonl.gz: truncated gzip data")),
                 qPrintable(anyErrorOf([&] { readFeatureLabels(bad); })));
        const QString plain = writeFile(dir.filePath("plain.jsonl.gz"), row("m", "1-x", "1", "a"));
        QVERIFY(anyErrorOf([&] { readFeatureLabels(plain); }).endsWith(QStringLiteral("plain.jsonl.gz: not a gzip file (it does not start with 1f 8b)")));
#endif
    }

    void csvWithQuotes() {
        QTemporaryDir dir;
        // a byte-order mark, CRLF, a quoted label with a comma, a doubled quote and a line break; a layer-less file
        const QString one = writeFile(dir.filePath("one.csv"), "\xEF\xBB\xBF" "feature,label\r\n12,\"Genesis, Exodus\"\r\n4,\"says \"\"Lord\"\"\nthen a name\"\r\n7,\r\n");
        const FeatureLabels a = readFeatureLabels(one);
        QCOMPARE(int(a.labels.size()), 2);
        QCOMPARE(a.label(0, 12), QStringLiteral("Genesis, Exodus"));
        QCOMPARE(a.label(5, 12), QStringLiteral("Genesis, Exodus")); // no layer column: every layer
        QCOMPARE(a.label(1, 4), QStringLiteral("says \"Lord\"\nthen a name"));
        QCOMPARE(a.label(1, 7), QString());
        // columns in any order, Neuronpedia's names
        const QString layered = writeFile(dir.filePath("layered.csv"), "description,layer,index\nprevious token,1,3\n\"in, order\",0,3\n");
        const FeatureLabels b = readFeatureLabels(layered);
        QCOMPARE(b.label(1, 3), QStringLiteral("previous token"));
        QCOMPARE(b.label(0, 3), QStringLiteral("in, order"));
        QCOMPARE(b.label(2, 3), QString());
        // merge: the first wins, a layer's own label before a layer-less one
        FeatureLabels m = b;
        m.merge(a);
        QCOMPARE(m.label(1, 4), QStringLiteral("says \"Lord\"\nthen a name"));
        QCOMPARE(m.label(1, 3), QStringLiteral("previous token"));
        QCOMPARE(m.files.size(), 2);
    }

    void refusals() {
        QTemporaryDir dir;
        const auto err = [&](const QString& name, const QByteArray& bytes) { return anyErrorOf([&] { readFeatureLabels(writeFile(dir.filePath(name), bytes)); }); };
        const QString d = dir.path() + QLatin1Char('/');
        QCOMPARE(err("a.jsonl", row("m", "6-res-jb", "1", "x") + "{\"layer\": \"6-res-jb\", \"index\": \"x7\"}\n"),
                 d + QStringLiteral("a.jsonl: line 2: field \"index\" must be a whole number ≥ 0, not \"x7\""));
        QCOMPARE(err("b.jsonl", "{\"layer\": \"6-res-jb\", \"index\": -3}\n"), d + QStringLiteral("b.jsonl: line 1: field \"index\" must be a whole number ≥ 0, not the number -3"));
        QCOMPARE(err("c.jsonl", "\n{\"index\": \"3\", \"description\": \"x\"}\n"),
                 d + QStringLiteral("c.jsonl: line 2: field \"layer\" (the source id, e.g. \"6-res-jb\") is missing"));
        QCOMPARE(err("d.jsonl", "{\"layer\": \"res-jb\", \"index\": \"3\"}\n"), d + QStringLiteral("d.jsonl: line 1: source \"res-jb\" (field \"layer\") does not start with a layer number"));
        QVERIFY(err("e.jsonl", "{\"layer\": \"6-res-jb\", \"index\": 3,\n").startsWith(d + QStringLiteral("e.jsonl: line 1: not valid JSON: ")));
        QCOMPARE(err("f.jsonl", "[1, 2]\n"), d + QStringLiteral("f.jsonl: line 1: not a JSON object"));
        QCOMPARE(err("g.jsonl", "{\"layer\": \"6-res-jb\", \"index\": 3, \"description\": 5}\n"),
                 d + QStringLiteral("g.jsonl: line 1: field \"description\" must be a string, not the number 5"));
        QCOMPARE(err("h.csv", "id,text\n1,a\n"), d + QStringLiteral("h.csv: line 1: the header must name the columns \"feature\" and \"label\" (and optionally \"layer\"), not \"id,text\""));
        QCOMPARE(err("i.csv", "feature,label\n1,\"open\n2,b\n"), d + QStringLiteral("i.csv: line 2: a quoted field is not closed"));
        QCOMPARE(err("j.csv", "layer,feature,label\n1,2\n"), d + QStringLiteral("j.csv: line 2: 2 fields, the header has 3"));
        QCOMPARE(err("k.csv", "feature,label\n1.5,a\n"), d + QStringLiteral("k.csv: line 2: field \"feature\" must be a whole number ≥ 0, not \"1.5\""));
        QCOMPARE(err("l.csv", ""), d + QStringLiteral("l.csv: the CSV is empty (expected a header \"feature,label\" or \"layer,feature,label\")"));
        QCOMPARE(err("m.txt", "feature,label\n"), d + QStringLiteral("m.txt: not a label file AttnScope reads (Neuronpedia's explanations .jsonl or .jsonl.gz, or a .csv)"));
        QDir().mkpath(dir.filePath("empty/explanations"));
        QCOMPARE(anyErrorOf([&] { readFeatureLabels(dir.filePath("empty")); }),
                 dir.filePath("empty") + QStringLiteral(": no label files in this folder (Neuronpedia's explanations/batch-N.jsonl.gz, .jsonl, or a .csv)"));
        QCOMPARE(anyErrorOf([&] { readFeatureLabels(dir.filePath("none.csv")); }), dir.filePath("none.csv") + QStringLiteral(": file not found (") + dir.filePath("none.csv") + ")");
    }

    void labelsOnGraphNodes() {
        // a graph file as Neuronpedia writes one: a labelled feature keeps its clerp, an unlabelled one gets the file's
        // label at its (layer, index), errors, embeddings and logits are left alone
        const QJsonObject json{
            {"metadata", QJsonObject{{"slug", "s"}, {"scan", "demo"}, {"prompt", "a b"}, {"prompt_tokens", QJsonArray{"<s>", " b"}}}},
            {"qParams", QJsonObject{}},
            {"nodes", QJsonArray{QJsonObject{{"node_id", "E_5_1"}, {"feature", 1}, {"layer", "E"}, {"ctx_idx", 1}, {"feature_type", "embedding"}},
                                 QJsonObject{{"node_id", "0_17_1"}, {"feature", 17}, {"layer", "0"}, {"ctx_idx", 1}, {"feature_type", "cross layer transcoder"}, {"clerp", "kept"}},
                                 QJsonObject{{"node_id", "1_3_1"}, {"feature", 3}, {"layer", "1"}, {"ctx_idx", 1}, {"feature_type", "cross layer transcoder"}},
                                 QJsonObject{{"node_id", "1_4_1"}, {"feature", 4}, {"layer", "1"}, {"ctx_idx", 1}, {"feature_type", "cross layer transcoder"}},
                                 QJsonObject{{"node_id", "0_1_1"}, {"feature", QJsonValue::Null}, {"layer", "1"}, {"ctx_idx", 1}, {"feature_type", "mlp reconstruction error"}},
                                 QJsonObject{{"node_id", "3_17_1"}, {"feature", 17}, {"layer", "3"}, {"ctx_idx", 1}, {"feature_type", "logit"}, {"clerp", "Output"}}}},
            {"links", QJsonArray{}}};
        GraphDocument doc = graphDocumentFromJson(json, "s.json");
        FeatureLabels labels;
        labels.labels = {{{0, 17}, "from labels"}, {{1, 3}, "previous token"}, {{1, 5}, "unused"}, {{1, 1}, "not an error's"}, {{-1, 17}, "any layer"}};
        QCOMPARE(applyFeatureLabels(doc, labels), 1);
        QCOMPARE(doc.nodes[1].clerp, QStringLiteral("kept"));
        QCOMPARE(doc.nodes[2].clerp, QStringLiteral("previous token"));
        QCOMPARE(doc.nodes[3].clerp, QString());
        QCOMPARE(doc.nodes[4].clerp, QString());
        QCOMPARE(doc.nodes[5].clerp, QStringLiteral("Output"));
        QCOMPARE(applyFeatureLabels(doc, labels, true), 2);
        QCOMPARE(doc.nodes[1].clerp, QStringLiteral("from labels"));
        // written back as clerp
        const QJsonArray nodes = graphDocumentToJson(doc).value("nodes").toArray();
        QCOMPARE(nodes[2].toObject().value("clerp").toString(), QStringLiteral("previous token"));
    }

    void realNeuronpediaGraph() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        // every feature node of a real file gets the CSV's label for its (layer, index); the file's own clerps stay
        const QDir graphs(test::testdata("real-world/graphs"));
        QString file;
        for (const QFileInfo& f : graphs.entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot))
            for (const QFileInfo& g : QDir(f.filePath()).entryInfoList({"*.json"}, QDir::Files))
                if (!g.fileName().contains("schema") && file.isEmpty()) file = g.filePath();
        QVERIFY2(!file.isEmpty(), "no graph file in real-world/graphs");
        GraphDocument doc = readGraphFile(file);
        QByteArray csv = "layer,feature,label\n";
        int features = 0, hadClerp = 0;
        for (const GraphDocumentNode& n : doc.nodes)
            if (n.kind == GraphNodeKind::Feature) {
                ++features;
                hadClerp += !n.clerp.isEmpty();
                csv += QByteArray::number(n.layer) + ',' + QByteArray::number(n.feature) + ",\"L" + QByteArray::number(n.layer) + ", #" + QByteArray::number(n.feature) + "\"\n";
            }
        QVERIFY(features > 0);
        QTemporaryDir dir;
        const FeatureLabels labels = readFeatureLabels(writeFile(dir.filePath("l.csv"), csv));
        const std::vector<GraphDocumentNode> before = doc.nodes;
        const int n = applyFeatureLabels(doc, labels);
        QVERIFY(n <= features - hadClerp); // a feature seen at two positions is one label
        for (size_t i = 0; i < doc.nodes.size(); ++i) {
            const auto& a = before[i];
            const auto& b = doc.nodes[i];
            if (a.kind != GraphNodeKind::Feature || !a.clerp.isEmpty()) QCOMPARE(b.clerp, a.clerp);
            else QCOMPARE(b.clerp, QStringLiteral("L%1, #%2").arg(a.layer).arg(a.feature));
        }
    }
};

QTEST_GUILESS_MAIN(TestFeatureLabels)
#include "tst_feature_labels.moc"
