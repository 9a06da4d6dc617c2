// Every analysis on a random Gemma 3 (six layers: five sliding with window 3 and RoPE base 1e4, a global one with base
// 1e6 scaled by 8; (1 + w) q/k norms; the four sandwich norms; one K/V head), on a 12-token prompt so that the window
// binds, each against a reference that does not go through the library's forward:
//  - DLA: the components plus the bias term sum to the logit of the float64 reference forward (reference_llama_forward.h,
//    written from modeling_gemma3.py);
//  - logit lens: every boundary decoded by hand in double from the cache's residual (final RMSNorm with gain 1 + w, the
//    tied embedding), the last boundary equal to the reference's logits;
//  - activation patching: resid_pre cells and head z cells against the float64 hooked forward (hooked_forward64.h) of
//    the corrupted prompt with the clean activation added at that hook;
//  - attribution patching: head z cells against metric(corrupt) + the float64 central difference along the clean −
//    corrupt z;
//  - a transcoder on the MLP (Gemma Scope 2's site: the pre_feedforward_layernorm output in, the
//    post_feedforward_layernorm output out): its input and target recomputed in double from the residual and the
//    checkpoint's norm gains, its features as ReLU(x·W_enc + b_enc) in double.
// The backward against central differences is tst_backward's gemma3 case; the attention steps tst_attention_steps';
// attribution graphs tst_attribution_graph's gemma3 case; edge attribution tst_edge_attribution's.

#include "model/analysis/circuits/activation_patching.h"
#include "model/analysis/embedding_space/logit_lens.h"
#include "model/analysis/features/feature_activations.h"
#include "model/analysis/gradients/attribution_patching.h"
#include "model/analysis/residual/direct_logit_attribution.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "tests/support/hf_llama_folder.h"
#include "tests/support/hooked_forward64.h"
#include "tests/support/made_tokenizer.h"
#include "tests/support/random_transcoders.h"
#include "tests/support/reference_llama_forward.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

using Matrix64 = Eigen::MatrixXd;

/// Gemma's RMSNorm in double: x / √(mean(x²) + eps) ⊙ (1 + w), row by row (w as the checkpoint stores it).
Matrix64 gemmaNorm64(const Matrix64& x, const std::vector<float>& w, double eps) {
    Matrix64 y(x.rows(), x.cols());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const double rms = std::sqrt(x.row(i).squaredNorm() / double(x.cols()) + eps);
        for (Eigen::Index d = 0; d < x.cols(); ++d) y(i, d) = x(i, d) / rms * (1.0 + double(w[size_t(d)]));
    }
    return y;
}

/// rows [rows, cols] of a row-major float vector, in double.
Matrix64 matrix64(const std::vector<float>& v, int rows, int cols) {
    return Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(v.data(), rows, cols).cast<double>();
}

} // namespace

class TestGemma3Analyses : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    LlamaCheckpoint ck_;
    std::shared_ptr<const Model> model_;
    std::vector<int> clean_{2, 40, 300, 12, 77, 500, 9, 260, 31, 40, 300, 12};
    std::vector<int> corrupt_{2, 40, 301, 12, 77, 500, 9, 111, 31, 40, 300, 12};
    int token_ = 77, counter_ = 9;
    PatchingRuns runs_;

    PatchingMetric metric() const {
        PatchingMetric m;
        m.kind = PatchingMetricKind::LogitDiff;
        m.token = token_;
        m.counterToken = counter_;
        return m;
    }
    double metric64(const std::vector<int>& tokens, const Hooked64Options& o = {}) const {
        const Matrix64 logits = hookedLogits64(*model_, tokens, o);
        return logits(logits.rows() - 1, token_) - logits(logits.rows() - 1, counter_);
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        ck_ = randomLlama(smallGemma3Spec(), 31);
        writeHfLlamaFolder(ck_, dir_.path(), Storage::F32, madeTokenizer512(), "tokenizer.bin");
        model_ = loadModel(dir_.path());
        const ModelConfig& cfg = model_->config();
        QVERIFY(cfg.postNorms && cfg.qkNorm && cfg.local_rotary_base > 0);
        QCOMPARE(cfg.windowOf(0), 3);
        QCOMPARE(cfg.windowOf(5), 0);
        runs_ = preparePatchingRuns(*model_, clean_, corrupt_);
        // the reference agrees with the library at the last position (tst_gemma3_reference_forward checks it all)
        const Matrix64 ref = referenceLlamaLogits(ck_, clean_);
        QVERIFY(worstRelativeRow(runForward(*model_, clean_).logits, ref) < 1e-5);
    }

    void dlaSumsToTheReferenceLogit() {
        const Matrix64 ref = referenceLlamaLogits(ck_, clean_);
        const Eigen::Index last = ref.rows() - 1;
        DlaOptions o;
        o.token = token_;
        o.counterToken = counter_;
        const DirectLogitAttribution dla = directLogitAttribution(*model_, *runs_.clean, o);
        const ModelConfig& cfg = model_->config();
        QCOMPARE(int(dla.components.size()), 1 + cfg.n_layers * (cfg.n_heads + 1)); // embed, then each layer's heads and MLP
        const double expected = ref(last, token_) - ref(last, counter_);
        QVERIFY2(std::abs(dla.total + dla.biasTerm - expected) < 1e-4 * std::max(1.0, std::abs(expected)),
                 qPrintable(QString("Σ DLA %1 + bias %2, reference logit difference %3").arg(dla.total).arg(dla.biasTerm).arg(expected)));
        QVERIFY(std::abs(dla.logit - expected) < 1e-4 * std::max(1.0, std::abs(expected)));
        QVERIFY(dla.checkError < 1e-4);
        // a head's value recomputed in double: its share z_h·W_O^h ⊙ (1 + w_post)/σ_post of the normed attention output
        // (σ_post of the whole z·W_O), read through the final norm frozen at σ_final: ⊙ (1 + w_final)/σ_final · (E[t] − E[t'])
        const int D = cfg.d_model, L = cfg.d_head, H = cfg.n_heads, l = 5;
        const LlamaLayerTensors& t = ck_.layers[size_t(l)];
        const Matrix64 W_O = matrix64(t.o_proj, D, H * L).transpose(); // [H·L, D]
        const Matrix64 z = runs_.clean->stored(l).z.cast<double>().row(last);
        const double sigmaPost = std::sqrt((z * W_O).squaredNorm() / D + 1e-6);
        const Eigen::RowVectorXd xFinal = runs_.clean->stored(cfg.n_layers - 1).resid_post.cast<double>().row(last);
        const double sigmaFinal = std::sqrt(xFinal.squaredNorm() / D + 1e-6);
        const Matrix64 E = matrix64(ck_.embed_tokens, cfg.d_vocab, D);
        Eigen::RowVectorXd u = E.row(token_) - E.row(counter_);
        for (int d = 0; d < D; ++d) u(d) *= (1.0 + ck_.norm[size_t(d)]) / sigmaFinal;
        int checked = 0;
        for (const DlaComponent& c : dla.components) {
            if (c.layer != l || c.head < 0) continue;
            Eigen::RowVectorXd share = z.middleCols(c.head * L, L) * W_O.middleRows(c.head * L, L);
            for (int d = 0; d < D; ++d) share(d) *= (1.0 + t.post_attention_layernorm[size_t(d)]) / sigmaPost;
            const double expected = share.dot(u);
            QVERIFY2(std::abs(c.value - expected) < 1e-5 * std::max(1.0, std::abs(expected)),
                     qPrintable(QString("%1: %2, by hand %3").arg(c.name).arg(c.value).arg(expected)));
            ++checked;
        }
        QCOMPARE(checked, H);
    }

    void lensDecodesEachBoundaryAsTheModel() {
        const ModelConfig& cfg = model_->config();
        const int D = cfg.d_model, V = cfg.d_vocab;
        const Matrix64 W_U = matrix64(ck_.embed_tokens, V, D); // tied
        const Matrix64 ref = referenceLlamaLogits(ck_, clean_);
        for (int b = 0; b < lensBoundaryCount(cfg); ++b) {
            const Matrix lens = lensLogits(*model_, *runs_.clean, b);
            const Matrix64 byHand = gemmaNorm64(lensResidual(cfg, *runs_.clean, b).cast<double>(), ck_.norm, 1e-6) * W_U.transpose();
            QVERIFY2(worstRelativeRow(lens, byHand) < 1e-5, qPrintable(lensBoundaryName(cfg, b)));
        }
        QVERIFY(worstRelativeRow(lensLogits(*model_, *runs_.clean, lensBoundaryCount(cfg) - 1), ref) < 1e-5);
        // the lens at a sliding layer is not the model's output
        QVERIFY(worstRelativeRow(lensLogits(*model_, *runs_.clean, 3), ref) > 1e-2);
    }

    void activationPatchingMatchesTheHookedReference() {
        const ModelConfig& cfg = model_->config();
        const double corruptMetric = metric64(corrupt_);
        for (PatchHook hook : {PatchHook::ResidPre, PatchHook::Z}) {
            PatchingOptions o;
            o.hook = hook;
            o.metric = metric();
            const PatchingSweep sweep = runPatchingSweep(*model_, runs_, o);
            QVERIFY(std::abs(sweep.clean - sweep.corrupt) > 1e-2);
            int checked = 0, moved = 0;
            for (const PatchingCell& c : sweep.cells) {
                // resid_pre: the two changed positions and the last at layers 1 and 5; z: every head of layers 0, 4, 5
                if (hook == PatchHook::ResidPre && !((c.layer == 1 || c.layer == 5) && (c.position == 2 || c.position == 7 || c.position == 11)))
                    continue;
                if (hook == PatchHook::Z && c.layer != 0 && c.layer < 4) continue;
                Hooked64Options h;
                const LayerCache &a = runs_.clean->stored(c.layer), &b = runs_.corrupt->stored(c.layer);
                if (hook == PatchHook::ResidPre) {
                    h.hook = QStringLiteral("blocks.%1.hook_resid_pre").arg(c.layer);
                    h.delta = Matrix64::Zero(a.resid_pre.rows(), cfg.d_model);
                    h.delta.row(c.position) = (a.resid_pre.row(c.position) - b.resid_pre.row(c.position)).cast<double>();
                } else {
                    h.hook = QStringLiteral("blocks.%1.attn.hook_z").arg(c.layer);
                    h.delta = Matrix64::Zero(a.z.rows(), a.z.cols());
                    h.delta.middleCols(c.head * cfg.d_head, cfg.d_head) =
                        (a.z - b.z).middleCols(c.head * cfg.d_head, cfg.d_head).cast<double>();
                }
                const double expected = metric64(corrupt_, h);
                QVERIFY2(std::abs(c.metric - expected) < 1e-4 * std::max(1.0, std::abs(expected)),
                         qPrintable(QString("%1 layer %2 head %3 position %4: patched %5, float64 %6").arg(patchHookName(hook))
                                        .arg(c.layer).arg(c.head).arg(c.position).arg(c.metric).arg(expected)));
                ++checked;
                moved += std::abs(expected - corruptMetric) > 1e-3;
            }
            QCOMPARE(checked, hook == PatchHook::ResidPre ? 6 : 12);
            QVERIFY(moved >= 3);
        }
    }

    void attributionPatchingIsTheFirstOrderTerm() {
        const ModelConfig& cfg = model_->config();
        PatchingOptions o;
        o.hook = PatchHook::Z;
        o.metric = metric();
        const PatchingSweep sweep = runAttributionPatching(*model_, runs_, o);
        const double base = metric64(corrupt_), eps = 1e-4;
        int moved = 0;
        for (const PatchingCell& c : sweep.cells) {
            const int L = cfg.d_head;
            Hooked64Options h;
            h.hook = QStringLiteral("blocks.%1.attn.hook_z").arg(c.layer);
            h.delta = Matrix64::Zero(clean_.size(), cfg.n_heads * L);
            const Matrix64 dz = (runs_.clean->stored(c.layer).z - runs_.corrupt->stored(c.layer).z).middleCols(c.head * L, L).cast<double>();
            h.delta.middleCols(c.head * L, L) = eps * dz;
            const double plus = metric64(corrupt_, h);
            h.delta.middleCols(c.head * L, L) = -eps * dz;
            const double expected = base + (plus - metric64(corrupt_, h)) / (2 * eps);
            QVERIFY2(std::abs(c.metric - expected) < 1e-4 * std::max(1.0, std::abs(expected)),
                     qPrintable(QString("layer %1 head %2: AtP %3, float64 %4").arg(c.layer).arg(c.head).arg(c.metric).arg(expected)));
            moved += std::abs(expected - base) > 1e-3;
        }
        QCOMPARE(int(sweep.cells.size()), cfg.n_layers * cfg.n_heads);
        QVERIFY(moved >= 3);
    }

    void transcoderReadsAndWritesTheSandwichNorms() {
        const ModelConfig& cfg = model_->config();
        const DictionarySet set = randomTranscoders(cfg, 24, 5);
        for (int l : {0, 5}) {
            const SparseCoder& tc = set.coders[size_t(l)];
            const FeatureRun run = runDictionary(*model_, *runs_.clean, tc);
            const LayerCache& c = runs_.clean->stored(l);
            const LlamaLayerTensors& t = ck_.layers[size_t(l)];
            // in: pre_feedforward_layernorm(resid_mid); out: post_feedforward_layernorm(down_proj(…))
            const Matrix64 x = gemmaNorm64(c.resid_mid.cast<double>(), t.pre_feedforward_layernorm, 1e-6);
            QVERIFY2((run.x.cast<double>() - x).cwiseAbs().maxCoeff() < 1e-5, qPrintable(QString::number(l)));
            const Matrix64 down = c.mlp_post.cast<double>() * matrix64(t.down_proj, cfg.d_model, int(c.mlp_post.cols())).transpose();
            const Matrix64 target = gemmaNorm64(down, t.post_feedforward_layernorm, 1e-6);
            QVERIFY((run.target.cast<double>() - target).cwiseAbs().maxCoeff() < 1e-5);
            QVERIFY((target - (c.resid_post - c.resid_mid).cast<double>()).cwiseAbs().maxCoeff() < 1e-5);
            const Matrix64 pre = (x * tc.W_enc.toMatrix().cast<double>()).rowwise() + tc.b_enc.toMatrix().cast<double>().row(0);
            const Matrix64 f = pre.cwiseMax(0.0);
            QVERIFY((run.f.cast<double>() - f).cwiseAbs().maxCoeff() < 1e-5);
            QVERIFY(run.aliveCount() > 0);
        }
    }
};

QTEST_GUILESS_MAIN(TestGemma3Analyses)
#include "tst_gemma3_analyses.moc"
