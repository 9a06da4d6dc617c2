// Attribution targets (circuit-tracer's AttributionTargets, attribution/targets.py) on the demo model with its bundled
// transcoders: custom directions (a logit difference, a feature's decoder row, a .npy vector) against
// tools/graph_reference.py --bounded-only (float64 autograd rows; values and constants from a knock-out forward);
// chosen tokens against the salient graph's own logit rows; weights; refusals by message.

#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/attribution_targets.h"
#include "model/analysis/graphs/graph_json.h"
#include "model/analysis/graphs/graph_pruning.h"
#include "model/analysis/graphs/replacement_model.h"
#include "model/analysis/common/token_json.h"
#include "model/features/dictionary_set.h"
#include "model/formats/model_loader.h"
#include "support/error_capture.h"
#include "support/reference_json.h"
#include "support/temp_files.h"
#include "support/test_paths.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

const QString kGraphData = attnscope::test::sourceFile(QStringLiteral("tests/data/graphs/"));

AttributionGraph graphFor(const ReplacementModel& rm, const std::vector<AttributionTarget>& targets) {
    AttributionOptions o;
    o.targets = targets;
    return attributeGraph(rm, o);
}

} // namespace

class TestAttributionTargets : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void customTargetsMatchTheReference();
    void chosenTokensAreTheSalientGraphsRows();
    void aDifferenceIsTheDifferenceOfItsLogits();
    void aWeightIsTheTargetsInfluenceWeight();
    void refusesTargetsItCannotRead();

private:
    std::shared_ptr<const Model> model_;
    DictionarySet set_;
    QJsonObject ref_;
    ReplacementModel rm_;
    AttributionGraph salient_;
};

void TestAttributionTargets::initTestCase() {
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    QSKIP("the demo's transcoder set is a circuit-tracer config.yaml: this build has no yaml-cpp (the arm64 sysroot)");
#endif
    model_ = loadModel(demoDir());
    set_ = openDictionaries(attnscope::test::sourceFile(QStringLiteral("resources/demo-features/transcoders")));
    ref_ = readJsonObject(kGraphData + QStringLiteral("demo_graph_bounded_reference.json"));
    std::vector<int> tokens;
    for (const QJsonValue& v : ref_["token_ids"].toArray()) tokens.push_back(v.toInt());
    rm_ = buildReplacementModel(*model_, set_, tokens);
    salient_ = attributeGraph(rm_);
    QVERIFY(salient_.nNodes() - salient_.logitOffset >= 3);
}

void TestAttributionTargets::customTargetsMatchTheReference() {
    const QJsonArray targets = ref_["custom_targets"].toObject()["targets"].toArray();
    QCOMPARE(targets.size(), 3);
    for (const QJsonValue& tv : targets) {
        const QJsonObject t = tv.toObject();
        QString spec = t["spec"].toString();
        spec.replace(QStringLiteral("vector: "), QStringLiteral("vector: ") + kGraphData); // the .npy beside the reference
        const std::vector<AttributionTarget> parsed = parseAttributionTargets(spec, rm_);
        QCOMPARE(int(parsed.size()), 1);
        const AttributionGraph g = graphFor(rm_, parsed);
        QCOMPARE(g.nNodes() - g.logitOffset, 1);
        const int node = g.logitOffset;
        QCOMPARE(g.nodes[size_t(node)].id, model_->config().d_vocab); // the virtual index
        QCOMPARE(double(g.nodes[size_t(node)].activation), 1.0);     // the default weight
        const QJsonArray row = t["row"].toArray();
        QCOMPARE(row.size(), g.logitOffset);
        double scale = 0, worst = 0;
        for (int s = 0; s < g.logitOffset; ++s) scale = std::max(scale, std::abs(row[s].toDouble()));
        for (int s = 0; s < g.logitOffset; ++s) worst = std::max(worst, std::abs(g.adjacency(node, s) - row[s].toDouble()));
        QVERIFY2(scale > 0.1 && worst <= 1e-4 * scale, qPrintable(QStringLiteral("%1: %2 of %3").arg(spec).arg(worst).arg(scale)));
        const double value = g.values[size_t(node)], want = t["value"].toDouble();
        QVERIFY2(std::abs(value - want) <= 1e-4 * std::max(1.0, std::abs(want)), qPrintable(QStringLiteral("%1: %2 against %3").arg(spec).arg(value).arg(want)));
        const double constant = value - g.adjacency.row(node).cast<double>().sum();
        QVERIFY2(std::abs(constant - t["constant"].toDouble()) <= 1e-4 * std::max(1.0, std::abs(want)), qPrintable(spec));
        // the graph prunes and writes with the target's label
        const PrunedGraph p = pruneGraph(g);
        QVERIFY(p.keptNodes() > 5);
        const QJsonObject np = neuronpediaGraphJson(g, p, model_->tokenizer(), {}, {});
        bool labelled = false;
        for (const QJsonValue& n : np["nodes"].toArray())
            if (n["feature_type"].toString() == QLatin1String("logit"))
                labelled = n["clerp"].toString() == QStringLiteral("%1 (w=1.000)").arg(parsed[0].label) &&
                           n["node_id"].toString() == QStringLiteral("3_%1_6").arg(model_->config().d_vocab);
        QVERIFY2(labelled, qPrintable(spec));
    }
}

void TestAttributionTargets::chosenTokensAreTheSalientGraphsRows() {
    // the second and third salient logits, by id and by their text: the same rows, values and probabilities
    const int a = salient_.logitOffset + 1, b = salient_.logitOffset + 2;
    const int ida = salient_.nodes[size_t(a)].id, idb = salient_.nodes[size_t(b)].id;
    const QString byIds = QStringLiteral("ids: %1, %2").arg(ida).arg(idb);
    const QString byText = tokenText(model_->tokenizer(), ida) + QLatin1Char(',') + tokenText(model_->tokenizer(), idb);
    const double scale = salient_.adjacency.cwiseAbs().maxCoeff();
    for (const QString& spec : {byIds, byText}) {
        const AttributionGraph g = graphFor(rm_, parseAttributionTargets(spec, rm_));
        QCOMPARE(g.nNodes() - g.logitOffset, 2);
        QCOMPARE(g.logitOffset, salient_.logitOffset);
        for (int k = 0; k < 2; ++k) {
            const int mine = g.logitOffset + k, theirs = k == 0 ? a : b;
            QCOMPARE(g.nodes[size_t(mine)].id, salient_.nodes[size_t(theirs)].id);
            QCOMPARE(g.nodes[size_t(mine)].activation, salient_.nodes[size_t(theirs)].activation); // its probability
            QVERIFY(std::abs(g.values[size_t(mine)] - salient_.values[size_t(theirs)]) <= 1e-9);
            // the incoming edges (logit columns are empty: a logit is no source)
            const int n = g.logitOffset;
            QVERIFY2((g.adjacency.row(mine).head(n) - salient_.adjacency.row(theirs).head(n)).cwiseAbs().maxCoeff() <= 1e-6 * scale, qPrintable(spec));
        }
        // and the feature rows do not depend on the targets
        QVERIFY((g.adjacency.topLeftCorner(g.nFeatures(), g.logitOffset) - salient_.adjacency.topLeftCorner(salient_.nFeatures(), g.logitOffset)).cwiseAbs().maxCoeff() == 0);
    }
}

void TestAttributionTargets::aDifferenceIsTheDifferenceOfItsLogits() {
    // logit(x) − logit(y): its row, value and constant are x's minus y's (the mean logit cancels)
    const int x = salient_.logitOffset, y = salient_.logitOffset + 1;
    const QString spec = QStringLiteral("diff:%1,%2").arg(tokenText(model_->tokenizer(), salient_.nodes[size_t(x)].id),
                                                          tokenText(model_->tokenizer(), salient_.nodes[size_t(y)].id));
    const std::vector<AttributionTarget> t = parseAttributionTargets(spec, rm_);
    QCOMPARE(t[0].label, QStringLiteral("logit(%1) − logit(%2)").arg(tokenText(model_->tokenizer(), salient_.nodes[size_t(x)].id),
                                                                    tokenText(model_->tokenizer(), salient_.nodes[size_t(y)].id)));
    const AttributionGraph g = graphFor(rm_, t);
    const int d = g.logitOffset;
    const double scale = salient_.adjacency.cwiseAbs().maxCoeff();
    const int n = g.logitOffset;
    QVERIFY((g.adjacency.row(d).head(n) - (salient_.adjacency.row(x).head(n) - salient_.adjacency.row(y).head(n))).cwiseAbs().maxCoeff() <= 1e-5 * scale);
    QVERIFY(std::abs(g.values[size_t(d)] - (salient_.values[size_t(x)] - salient_.values[size_t(y)])) <= 1e-5);
    const int last = rm_.nPositions() - 1;
    const double logitDiff = rm_.clean.logits(rm_.clean.logitRow(last), salient_.nodes[size_t(x)].id) -
                             rm_.clean.logits(rm_.clean.logitRow(last), salient_.nodes[size_t(y)].id);
    QVERIFY(std::abs(g.values[size_t(d)] - logitDiff) <= 1e-4); // the demo has no unembedding bias
}

void TestAttributionTargets::aWeightIsTheTargetsInfluenceWeight() {
    const AttributionGraph g = graphFor(rm_, parseAttributionTargets(QStringLiteral("feature: 1:4 @0.25"), rm_));
    QCOMPARE(double(g.nodes[size_t(g.logitOffset)].activation), 0.25);
    QCOMPARE(logitWeights(g)[size_t(g.logitOffset)], 0.25);
    // the influence is linear in the weight
    const AttributionGraph one = graphFor(rm_, parseAttributionTargets(QStringLiteral("feature: 1:4"), rm_));
    const PrunedGraph pq = pruneGraph(g), p1 = pruneGraph(one);
    for (int i = 0; i < g.nNodes(); ++i) QVERIFY(std::abs(pq.influence[size_t(i)] - 0.25 * p1.influence[size_t(i)]) <= 1e-12 + 1e-9 * p1.influence[size_t(i)]);
}

void TestAttributionTargets::refusesTargetsItCannotRead() {
    TempFiles dir;
    QByteArray header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
    while ((10 + header.size() + 1) % 64) header += ' ';
    header += '\n';
    QByteArray npy("\x93NUMPY\x01\x00", 8);
    npy += char(header.size() & 0xff);
    npy += char(header.size() >> 8);
    npy += header;
    npy += QByteArray(12, '\0');
    const QString small = dir.write(QStringLiteral("three.npy"), npy);
    const QString none = dir.path(QStringLiteral("none.npy"));
    const int vocab = model_->config().d_vocab;
    const QString multi = QStringLiteral(" In the beginning");
    const int nMulti = int(model_->tokenizer().encode(multi).size());
    QVERIFY(nMulti > 1);
    const std::vector<std::pair<QString, QString>> cases{
        {multi, QStringLiteral("--graph-targets \"%1\": \"%1\" is %2 tokens; a target must be exactly one (give its id with \"ids:\")")
                    .arg(multi).arg(nMulti)},
        {QStringLiteral("ids: 12, %1").arg(vocab), QStringLiteral("--graph-targets \"ids: 12, %1\": \"%1\" is not a token id (0 … %2)").arg(vocab).arg(vocab - 1)},
        {QStringLiteral("diff: God"), QStringLiteral("--graph-targets \"diff: God\": a difference needs two tokens: \"diff: X, Y\"")},
        {QStringLiteral("feature: 2:4"), QStringLiteral("--graph-targets \"feature: 2:4\": layer 2 is outside the set's 2 layers")},
        {QStringLiteral("feature: 1:512"), QStringLiteral("--graph-targets \"feature: 1:512\": feature 512 is outside layer 1's 512 features")},
        {QStringLiteral("feature: 1:x"), QStringLiteral("--graph-targets \"feature: 1:x\": name a feature as \"feature: LAYER:FEATURE\"")},
        {QStringLiteral("diff: God, heaven @-1"), QStringLiteral("--graph-targets \"diff: God, heaven @-1\": the weight after @ must be a positive number, got \"-1\"")},
        {QStringLiteral("vector: %1").arg(small), QStringLiteral("--graph-targets \"vector: %1\": %1 has shape [3]; a direction needs [128] (d_model)").arg(small)},
        {QStringLiteral("vector: %1").arg(none), QStringLiteral("--graph-targets \"vector: %1\": cannot read %1: No such file or directory").arg(none)},
        {QStringLiteral(" God,,"), QStringLiteral("--graph-targets \" God,,\": an empty target")},
    };
    for (const auto& c : cases) QCOMPARE(inputErrorOf([&] { (void)parseAttributionTargets(c.first, rm_); }), c.second);
}

QTEST_GUILESS_MAIN(TestAttributionTargets)
#include "tst_attribution_targets.moc"
