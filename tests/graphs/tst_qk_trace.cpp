// The QK trace of one attention cell in the graph's nodes (model/analysis/graphs/qk_trace.h), checked by forward passes
// only: the constants come from a forward with no source and the pairs from the backward, and together they must
// make the clean run's score; each source's c_q(s) and c_k(s) equals what removing it from the frozen replacement
// model changes in the head's rotated query and key, computed here by hand from the residual (frozen ln_1,
// projection, q/k norm with the clean divisor, RoPE). On the demo with per-layer and cross-layer transcoders, a
// Llama-family model (RoPE, grouped-query heads, a sliding window), Qwen 3 (q/k norms) and Gemma 2 (post norms, a skip
// transcoder, the attention soft-cap: the score before it).

#include "model/analysis/graphs/attribution_graph.h"
#include "model/analysis/graphs/qk_trace.h"
#include "model/analysis/graphs/replacement_model.h"
#include "model/features/dictionary_set.h"
#include "model/features/sparse_coder.h"
#include "model/formats/model_loader.h"
#include "model/transformer/rotary_embedding.h"
#include "support/error_capture.h"
#include "support/hf_llama_folder.h"
#include "support/llama_checkpoint.h"
#include "support/made_tokenizer.h"
#include "support/random_transcoders.h"
#include "support/reference_json.h"
#include "support/test_paths.h"

#include <QtTest>
#include <functional>
#include <random>

using namespace attnscope;
using namespace attnscope::test;

namespace {

/// The head's rotated query (or key) at position p from a residual row, by hand: ln_1 with the clean σ, the projection
/// and bias, the q/k norm with the clean run's divisor, RoPE at p. [d_head]
Eigen::VectorXd rotated(const ReplacementModel& rm, int L, bool query, int head, int p, const RowVector& resid) {
    const ModelConfig& cfg = rm.model->config();
    const LayerWeights& w = rm.model->layer(L);
    const int dh = cfg.d_head, block = query ? head : cfg.kvHeadOf(head);
    Eigen::RowVectorXd x = resid.cast<double>();
    if (cfg.norm == NormKind::LayerNorm) x.array() -= x.mean();
    x = x.cwiseProduct(w.ln1_w.toMatrix().row(0).cast<double>()) / double(rm.ln1Scale[size_t(L)](p));
    if (!w.ln1_b.empty()) x += w.ln1_b.toMatrix().row(0).cast<double>();
    const Weight W = query ? w.W_Q_head(head, dh) : w.W_K_head(block, dh);
    Eigen::RowVectorXd v = x * W.toMatrix().cast<double>();
    const Weight& b = query ? w.b_Q : w.b_K;
    if (!b.empty()) v += b.toMatrix().row(0).segment(Eigen::Index(block) * dh, dh).cast<double>();
    if (cfg.qkNorm) {
        const std::shared_ptr<const LayerCache> c = rm.clean.layer(L);
        const Eigen::RowVectorXd pre = (query ? c->q_pre_norm : c->k_pre_norm).row(p).segment(Eigen::Index(block) * dh, dh).cast<double>();
        const double divisor = std::sqrt(pre.squaredNorm() / dh + cfg.norm_eps);
        v = v.cwiseProduct((query ? w.q_norm_w : w.k_norm_w).toMatrix().row(0).cast<double>()) / divisor;
    }
    if (cfg.positions == PositionKind::Rotary) {
        Matrix m = v.cast<float>();
        const std::vector<int> at{p};
        applyRotary(cfg, *ropeTable(cfg, L, p + 1), m, at);
        v = m.row(0).cast<double>();
    }
    return v.transpose();
}

/// Removes column `c` of `tracer` from the frozen model's inputs.
void knockOut(const QkTracer& tracer, int c, std::vector<Matrix>& acts, std::vector<Matrix>& errs, Matrix& embed) {
    const GraphNode& n = tracer.columns()[size_t(c)];
    if (n.kind == GraphNodeKind::Feature) acts[size_t(n.layer)](n.position, n.id) = 0;
    else if (n.kind == GraphNodeKind::Error) errs[size_t(n.layer)].row(n.position).setZero();
    else embed.row(n.position).setZero();
}

/// Checks the cell (L, h, q, k): the constants and every pair make the clean score; the largest marginals' sources,
/// an error node and the query's token, removed one at a time, move the rotated query and key by c_q and c_k and the
/// score (the other side held) by the marginal. Returns the worst relative sum error.
double checkCell(const ReplacementModel& rm, const QkTracer& tracer, int L, int h, int q, int k) {
    const ModelConfig& cfg = rm.model->config();
    const QkTrace t = tracer.trace(L, h, q, k, 8);
    const QkSides s = tracer.sides(L, h, q, k);
    const double size = std::max({1.0, std::abs(t.score), std::abs(t.pairsTotal), std::abs(t.constant), std::abs(t.qConstant), std::abs(t.kConstant)});
    const double sumError = t.checkError / size;
    [&] {
        QVERIFY2(sumError <= 1e-5, qPrintable(QStringLiteral("L%1.H%2 %3→%4: pairs %5 + constants %6 %7 %8 against the score %9")
                                                  .arg(L).arg(h).arg(q).arg(k).arg(t.pairsTotal).arg(t.qConstant).arg(t.kConstant)
                                                  .arg(t.constant).arg(t.score)));
        // the score is the clean run's (through a soft-cap)
        const double cap = cfg.attn_logit_softcap, cached = rm.clean.layer(L)->attn_scores[size_t(h)](q, k);
        QVERIFY2(std::abs((cap > 0 ? cap * std::tanh(t.score / cap) : t.score) - cached) <= 1e-4 * std::max(1.0, std::abs(cached)),
                 qPrintable(QStringLiteral("%1 against %2").arg(t.score).arg(cached)));
        // the listed marginals are the largest and each is c·(the other side)
        QVERIFY(!t.qMarginals.empty() && !t.kMarginals.empty() && !t.pairs.empty());
        const Eigen::VectorXd qm = s.scale * (s.cq.cast<double>().transpose() * s.k), km = s.scale * (s.ck.cast<double>().transpose() * s.q);
        QVERIFY(std::abs(t.qMarginals[0].attribution - qm.cwiseAbs().maxCoeff() * (t.qMarginals[0].attribution < 0 ? -1 : 1)) <= 1e-9 * size);
        QVERIFY(std::abs(t.kMarginals[0].attribution - km.cwiseAbs().maxCoeff() * (t.kMarginals[0].attribution < 0 ? -1 : 1)) <= 1e-9 * size);
        QVERIFY(std::abs(qm.sum() + s.scale * s.q0.dot(s.k) - t.score) <= 1e-5 * size); // marginals + the q constant = the score
        // rotated q and k by hand from the clean residual are the cached ones (the test's own formula)
        const Matrix full = replacementResidPre(rm, rm.activations, rm.errors, rm.clean.embed, L);
        const Eigen::VectorXd qFull = rotated(rm, L, true, h, q, full.row(q)), kFull = rotated(rm, L, false, h, k, full.row(k));
        QVERIFY2((qFull - s.q).cwiseAbs().maxCoeff() <= 1e-4 * std::max(1.0, s.q.cwiseAbs().maxCoeff()),
                 qPrintable(QString::number((qFull - s.q).cwiseAbs().maxCoeff())));
        QVERIFY((kFull - s.k).cwiseAbs().maxCoeff() <= 1e-4 * std::max(1.0, s.k.cwiseAbs().maxCoeff()));
        // knock-outs
        std::vector<int> knocked;
        for (size_t i = 0; i < std::min<size_t>(4, t.qMarginals.size()); ++i) knocked.push_back(t.qMarginals[i].column);
        for (size_t i = 0; i < std::min<size_t>(4, t.kMarginals.size()); ++i) knocked.push_back(t.kMarginals[i].column);
        knocked.push_back(tracer.errorOffset() + (L - 1 >= 0 ? L - 1 : 0) * rm.nPositions() + k);
        knocked.push_back(tracer.tokenOffset() + q);
        const double cScale = std::max({1.0, s.q.cwiseAbs().maxCoeff(), s.k.cwiseAbs().maxCoeff()});
        for (int c : knocked) {
            std::vector<Matrix> acts = rm.activations, errs = rm.errors;
            Matrix embed = rm.clean.embed;
            knockOut(tracer, c, acts, errs, embed);
            const Matrix r = replacementResidPre(rm, acts, errs, embed, L);
            const Eigen::VectorXd dq = qFull - rotated(rm, L, true, h, q, r.row(q)), dk = kFull - rotated(rm, L, false, h, k, r.row(k));
            const Eigen::VectorXd cq = s.cq.col(c).cast<double>(), ck = s.ck.col(c).cast<double>();
            QVERIFY2((dq - cq).cwiseAbs().maxCoeff() <= 2e-4 * cScale,
                     qPrintable(QStringLiteral("column %1: knock-out moves q by %2, c_q %3").arg(c).arg(dq.norm()).arg(cq.norm())));
            QVERIFY2((dk - ck).cwiseAbs().maxCoeff() <= 2e-4 * cScale, qPrintable(QStringLiteral("column %1: k").arg(c)));
            QVERIFY(std::abs(s.scale * dq.dot(s.k) - qm(c)) <= 2e-4 * size); // the q marginal: the score's move with k held
        }
        QVERIFY(s.cq.col(knocked.front()).norm() > 0); // the check saw a real contribution
        // ablation: nothing removed is the clean cell; removing the largest q-side source moves the score to
        // scale·(q − c_q)·(k − c_k) (it can feed both sides) and the pattern with it
        const QkTracer::Ablation none = tracer.ablate(L, h, q, k, {});
        QVERIFY(std::abs(none.scoreBefore - t.score) <= 1e-5 * size && none.scoreAfter == none.scoreBefore);
        QVERIFY(std::abs(none.patternBefore - double(t.pattern)) <= 1e-5 && none.patternAfter == none.patternBefore);
        const int top = t.qMarginals[0].column;
        const QkTracer::Ablation a = tracer.ablate(L, h, q, k, {top});
        const double want = s.scale * (s.q - s.cq.col(top).cast<double>()).dot(s.k - s.ck.col(top).cast<double>());
        QVERIFY2(std::abs(a.scoreAfter - want) <= 2e-4 * size, qPrintable(QStringLiteral("ablated score %1, want %2").arg(a.scoreAfter).arg(want)));
        QVERIFY(a.patternAfter >= 0 && a.patternAfter <= 1);
        if (q != k && std::abs(a.scoreAfter - a.scoreBefore) > 1e-3) QVERIFY(a.patternAfter != a.patternBefore);
    }();
    return sumError;
}

} // namespace

class TestQkTrace : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void demoCellsSumToTheScore();
    void matchesTheFloat64Reference();
    void crossLayerTranscoder();
    void llamaRopeGroupedQueryWindow();
    void qwen3QkNorms();
    void gemma2SoftcapAndSkip();
    void gemma3PerLayerRope();
    void topPairsAreTheLargest();
    void mapsColumnsToGraphNodes();
    void refusesCellsItCannotTrace();

private:
    std::shared_ptr<const Model> demo_;
    std::vector<int> tokens_;
    DictionarySet set_;
    ReplacementModel rm_;
    std::unique_ptr<QkTracer> tracer_;
};

void TestQkTrace::initTestCase() {
    demo_ = loadModel(demoDir());
    tokens_ = tokenizePrompt(demo_->tokenizer(), QStringLiteral("In the beginning God created the"), true);
    QCOMPARE(int(tokens_.size()), 7);
#ifdef ATTNSCOPE_HAVE_YAML_CPP
    set_ = openDictionaries(sourceFile(QStringLiteral("resources/demo-features/transcoders")));
    rm_ = buildReplacementModel(*demo_, set_, tokens_);
    tracer_ = std::make_unique<QkTracer>(rm_);
#endif
}

void TestQkTrace::demoCellsSumToTheScore() {
    if (!tracer_) QSKIP("the demo's transcoder set is a circuit-tracer config.yaml: this build has no yaml-cpp (the arm64 sysroot)");
    const ReplacementModel& rm = rm_;
    const QkTracer& tracer = *tracer_;
    const ModelConfig& cfg = demo_->config();
    double worst = 0;
    for (int L = 0; L < cfg.n_layers; ++L)
        for (int h = 0; h < cfg.n_heads; ++h)
            for (const auto& [q, k] : {std::pair{6, 6}, {6, 2}, {5, 0}, {3, 1}}) {
                worst = std::max(worst, checkCell(rm, tracer, L, h, q, k));
                if (QTest::currentTestFailed()) return;
            }
    qInfo("demo: worst |Σ − score| / size %.3g", worst);
}

void TestQkTrace::matchesTheFloat64Reference() {
    // tools/graph_reference.py --qk-only (tests/data/graphs/demo_qk_reference.json): each source removed from the frozen
    // model in its own float64 forward gives c_q(s) and c_k(s), no backward involved
    if (!tracer_) QSKIP("the demo's transcoder set is a circuit-tracer config.yaml: this build has no yaml-cpp (the arm64 sysroot)");
    const QJsonObject ref = readJsonObject(sourceFile(QStringLiteral("tests/data/graphs/demo_qk_reference.json")));
    QCOMPARE(int(tracer_->columns().size()), ref["n_columns"].toInt());
    QCOMPARE(tracer_->errorOffset(), ref["n_features"].toInt());
    int cells = 0;
    for (const QJsonValue& v : ref["cells"].toArray()) {
        const QJsonObject c = v.toObject();
        const int L = c["layer"].toInt(), h = c["head"].toInt(), q = c["query"].toInt(), k = c["key"].toInt();
        const QkSides s = tracer_->sides(L, h, q, k);
        const QkTrace t = tracer_->trace(L, h, q, k, 10);
        const double size = std::max(1.0, std::abs(c["score"].toDouble()));
        auto near = [&](double got, double want, double tol) { return std::abs(got - want) <= tol; };
        QVERIFY2(near(t.score, c["score"].toDouble(), 1e-5 * size), qPrintable(QStringLiteral("cell %1: score %2 against %3").arg(cells).arg(t.score).arg(c["score"].toDouble())));
        QVERIFY(near(t.constant, c["constant"].toDouble(), 1e-5 * size));
        QVERIFY(near(t.qConstant, c["q_constant"].toDouble(), 1e-5 * size));
        QVERIFY(near(t.kConstant, c["k_constant"].toDouble(), 1e-5 * size));
        QVERIFY(near(t.pairsTotal, c["pairs_total"].toDouble(), 1e-5 * size));
        QVERIFY(near(t.pattern, c["pattern"].toDouble(), 1e-6));
        // every column's marginals
        const QJsonArray qm = c["q_marginals"].toArray(), km = c["k_marginals"].toArray();
        double qmScale = 0;
        for (const QJsonValue& x : qm) qmScale = std::max(qmScale, std::abs(x.toDouble()));
        for (const QJsonValue& x : km) qmScale = std::max(qmScale, std::abs(x.toDouble()));
        const Eigen::VectorXd myQ = s.scale * (s.cq.cast<double>().transpose() * s.k), myK = s.scale * (s.ck.cast<double>().transpose() * s.q);
        double worst = 0;
        for (int i = 0; i < qm.size(); ++i)
            worst = std::max({worst, std::abs(myQ(i) - qm[i].toDouble()), std::abs(myK(i) - km[i].toDouble())});
        QVERIFY2(worst <= 1e-5 * std::max(1.0, qmScale), qPrintable(QStringLiteral("cell %1: marginals off by %2").arg(cells).arg(worst)));
        // the largest c vectors, component by component
        for (const char* side : {"c_q", "c_k"})
            for (const QJsonValue& e : c[QLatin1String(side)].toArray()) {
                const int col = e["column"].toInt();
                const QJsonArray want = e["c"].toArray();
                const Matrix& mine = side[2] == 'q' ? s.cq : s.ck;
                for (int i = 0; i < want.size(); ++i)
                    QVERIFY2(near(mine(i, col), want[i].toDouble(), 1e-5 * std::max(1.0, std::abs(want[i].toDouble()))),
                             qPrintable(QStringLiteral("cell %1 %2 column %3 [%4]: %5 against %6").arg(cells).arg(side).arg(col).arg(i)
                                            .arg(mine(i, col)).arg(want[i].toDouble())));
            }
        // the top pairs, by column and value
        QJsonArray pairs; // the nonzero ones: a layer-0 cell has one source a side (its tokens), so one pair
        for (const QJsonValue& p : c["top_pairs"].toArray())
            if (std::abs(p[2].toDouble()) > 1e-12 * size) pairs.append(p); // the reference's zero pairs are rounding (1e-17)
        QCOMPARE(int(t.pairs.size()), pairs.size());
        for (int i = 0; i < pairs.size(); ++i) {
            QVERIFY(near(t.pairs[size_t(i)].attribution, pairs[i][2].toDouble(), 1e-5 * size));
            if (i + 1 < pairs.size() && std::abs(std::abs(pairs[i][2].toDouble()) - std::abs(pairs[i + 1][2].toDouble())) > 1e-4 * size) {
                QCOMPARE(t.pairs[size_t(i)].q, pairs[i][0].toInt());
                QCOMPARE(t.pairs[size_t(i)].k, pairs[i][1].toInt());
            }
        }
        ++cells;
    }
    QCOMPARE(cells, 4);
}

void TestQkTrace::crossLayerTranscoder() {
#ifndef ATTNSCOPE_HAVE_YAML_CPP
    QSKIP("the demo's cross-layer transcoder is a circuit-tracer config.yaml: this build has no yaml-cpp");
#endif
    const DictionarySet clt = openDictionaries(sourceFile(QStringLiteral("resources/demo-features/clt")));
    const ReplacementModel rm = buildReplacementModel(*demo_, clt, tokens_);
    QVERIFY(rm.crossLayer());
    const QkTracer tracer(rm);
    for (int h = 0; h < demo_->config().n_heads; ++h) {
        checkCell(rm, tracer, 1, h, 6, 3);
        if (QTest::currentTestFailed()) return;
    }
}

namespace {

std::shared_ptr<const Model> testModel(const char* name) {
    return loadModel(sourceFile(QStringLiteral("tests/data/gradients/") + QLatin1String(name)));
}

/// A test model with random transcoders (seed; a skip transcoder at `skipLayer`): every head of the given layers traced
/// at `cells` (query, key; a key of −1: the first inside the layer's window), each checked by checkCell.
void checkRandomSet(const std::shared_ptr<const Model>& m, unsigned seed, int skipLayer, const std::vector<int>& layers,
                    const std::vector<std::pair<int, int>>& cells, const std::function<void(const ModelConfig&)>& expect) {
    const ModelConfig& cfg = m->config();
    expect(cfg);
    if (QTest::currentTestFailed()) return;
    const DictionarySet set = randomTranscoders(cfg, 48, seed, skipLayer);
    const std::vector<int> tokens{cfg.bos_token_id, 17, 5, 42, 9, 33, 17, 8};
    const ReplacementModel rm = buildReplacementModel(*m, set, tokens);
    const QkTracer tracer(rm);
    for (int L : layers)
        for (int h = 0; h < cfg.n_heads; ++h)
            for (auto [q, k] : cells) {
                if (k < 0) k = cfg.windowOf(L) > 0 ? q - cfg.windowOf(L) + 1 : 0;
                checkCell(rm, tracer, L, h, q, k);
                if (QTest::currentTestFailed()) return;
            }
}

} // namespace

void TestQkTrace::llamaRopeGroupedQueryWindow() {
    checkRandomSet(testModel("llama-gqa-swa"), 11, -1, {0, 1}, {{7, -1}, {7, 7}, {6, 4}}, [](const ModelConfig& cfg) {
        QVERIFY(cfg.positions == PositionKind::Rotary);
        QVERIFY(cfg.groupSize() > 1);
        QVERIFY(cfg.windowOf(1) > 0 && cfg.windowOf(1) < 8); // the window reaches into the prompt
    });
}

void TestQkTrace::qwen3QkNorms() {
    checkRandomSet(testModel("qwen3-qknorm"), 12, -1, {0, 1}, {{6, 1}, {7, 7}}, [](const ModelConfig& cfg) { QVERIFY(cfg.qkNorm); });
}

void TestQkTrace::gemma2SoftcapAndSkip() {
    checkRandomSet(testModel("gemma2-softcap"), 7, 1, {0, 1}, {{6, 4}, {7, -1}}, [](const ModelConfig& cfg) {
        QVERIFY(cfg.postNorms);
        QVERIFY(cfg.attn_logit_softcap > 0);
    });
}

void TestQkTrace::gemma3PerLayerRope() {
    // Gemma 3: (1 + w) q/k norms with their divisors frozen, sliding layers rotated with base 1e4, the global one with
    // 1e6 scaled by 8: a cell on each kind
    QTemporaryDir dir;
    writeHfLlamaFolder(randomLlama(smallGemma3Spec(), 23), dir.path(), Storage::F32, madeTokenizer512(), "tokenizer.bin");
    checkRandomSet(loadModel(dir.path()), 13, -1, {4, 5}, {{7, -1}, {6, 4}, {6, 6}}, [](const ModelConfig& cfg) {
        QVERIFY(cfg.qkNorm && cfg.postNorms);
        QVERIFY(cfg.windowOf(4) == 3 && cfg.windowOf(5) == 0);
        QVERIFY(cfg.rotaryBaseOf(4) != cfg.rotaryBaseOf(5));
    });
}

void TestQkTrace::topPairsAreTheLargest() {
    // against every pair formed and sorted, on random vectors with heavy and flat norm spreads and exact ties
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    for (int trial = 0; trial < 3; ++trial) {
        Matrix cq(8, 300), ck(8, 250);
        for (Eigen::Index j = 0; j < cq.cols(); ++j)
            for (int i = 0; i < 8; ++i) cq(i, j) = normal(rng) * (trial == 0 ? std::exp(normal(rng)) : 1.0f);
        for (Eigen::Index j = 0; j < ck.cols(); ++j)
            for (int i = 0; i < 8; ++i) ck(i, j) = normal(rng) * (trial == 0 ? std::exp(normal(rng)) : 1.0f);
        if (trial == 2) { // ties: repeated columns, and zero columns that must never be listed
            cq.col(1) = cq.col(0);
            ck.col(7) = ck.col(3);
            cq.col(5).setZero();
        }
        std::vector<QkPair> all;
        for (Eigen::Index a = 0; a < cq.cols(); ++a)
            for (Eigen::Index b = 0; b < ck.cols(); ++b)
                if (cq.col(a).norm() > 0 && ck.col(b).norm() > 0)
                    all.push_back({int(a), int(b), 0.5 * cq.col(a).cast<double>().dot(ck.col(b).cast<double>())});
        std::stable_sort(all.begin(), all.end(), [](const QkPair& x, const QkPair& y) { return std::abs(x.attribution) > std::abs(y.attribution); });
        const std::vector<QkPair> top = topQkPairs(cq, ck, 0.5, 40);
        QCOMPARE(int(top.size()), 40);
        for (int i = 0; i < 40; ++i) {
            QCOMPARE(top[size_t(i)].attribution, all[size_t(i)].attribution);
            QCOMPARE(top[size_t(i)].q, all[size_t(i)].q);
            QCOMPARE(top[size_t(i)].k, all[size_t(i)].k);
        }
    }
    QVERIFY(topQkPairs(Matrix::Zero(4, 3), Matrix::Ones(4, 3), 1.0, 5).empty());
}

void TestQkTrace::mapsColumnsToGraphNodes() {
    if (!tracer_) QSKIP("the demo's transcoder set is a circuit-tracer config.yaml: this build has no yaml-cpp (the arm64 sysroot)");
    const ReplacementModel& rm = rm_;
    const QkTracer& tracer = *tracer_;
    AttributionOptions o;
    o.maxFeatureNodes = 40; // a bound: most features are no node
    const AttributionGraph g = attributeGraph(rm, o);
    QVERIFY(g.nFeatures() == 40 && g.nActiveFeatures > 40);
    QCOMPARE(tracer.errorOffset(), g.nActiveFeatures);
    int found = 0, missing = 0;
    for (int c = 0; c < int(tracer.columns().size()); ++c) {
        const int n = tracer.graphNode(g, c);
        const GraphNode& col = tracer.columns()[size_t(c)];
        if (n < 0) {
            QCOMPARE(col.kind, GraphNodeKind::Feature);
            ++missing;
            continue;
        }
        const GraphNode& node = g.nodes[size_t(n)];
        QCOMPARE(node.kind, col.kind);
        QCOMPARE(node.layer, col.layer);
        QCOMPARE(node.position, col.position);
        QCOMPARE(node.id, col.id);
        ++found;
    }
    QCOMPARE(missing, g.nActiveFeatures - 40);
    QCOMPARE(found, int(tracer.columns().size()) - missing);
    QCOMPARE(tracer.graphNode(g, -1), -1);
}

void TestQkTrace::refusesCellsItCannotTrace() {
    if (!tracer_) QSKIP("the demo's transcoder set is a circuit-tracer config.yaml: this build has no yaml-cpp (the arm64 sysroot)");
    const QkTracer& tracer = *tracer_;
    QVERIFY(inputErrorOf([&] { tracer.trace(1, 0, 2, 5); }).contains(QStringLiteral("Key position 5 comes after query position 2")));
    QVERIFY(inputErrorOf([&] { tracer.trace(1, 0, 7, 5); }).contains(QStringLiteral("Position 7 is outside")));
    QVERIFY(inputErrorOf([&] { tracer.trace(2, 0, 6, 5); }).contains(QStringLiteral("Layer 2")));
    QVERIFY(inputErrorOf([&] { tracer.trace(1, 99, 6, 5); }).contains(QStringLiteral("Head 99")));
    QVERIFY(inputErrorOf([&] { tracer.ablate(1, 0, 6, 5, {-1}); }).contains(QStringLiteral("QK trace column -1")));
    QVERIFY(inputErrorOf([&] { tracer.ablate(1, 0, 5, 6, {}); }).contains(QStringLiteral("Key position 6 comes after")));
}

QTEST_GUILESS_MAIN(TestQkTrace)
#include "tst_qk_trace.moc"
