// The residuals-only cache layout (big models, long prompts): per layer only the residual streams,
// attn_out, mlp_out and z are kept and ActivationCache::layer(l) recomputes the rest with runBlock.
// Checked against the full cache of the same prompt, bitwise: every field of every recomputed layer
// (tiny-gpt2 and the demo model, with and without an ablation), the analyses (decomposition, DLA, logit
// lens, attention steps, head detectors), the automatic switch under ATTNSCOPE_MEMORY_BUDGET, the LRU
// bound, cancellation, and several threads asking for layers at once.

#include "model/analysis/attention/attention_steps.h"
#include "model/analysis/residual/direct_logit_attribution.h"
#include "model/analysis/attention/head_detectors.h"
#include "model/analysis/embedding_space/logit_lens.h"
#include "model/analysis/residual/residual_decomposition.h"
#include "model/core/errors.h"
#include "model/formats/model_loader.h"
#include "model/transformer/cache_budget.h"
#include "model/transformer/forward.h"
#include "model/transformer/layer_recompute.h"
#include "model/transformer/prompt.h"
#include "support/bitwise_equal.h"
#include "support/test_paths.h"

#include <QtConcurrent>
#include <QtTest>
#include <atomic>
#include <cstring>

using namespace attnscope;
using namespace attnscope::test;

namespace {


/// Name of the first field of two layers that differs, or "" when all are bitwise equal.
QString firstDifference(const LayerCache& a, const LayerCache& b) {
    const std::pair<const char*, bool> fields[] = {
        {"resid_pre", same(a.resid_pre, b.resid_pre)}, {"ln1", same(a.ln1, b.ln1)}, {"q", same(a.q, b.q)},
        {"k", same(a.k, b.k)}, {"v", same(a.v, b.v)}, {"attn_scores", same(a.attn_scores, b.attn_scores)},
        {"pattern", same(a.pattern, b.pattern)}, {"z", same(a.z, b.z)}, {"result", same(a.result, b.result)},
        {"attn_out", same(a.attn_out, b.attn_out)}, {"resid_mid", same(a.resid_mid, b.resid_mid)},
        {"ln2", same(a.ln2, b.ln2)}, {"mlp_pre", same(a.mlp_pre, b.mlp_pre)}, {"mlp_post", same(a.mlp_post, b.mlp_post)},
        {"mlp_out", same(a.mlp_out, b.mlp_out)}, {"resid_post", same(a.resid_post, b.resid_post)}};
    for (const auto& [name, equal] : fields)
        if (!equal) return QString::fromLatin1(name);
    return {};
}

/// Sets an environment variable for the scope of one test.
struct ScopedEnv {
    QByteArray name;
    ScopedEnv(const char* n, const QByteArray& value) : name(n) { qputenv(n, value); }
    ~ScopedEnv() { qunsetenv(name.constData()); }
};

std::vector<int> promptIds(const Model& model) {
    return tokenizePrompt(model.tokenizer(),
                          QStringLiteral("Once upon a time there was a cat. The cat sat on the mat, and the cat purred."),
                          true);
}

} // namespace

class TestResidualsOnly : public QObject {
    Q_OBJECT
private:
    std::shared_ptr<const Model> tiny_ = testdataAvailable() ? loadModel(testdata(QStringLiteral("tiny-gpt2"))) : nullptr;
    std::shared_ptr<const Model> demo_ = loadModel(demoDir());

    std::shared_ptr<const Model> modelNamed(const QString& name) { return name == "demo" ? demo_ : tiny_; }

private slots:
    void recomputedLayersAreBitwiseEqual_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("ablate");
        QTest::addColumn<bool>("headResults");
        QTest::newRow("tiny-gpt2") << "tiny" << false << true;
        QTest::newRow("tiny-gpt2, L0H1 mean-ablated") << "tiny" << true << true;
        QTest::newRow("tiny-gpt2, no head results") << "tiny" << false << false;
        QTest::newRow("demo") << "demo" << false << true;
        QTest::newRow("demo, L0H1 mean-ablated") << "demo" << true << true;
    }

    void recomputedLayersAreBitwiseEqual() {
        QFETCH(QString, model);
        if (model == "tiny") ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(bool, ablate);
        QFETCH(bool, headResults);
        const auto m = modelNamed(model);
        const std::vector<int> ids = promptIds(*m);
        ForwardOptions opt;
        opt.cacheHeadResults = headResults;
        if (ablate) opt.ablations.push_back({0, 1, HeadAblation::Kind::Mean});
        const ActivationCache full = runForward(*m, ids, opt);
        opt.residualsOnly = true;
        const ActivationCache lean = runForward(*m, ids, opt);
        QVERIFY(!full.residualsOnly());
        QVERIFY(lean.residualsOnly());
        QCOMPARE(lean.nLayers(), m->config().n_layers);
        QCOMPARE(lean.nHeads(), m->config().n_heads);
        QVERIFY(same(lean.logits, full.logits));
        QVERIFY(same(lean.ln_final, full.ln_final));
        for (int l = 0; l < lean.nLayers(); ++l) {
            // only the residual-sized fields are stored, and they equal the full pass
            const LayerCache& s = lean.stored(l);
            QVERIFY(s.pattern.empty() && s.attn_scores.empty() && s.result.empty() && s.q.size() == 0 &&
                    s.mlp_pre.size() == 0);
            QVERIFY(same(s.resid_pre, full.layers[size_t(l)].resid_pre) && same(s.resid_mid, full.layers[size_t(l)].resid_mid) &&
                    same(s.resid_post, full.layers[size_t(l)].resid_post) && same(s.z, full.layers[size_t(l)].z) &&
                    same(s.attn_out, full.layers[size_t(l)].attn_out) && same(s.mlp_out, full.layers[size_t(l)].mlp_out));
            QVERIFY(!lean.isLayerReady(l)); // not computed before it is asked for
            const std::shared_ptr<const LayerCache> r = lean.layer(l);
            QVERIFY(lean.isLayerReady(l));
            QCOMPARE(int(r->pattern.size()), m->config().n_heads);
            QCOMPARE(int(r->result.size()), headResults ? m->config().n_heads : 0);
            const QString diff = firstDifference(*r, full.layers[size_t(l)]);
            QVERIFY2(diff.isEmpty(), qPrintable(QStringLiteral("layer %1: %2 differs").arg(l).arg(diff)));
            // the full cache's accessor is the stored layer itself
            QCOMPARE(full.layer(l).get(), &full.layers[size_t(l)]);
        }
        if (ablate) { // the ablation was recorded: the ablated head's z is its mean over positions
            const Matrix z = lean.layer(0)->z.middleCols(m->config().d_head, m->config().d_head);
            QVERIFY(z.row(0) == z.row(z.rows() - 1));
        }
    }

    void analysesGiveTheSameNumbers_data() {
        QTest::addColumn<QString>("model");
        QTest::newRow("tiny-gpt2") << "tiny";
        QTest::newRow("demo") << "demo";
    }

    void analysesGiveTheSameNumbers() {
        QFETCH(QString, model);
        if (model == "tiny") ATTNSCOPE_REQUIRE_TESTDATA();
        const auto m = modelNamed(model);
        const ModelConfig& cfg = m->config();
        const std::vector<int> ids = promptIds(*m);
        const ActivationCache full = runForward(*m, ids);
        ForwardOptions opt;
        opt.residualsOnly = true;
        const ActivationCache lean = runForward(*m, ids, opt);
        const int S = full.nPositions();

        // residual decomposition and DLA at every position (head results from z in the lean cache)
        for (int p = 0; p < S; ++p) {
            const ResidualBoundary b = ResidualBoundary::finalResidual(cfg);
            const ResidualDecomposition a = decomposeResidual(*m, full, b, p), c = decomposeResidual(*m, lean, b, p);
            QCOMPARE(a.components.size(), c.components.size());
            for (size_t i = 0; i < a.components.size(); ++i)
                QVERIFY2(same(Matrix(a.components[i].vec), Matrix(c.components[i].vec)),
                         qPrintable(a.components[i].name));
            QCOMPARE(a.maxAbsError, c.maxAbsError);
            const DirectLogitAttribution da = directLogitAttribution(*m, full, {p, 7, 11});
            const DirectLogitAttribution dc = directLogitAttribution(*m, lean, {p, 7, 11});
            QCOMPARE(da.components.size(), dc.components.size());
            for (size_t i = 0; i < da.components.size(); ++i) QCOMPARE(da.components[i].value, dc.components[i].value);
            QCOMPARE(da.total, dc.total);
            QCOMPARE(da.logit, dc.logit);
        }
        // logit lens: every boundary, every position, top 5
        const std::vector<LensCell> la = logitLens(*m, full, 5), lc = logitLens(*m, lean, 5);
        QCOMPARE(la.size(), lc.size());
        for (size_t i = 0; i < la.size(); ++i)
            for (size_t k = 0; k < la[i].top.size(); ++k) {
                QCOMPARE(la[i].top[k].id, lc[i].top[k].id);
                QCOMPARE(la[i].top[k].prob, lc[i].top[k].prob);
            }
        // attention steps of every head
        for (int l = 0; l < cfg.n_layers; ++l)
            for (int h = 0; h < cfg.n_heads; ++h) {
                const auto sa = attentionSteps(*m, full, l, h), sc = attentionSteps(*m, lean, l, h);
                QCOMPARE(sa.size(), sc.size());
                for (size_t i = 0; i < sa.size(); ++i)
                    QVERIFY2(same(sa[i].values, sc[i].values), qPrintable(QStringLiteral("L%1H%2 %3").arg(l).arg(h).arg(sa[i].name)));
            }
        // head detectors, one by one and in one pass
        const std::vector<HeadDetector> all{HeadDetector::PreviousToken, HeadDetector::DuplicateToken,
                                            HeadDetector::Induction, HeadDetector::FirstToken};
        const std::vector<HeadScores> together = scoreHeads(lean, all);
        for (size_t d = 0; d < all.size(); ++d) {
            const HeadScores a = scoreHeads(full, all[d]);
            QVERIFY(same(a.scores, scoreHeads(lean, all[d]).scores));
            QVERIFY(same(a.scores, together[d].scores));
            QCOMPARE(a.nQueries, together[d].nQueries);
        }
        QVERIFY(together[0].scores.maxCoeff() > 0); // real scores, not zeros
    }

    void budgetChoosesResidualsOnly() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const std::vector<int> ids = promptIds(*tiny_);
        const int S = int(ids.size());
        const ActivationCache full = runForward(*tiny_, ids);
        const CacheEstimate e = estimateCacheBytes(tiny_->config(), S, ForwardOptions{});
        QVERIFY(e.residualsOnlyTotal(1, true) < e.totalWithoutHeadResults());
        {
            // room for the residuals and exactly one recomputed layer with head results
            const ScopedEnv env("ATTNSCOPE_MEMORY_BUDGET", QByteArray::number(e.residualsOnlyTotal(1, true)));
            const ActivationCache lean = runForward(*tiny_, ids);
            QVERIFY(lean.residualsOnly());
            QCOMPARE(lean.recomputer->capacity(), 1);
            QVERIFY(lean.recomputer->options().cacheHeadResults);
            QVERIFY(firstDifference(*lean.layer(1), full.layers[1]).isEmpty());
        }
        {
            // two recomputed layers fit (forced: for 2-layer tiny-gpt2 that is more than the full cache)
            const ScopedEnv env("ATTNSCOPE_MEMORY_BUDGET", QByteArray::number(e.residualsOnlyTotal(2, true)));
            ForwardOptions forced;
            forced.residualsOnly = true;
            const ActivationCache lean = runForward(*tiny_, ids, forced);
            QVERIFY(lean.residualsOnly());
            QCOMPARE(lean.recomputer->capacity(), 2);
        }
        {
            // only a layer without per-head results fits
            const ScopedEnv env("ATTNSCOPE_MEMORY_BUDGET", QByteArray::number(e.residualsOnlyTotal(1, false)));
            const ActivationCache lean = runForward(*tiny_, ids);
            QVERIFY(lean.residualsOnly());
            QVERIFY(lean.layer(0)->result.empty());
            QVERIFY(same(lean.layer(0)->pattern, full.layers[0].pattern));
        }
        {
            const QByteArray budget = QByteArray::number(e.residualsOnlyTotal(1, false) - 1);
            const ScopedEnv env("ATTNSCOPE_MEMORY_BUDGET", budget);
            try {
                runForward(*tiny_, ids);
                QFAIL("no InputError");
            } catch (const InputError& err) {
                QCOMPARE(err.message(),
                         QStringLiteral("The activation cache for %1 tokens would need %2 of memory even keeping only the "
                                        "residual streams (the full cache: %3, attention patterns alone: %4), but the "
                                        "budget is %5 (set by ATTNSCOPE_MEMORY_BUDGET). Use a shorter prompt.")
                             .arg(S)
                             .arg(formatBytes(e.residualsOnlyTotal(1, false)), formatBytes(e.totalWithoutHeadResults()),
                                  formatBytes(e.patternBytes), formatBytes(budget.toLongLong())));
            }
        }
    }

    void estimateMatchesStoredBytes() {
        const std::vector<int> ids = promptIds(*demo_);
        ForwardOptions opt;
        opt.residualsOnly = true;
        const ActivationCache lean = runForward(*demo_, ids, opt);
        qint64 n = lean.embed.size() + lean.pos_embed.size() + lean.ln_final.size() + lean.ln_final_scale.size() +
                   lean.logits.size();
        for (const LayerCache& l : lean.layers)
            n += l.resid_pre.size() + l.resid_mid.size() + l.resid_post.size() + l.attn_out.size() + l.mlp_out.size() +
                 l.z.size();
        const CacheEstimate e = estimateCacheBytes(demo_->config(), int(ids.size()), opt);
        QCOMPARE(n * qint64(sizeof(float)), e.residualBytes);
        // one recomputed layer: what layerBytes + layerHeadResultBytes predicts
        const auto r = lean.layer(1);
        qint64 m = r->resid_pre.size() + r->ln1.size() + r->q.size() + r->k.size() + r->v.size() + r->z.size() +
                   r->attn_out.size() + r->resid_mid.size() + r->ln2.size() + r->mlp_pre.size() + r->mlp_post.size() +
                   r->mlp_out.size() + r->resid_post.size();
        for (const Matrix& x : r->attn_scores) m += x.size();
        for (const Matrix& x : r->pattern) m += x.size();
        QCOMPARE(m * qint64(sizeof(float)), e.layerBytes);
        m = 0;
        for (const Matrix& x : r->result) m += x.size();
        QCOMPARE(m * qint64(sizeof(float)), e.layerHeadResultBytes);
    }

    void lruStaysWithinItsBound() {
        const std::vector<int> ids = promptIds(*demo_);
        ForwardOptions opt;
        opt.residualsOnly = true;
        opt.recomputedLayers = 1;
        const ActivationCache lean = runForward(*demo_, ids, opt);
        LayerRecomputer& rc = *lean.recomputer;
        QCOMPARE(rc.capacity(), 1);
        QCOMPARE(rc.cachedLayers(), 0);
        QVERIFY(!lean.isLayerReady(0) && !lean.isLayerReady(1));
        (void)lean.layer(0);
        QCOMPARE(rc.recomputations(), 1);
        QCOMPARE(rc.cachedLayers(), 1);
        (void)lean.layer(0); // in the LRU: not recomputed
        QCOMPARE(rc.recomputations(), 1);
        (void)lean.layer(1); // evicts layer 0
        QCOMPARE(rc.cachedLayers(), 1);
        QVERIFY(!lean.isLayerReady(0) && lean.isLayerReady(1));
        (void)lean.layer(0);
        QCOMPARE(rc.recomputations(), 3);
        QCOMPARE(rc.cachedLayers(), 1);
        // a layer someone still holds is shared, not recomputed, even after eviction
        const std::shared_ptr<const LayerCache> held = lean.layer(1);
        QCOMPARE(rc.recomputations(), 4);
        (void)lean.layer(0);
        QCOMPARE(rc.recomputations(), 5);
        QVERIFY(lean.isLayerReady(1));
        QCOMPARE(lean.layer(1).get(), held.get());
        QCOMPARE(rc.recomputations(), 5);
        QCOMPARE(rc.cachedLayers(), 1);
        // copies share the recomputed layers
        const ActivationCache copy = lean;
        QCOMPARE(copy.layer(1).get(), held.get());
        QVERIFY_THROWS_EXCEPTION(InputError, lean.layer(2));
        QVERIFY_THROWS_EXCEPTION(InputError, lean.layer(-1));
    }

    void cancelledRequestsDoNotCompute() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const std::vector<int> ids = promptIds(*tiny_);
        ForwardOptions opt;
        opt.residualsOnly = true;
        const ActivationCache lean = runForward(*tiny_, ids, opt);
        Progress cancelled;
        cancelled.isCancelled = [] { return true; };
        QVERIFY_THROWS_EXCEPTION(Cancelled, lean.layer(1, cancelled));
        QCOMPARE(lean.recomputer->recomputations(), 0);
        QVERIFY(!lean.isLayerReady(1));
        const auto l1 = lean.layer(1); // the next request computes it
        QCOMPARE(lean.recomputer->recomputations(), 1);
        QCOMPARE(lean.layer(1, cancelled).get(), l1.get()); // ready layers are returned even when cancelled
    }

    void concurrentAccessIsSafe() {
        const std::vector<int> ids = promptIds(*demo_);
        const ActivationCache full = runForward(*demo_, ids);
        ForwardOptions opt;
        opt.residualsOnly = true;
        opt.recomputedLayers = 1; // maximum churn
        auto lean = std::make_shared<const ActivationCache>(runForward(*demo_, ids, opt));
        std::atomic<int> mismatches{0};
        QList<int> workers;
        for (int t = 0; t < 8; ++t) workers << t;
        QtConcurrent::blockingMap(workers, [&](int t) {
            for (int i = 0; i < 12; ++i) {
                const int l = (t + i) % lean->nLayers();
                const auto lc = lean->layer(l);
                if (!firstDifference(*lc, full.layers[size_t(l)]).isEmpty()) ++mismatches;
                if (lean->recomputer->cachedLayers() > 1) ++mismatches;
            }
        });
        QCOMPARE(mismatches.load(), 0);
        QVERIFY(lean->recomputer->recomputations() >= 2);
        QVERIFY(lean->recomputer->recomputations() <= 8 * 12);
        QCOMPARE(lean->recomputer->cachedLayers(), 1);
    }
};

QTEST_GUILESS_MAIN(TestResidualsOnly)
#include "tst_residuals_only.moc"
