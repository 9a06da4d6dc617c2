// Information-flow routes (model/analysis/circuits/information_flow.h): the three worked examples of the LLM
// Transparency Tool's tests (routes/test_contributions.py) exactly; every contribution of a real forward pass
// against proximities of explicitly built parts z_{i,j,h} = A_h[i,j]·v_{j,h}·W_O^h (tiny-gpt2, L1 and L2);
// pruning against a brute-force backward search; renormalisation; the per-neuron MLP split.

#include "model/analysis/circuits/information_flow.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/test_paths.h"

#include <QtTest>
#include <random>
#include <set>

using namespace attnscope;
using namespace attnscope::test;

namespace {

Vector vec(std::initializer_list<float> v) {
    Vector x(Eigen::Index(v.size()));
    Eigen::Index i = 0;
    for (float f : v) x(i++) = f;
    return x;
}

ActivationCache runOn(const Model& model, int S, unsigned seed) {
    std::mt19937 gen(seed);
    std::vector<int> t(static_cast<size_t>(S));
    for (int& x : t) x = int(gen() % unsigned(model.config().d_vocab));
    return runForward(model, t);
}

} // namespace

class TestInformationFlow : public QObject {
    Q_OBJECT
private slots:
    void theToolsWorkedExamples() {
        // attention parts [1,1] and [−1,0], residual [2,1], whole [2,2], L2
        const std::vector<double> a = proximityContributions({vec({1, 1}), vec({-1, 0})}, vec({2, 1}), vec({2, 2}), FlowNorm::L2);
        QVERIFY(std::abs(a[0] - 0.43613) < 5e-6);
        QCOMPARE(a[1], 0.0);
        QVERIFY(std::abs(a[2] - 0.56387) < 5e-6);
        // MLP neuron parts [1,1], [2,2], pre [1,1] (the residual), post [4,4], L2
        const std::vector<double> m = proximityContributions({vec({1, 1}), vec({2, 2})}, vec({1, 1}), vec({4, 4}), FlowNorm::L2);
        QVERIFY(std::abs(m[0] - 0.25) < 1e-12 && std::abs(m[1] - 0.5) < 1e-12 && std::abs(m[2] - 0.25) < 1e-12);
        // threshold 0.1 on blocks [[.05, .15], [.05, .05]] with residuals [.8, .9]
        std::vector<double> b0{0.05, 0.15}, b1{0.05, 0.05};
        double r0 = 0.8, r1 = 0.9;
        thresholdAndRenormalise(0.1, b0, r0);
        thresholdAndRenormalise(0.1, b1, r1);
        QCOMPARE(b0[0], 0.0);
        QVERIFY(std::abs(b0[1] - 0.157894) < 1e-6);
        QCOMPARE(b1[0], 0.0);
        QCOMPARE(b1[1], 0.0);
        QVERIFY(std::abs(r0 - 0.842105) < 1e-6);
        QCOMPARE(r1, 1.0);
    }

    void contributionsOfARealPass() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto model = loadModel(testdata("tiny-gpt2"));
        const ModelConfig& cfg = model->config();
        const ActivationCache cache = runOn(*model, 9, 1);
        for (FlowNorm norm : {FlowNorm::L1, FlowNorm::L2}) {
            const FlowContributions fc = flowContributions(*model, cache, norm);
            for (int l = 0; l < cfg.n_layers; ++l) {
                const LayerCache& lc = *cache.layer(l);
                const Matrix W_O = model->layer(l).W_O.toMatrix();
                for (int i = 0; i < 9; ++i) {
                    std::vector<Vector> parts;
                    Vector sum = lc.resid_pre.row(i).transpose() + model->layer(l).b_O.toMatrix().row(0).transpose();
                    for (int j = 0; j <= i; ++j)
                        for (int h = 0; h < cfg.n_heads; ++h) {
                            const RowVector v = lc.v.row(j).segment(h * cfg.d_head, cfg.d_head);
                            parts.push_back((lc.pattern[size_t(h)](i, j) * v * W_O.middleRows(h * cfg.d_head, cfg.d_head)).transpose());
                            sum += parts.back();
                        }
                    QVERIFY((sum - lc.resid_mid.row(i).transpose()).cwiseAbs().maxCoeff() < 1e-4f); // the parts make up y
                    const std::vector<double> want = proximityContributions(parts, lc.resid_pre.row(i).transpose(),
                                                                            lc.resid_mid.row(i).transpose(), norm);
                    double total = fc.attentionResidual(l, i);
                    QVERIFY(std::abs(total - want.back()) < 1e-4);
                    for (int j = 0; j <= i; ++j)
                        for (int h = 0; h < cfg.n_heads; ++h) {
                            const double c = fc.attentionPart(l, i, j, h);
                            QVERIFY2(std::abs(c - want[size_t(j * cfg.n_heads + h)]) < 1e-4,
                                     qPrintable(QStringLiteral("L%1 %2←%3 H%4").arg(l).arg(i).arg(j).arg(h)));
                            total += c;
                        }
                    QVERIFY(std::abs(total - 1.0) < 1e-5);
                    const std::vector<double> mlp = proximityContributions({lc.mlp_out.row(i).transpose()}, lc.resid_mid.row(i).transpose(),
                                                                           lc.resid_post.row(i).transpose(), norm);
                    QVERIFY(std::abs(fc.mlp(l, i) - mlp[0]) < 1e-4 && std::abs(fc.mlpResidual(l, i) - mlp[1]) < 1e-4);
                }
            }
        }
    }

    void pruningKeepsExactlyTheRoutesAboveTheThreshold() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto model = loadModel(testdata("tiny-gpt2"));
        const int S = 10, nL = model->config().n_layers;
        const FlowContributions fc = flowContributions(*model, runOn(*model, S, 2));
        const FlowGraph full = flowGraph(fc, {0.0, true, -1});
        QCOMPARE(int(full.edges.size()), nL * (S * (S + 1) / 2 + S) + 2 * nL * S); // every edge, unpruned
        for (bool renormalise : {false, true})
            for (double tau : {0.01, 0.05, 0.2}) {
                const FlowGraph g = flowGraph(fc, {tau, renormalise, 6});
                // brute force: the graph of all edges (renormalised per representation when asked), searched backwards
                std::set<std::pair<int, int>> reached{{2 * nL, 6}};
                std::set<std::tuple<int, int, int, int, int>> want;
                std::vector<FlowEdge> all = full.edges;
                if (renormalise) { // recompute the renormalised weights of every edge independently
                    for (FlowEdge& e : all) {
                        std::vector<double> blocks;
                        double resid = 0;
                        for (const FlowEdge& f : full.edges)
                            if (f.toBoundary == e.toBoundary && f.toPosition == e.toPosition) {
                                if (f.kind == FlowEdge::Kind::Residual) resid = f.weight;
                                else if (f.kind == FlowEdge::Kind::Mlp) blocks.push_back(f.weight);
                                else blocks.insert(blocks.end(), f.heads.begin(), f.heads.end());
                            }
                        double mine = 0;
                        thresholdAndRenormalise(tau, blocks, resid);
                        if (e.kind == FlowEdge::Kind::Residual) mine = resid;
                        else if (e.kind == FlowEdge::Kind::Mlp) mine = blocks[0];
                        else
                            for (int h = 0; h < fc.nHeads; ++h) mine += blocks[size_t(e.fromPosition * fc.nHeads + h)];
                        e.weight = mine;
                    }
                }
                for (int b = 2 * nL; b > 0; --b) // boundaries top-down: every edge into a reached node above τ
                    for (const FlowEdge& e : all)
                        if (e.toBoundary == b && reached.count({b, e.toPosition}) && e.weight > tau) {
                            want.insert({int(e.kind), e.fromBoundary, e.fromPosition, e.toBoundary, e.toPosition});
                            reached.insert({e.fromBoundary, e.fromPosition});
                        }
                std::set<std::tuple<int, int, int, int, int>> got;
                for (const FlowEdge& e : g.edges) {
                    QVERIFY(e.weight > tau);
                    got.insert({int(e.kind), e.fromBoundary, e.fromPosition, e.toBoundary, e.toPosition});
                }
                QVERIFY2(got == want, qPrintable(QStringLiteral("τ %1 renormalise %2: %3 edges, want %4").arg(tau).arg(renormalise)
                                                     .arg(got.size()).arg(want.size())));
                QVERIFY(!got.empty());
            }
        bool threw = false;
        try {
            flowGraph(fc, {0.1, true, S});
        } catch (const InputError&) {
            threw = true;
        }
        QVERIFY(threw);
    }

    void neuronSplitOfAnMlpEdge() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto model = loadModel(testdata("tiny-gpt2"));
        const ActivationCache cache = runOn(*model, 6, 3);
        const int M = model->config().d_mlp;
        double resid = 0;
        const std::vector<NeuronContribution> all = mlpNeuronContributions(*model, cache, 1, 4, FlowNorm::L1, M, &resid);
        QCOMPARE(int(all.size()), M);
        double sum = resid;
        for (size_t k = 0; k < all.size(); ++k) {
            sum += all[k].weight;
            if (k > 0) QVERIFY(all[k - 1].weight >= all[k].weight);
        }
        QVERIFY(std::abs(sum - 1.0) < 1e-9);
        // against the definition for the best neuron
        const LayerCache& lc = *cache.layer(1);
        std::vector<Vector> parts;
        for (int n = 0; n < M; ++n) parts.push_back((lc.mlp_post(4, n) * model->layer(1).W_out.rowVector(n)).transpose());
        const std::vector<double> want = proximityContributions(parts, lc.resid_mid.row(4).transpose(), lc.resid_post.row(4).transpose(), FlowNorm::L1);
        QVERIFY(std::abs(all[0].weight - want[size_t(all[0].neuron)]) < 1e-9);
        QCOMPARE(int(mlpNeuronContributions(*model, cache, 1, 4, FlowNorm::L1, 5).size()), 5);
    }
};

QTEST_GUILESS_MAIN(TestInformationFlow)
#include "tst_information_flow.moc"
