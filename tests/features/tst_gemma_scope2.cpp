// Gemma Scope 2, every kind, in its repositories' layout (model/features/gemma_scope2_layout.h), on a random Gemma 3
// written as an HF folder: the hook of each site is the module output a float64 Gemma 3 forward computes
// (tests/support/reference_llama_forward, written from modeling_gemma3.py); SAEs, transcoders, a cross-layer transcoder
// and a crosscoder written by the tests (support/gemma_scope2_files) encode and reconstruct as the float64 formulas of
// Google's tutorial say; the affine skip's orientation is decided by a transcoder whose target is known; circuit-tracer's
// Gemma Scope 2 sets resolve their hf:// entries in the Hugging Face cache; bad input is refused by message.

#include "model/analysis/graphs/replacement_model.h"
#include "model/core/errors.h"
#include "model/features/crosscoder_reconstruction.h"
#include "model/features/dictionary_set.h"
#include "model/features/gemma_scope2_layout.h"
#include "model/features/gemma_scope2_multilayer.h"
#include "model/features/gemma_scope_params.h"
#include "model/features/hook_point.h"
#include "model/features/sparse_coder.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "support/dictionary_fixtures.h"
#include "support/error_capture.h"
#include "support/gemma_scope2_files.h"
#include "support/hf_llama_folder.h"
#include "support/made_tokenizer.h"
#include "support/reference_llama_forward.h"
#include "support/safetensors_writer.h"

#include <Eigen/QR>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

MatrixD asDouble(const Matrix& m) { return m.cast<double>(); }

/// max |a − b| / max(1, max |b|).
double relDiff(const MatrixD& a, const MatrixD& b) { return (a - b).cwiseAbs().maxCoeff() / std::max(1.0, b.cwiseAbs().maxCoeff()); }

/// Our encode and decode of x against the float64 JumpReLU formulas (Google's tutorial: ReLU(pre)·(pre > θ), x̂ = f·W_dec
/// + b_dec + x·A): the firing pattern equal, values within 1e-4.
QString againstFormulas(const SparseCoder& sae, const DictionaryParams& p, const MatrixD& x) {
    ReferenceSpec spec;
    spec.activation = ReferenceSpec::JumpReLU;
    spec.skip = p.W_skip.size() > 0;
    spec.transcoder = sae.isTranscoder();
    const auto [rf, rx] = referenceEncodeDecode(p, spec, x);
    const Matrix xf = x.cast<float>();
    const Matrix f = encodeFeatures(sae, xf);
    for (Eigen::Index i = 0; i < f.size(); ++i)
        if ((f.data()[i] != 0) != (rf.data()[i] != 0)) return QStringLiteral("feature entry %1 fires differently").arg(i);
    if (relDiff(asDouble(f), rf) > 1e-4) return QStringLiteral("f differs by %1").arg(relDiff(asDouble(f), rf));
    const double e = relDiff(asDouble(decodeFeatures(sae, f, xf)), rx);
    return e > 1e-4 ? QStringLiteral("x̂ differs by %1").arg(e) : QString();
}

#define EXPECT_FORMULAS(...)                                                                                                           \
    do {                                                                                                                               \
        const QString why = againstFormulas(__VA_ARGS__);                                                                             \
        QVERIFY2(why.isEmpty(), qPrintable(why));                                                                                      \
    } while (0)

QJsonObject configOf(const QString& in, const QString& out, int width, bool affine, const char* type) {
    return {{"hf_hook_point_in", in}, {"hf_hook_point_out", out}, {"width", width}, {"l0", 20}, {"model_name", "google/gemma-3-1b-pt"},
            {"architecture", "jump_relu"}, {"affine_connection", affine}, {"type", type}};
}

} // namespace

class TestGemmaScope2 : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;
    LlamaCheckpoint ckpt_;
    std::shared_ptr<const Model> model_;
    std::vector<int> ids_;
    ActivationCache cache_;
    std::map<QString, Eigen::MatrixXd> modules_; ///< the float64 forward's module outputs

    /// Our activation at `hook` as float64.
    MatrixD at(const QString& hook) const {
        return asDouble(hookActivation(cache_, requireHook(model_->config(), hook, -1, QStringLiteral("test"))));
    }
    MatrixD module(const QString& name) const { return modules_.at(name); }

private slots:
    void initTestCase() {
        ckpt_ = randomLlama(smallGemma3Spec(), 4700u);
        const QString dir = tmp_.filePath(QStringLiteral("gemma3"));
        writeHfLlamaFolder(ckpt_, dir, Storage::F32, madeTokenizer512(), "tokenizer.bin");
        model_ = loadModel(dir);
        ids_ = {2};
        for (int i = 1; i < 20; ++i) ids_.push_back(3 + (i * 37 + 11) % 500);
        cache_ = runForward(*model_, ids_);
        const Eigen::MatrixXd logits = referenceLlamaLogits(ckpt_, ids_, &modules_);
        QVERIFY(worstRelativeRow(cache_.logits, logits) < 1e-4);
    }

    /// Each site's hook (from the folder's site and from config.json's module names) is the module output Gemma Scope 2
    /// was trained on, as the float64 forward computes it: model.layers.L.output = hook_resid_post,
    /// self_attn.o_proj.input (the heads concatenated, before W_O) = attn.hook_z, pre_feedforward_layernorm.output =
    /// ln2.hook_normalized, post_feedforward_layernorm.output = hook_mlp_out (after the post-MLP norm).
    void hooksAreTheModuleOutputs() {
        const struct {
            GemmaScope2Site site;
            const char* module; ///< the module Gemma Scope 2's config names
            bool out;           ///< the site's output hook (a transcoder's)
        } sites[] = {{GemmaScope2Site::ResidPost, "output", false},
                     {GemmaScope2Site::AttnOut, "self_attn.o_proj.input", false},
                     {GemmaScope2Site::MlpOut, "post_feedforward_layernorm.output", false},
                     {GemmaScope2Site::Transcoder, "pre_feedforward_layernorm.output", false},
                     {GemmaScope2Site::Transcoder, "post_feedforward_layernorm.output", true},
                     {GemmaScope2Site::Clt, "pre_feedforward_layernorm.output", false},
                     {GemmaScope2Site::Crosscoder, "output", false}};
        for (int l = 0; l < model_->config().n_layers; ++l)
            for (const auto& s : sites) {
                const QString name = QStringLiteral("model.layers.%1.%2").arg(l).arg(QLatin1String(s.module));
                const auto [in, out] = gemmaScope2SiteHooks(s.site, l);
                const QString hook = s.out ? out : in;
                QCOMPARE(gemmaScope2Hook(name), hook);
                const double e = relDiff(at(hook), module(name));
                QVERIFY2(e <= 1e-4, qPrintable(QStringLiteral("%1 (%2): %3").arg(name, hook).arg(e)));
            }
        // the sites differ, so a swapped mapping would fail above
        QVERIFY(relDiff(module("model.layers.2.pre_feedforward_layernorm.output"), module("model.layers.2.post_feedforward_layernorm.output")) > 0.1);
        QCOMPARE(module("model.layers.2.self_attn.o_proj.input").cols(), Eigen::Index(model_->config().n_heads * model_->config().d_head));
    }

    /// SAEs on resid_post, attn_out and mlp_out and a transcoder, each in its site folder with config.json, opened by the
    /// folder and by params.safetensors: kind, hooks, and encode/decode of the model's own activation at the hook against
    /// the float64 formulas.
    void singleLayerKinds() {
        const ModelConfig& cfg = model_->config();
        const int dz = cfg.n_heads * cfg.d_head;
        const struct {
            const char* folder;
            int layer, dIn;
            const char* in;
            const char* out;
            bool affine;
        } cases[] = {{"resid_post_all", 4, cfg.d_model, "output", "output", false},
                     {"attn_out_all", 1, dz, "self_attn.o_proj.input", "self_attn.o_proj.input", false},
                     {"mlp_out", 5, cfg.d_model, "post_feedforward_layernorm.output", "post_feedforward_layernorm.output", false},
                     {"transcoder_all", 3, cfg.d_model, "pre_feedforward_layernorm.output", "post_feedforward_layernorm.output", true}};
        unsigned seed = 60;
        for (const auto& c : cases) {
            DictionaryParams p = roundedTo(randomParams(c.dIn, 1024, c.dIn, ++seed), QStringLiteral("F32"));
            if (!c.affine) p.W_skip.resize(0, 0);
            const QString b = QStringLiteral("model.layers.%1.").arg(c.layer);
            const bool transcoder = QLatin1String(c.in) != QLatin1String(c.out);
            const QString dir = tmp_.filePath(QStringLiteral("single/%1/layer_%2_width_1k_l0_medium%3").arg(QLatin1String(c.folder)).arg(c.layer)
                                                  .arg(c.affine ? "_affine" : ""));
            writeGemmaScope2Folder(dir, p, configOf(b + QLatin1String(c.in), b + QLatin1String(c.out), 1024, c.affine, transcoder ? "transcoder" : "sae"));
            for (const QString& path : {dir, dir + QStringLiteral("/params.safetensors")}) {
                const DictionarySet set = openDictionaries(path);
                QCOMPARE(set.format, QStringLiteral("Gemma Scope 2"));
                QCOMPARE(set.kind, transcoder ? QStringLiteral("transcoder") : QStringLiteral("sae"));
                const SparseCoder& sae = set.coders[0];
                QCOMPARE(sae.hookIn, gemmaScope2Hook(b + QLatin1String(c.in)));
                QCOMPARE(sae.hookOut, gemmaScope2Hook(b + QLatin1String(c.out)));
                requireFitsModel(set, cfg);
                EXPECT_FORMULAS(sae, p, at(sae.hookIn));
            }
        }
    }

    /// Which way the affine skip is applied, decided by a transcoder whose target is known: features at random and A the
    /// least-squares solution of x·A = target − (f·W_dec + b_dec) over the prompt's 20 positions (32 inputs: exact), for
    /// layer 3's real MLP input and output of the float64 Gemma 3 forward. Stored as Google's tutorial stores and applies
    /// it (affine_skip_connection [d_in, d_out], forward recon + x @ A, as circuit-tracer's load_gemma_scope_2_transcoder
    /// too: W_skip = Aᵀ, then x @ W_skipᵀ): the transcoder opened from that file reconstructs the MLP's output; with x·Aᵀ
    /// (SAELens's JumpReLUSkipTranscoder, which loads A as W_skip [d_out, d_in] and adds x @ W_skipᵀ) it does not.
    void skipOrientationDecidedByTheTarget() {
        const int L = 3, D = model_->config().d_model;
        const MatrixD x = module(QStringLiteral("model.layers.3.pre_feedforward_layernorm.output"));
        const MatrixD target = module(QStringLiteral("model.layers.3.post_feedforward_layernorm.output"));
        DictionaryParams p = roundedTo(randomParams(D, 1024, D, 77), QStringLiteral("F32"));
        ReferenceSpec spec;
        spec.activation = ReferenceSpec::JumpReLU;
        MatrixD pre = x * p.W_enc; // thresholds kept 0.01 from every pre-activation: float32 inputs fire the same features
        pre.rowwise() += p.b_enc;
        for (int f = 0; f < 1024; ++f)
            while ((pre.col(f).array() - p.threshold(f)).abs().minCoeff() < 0.01) p.threshold(f) = double(float(p.threshold(f) + 0.013));
        MatrixD f = referenceEncodeDecode(p, spec, x).first;
        MatrixD sparse = f * p.W_dec;
        sparse.rowwise() += p.b_dec;
        p.W_skip = x.completeOrthogonalDecomposition().solve(target - sparse); // x·A = the rest of the target
        p = roundedTo(p, QStringLiteral("F32"));
        QVERIFY(relDiff(p.W_skip, MatrixD(p.W_skip.transpose())) > 0.5); // asymmetric: the two orientations differ
        const QString b = QStringLiteral("model.layers.%1.").arg(L);
        const QString dir = tmp_.filePath(QStringLiteral("orientation/transcoder_all/layer_3_width_1k_l0_small_affine"));
        writeGemmaScope2Folder(dir, p, configOf(b + "pre_feedforward_layernorm.output", b + "post_feedforward_layernorm.output", 1024, true, "transcoder"));
        const DictionarySet set = openDictionaries(dir);
        SparseCoder tc = set.coders[0];
        const Matrix in = hookActivation(cache_, requireHook(model_->config(), tc.hookIn, D, QStringLiteral("x")));
        const Matrix mlpOut = hookActivation(cache_, requireHook(model_->config(), tc.hookOut, D, QStringLiteral("x")));
        const double right = relDiff(asDouble(decodeFeatures(tc, encodeFeatures(tc, in), in)), asDouble(mlpOut));
        tc.W_skip = tc.W_skip.t(); // x·Aᵀ
        const double transposed = relDiff(asDouble(decodeFeatures(tc, encodeFeatures(tc, in), in)), asDouble(mlpOut));
        qInfo("reconstruction of layer 3's MLP output: x·A %.3g, x·Aᵀ %.3g of its largest value", right, transposed);
        QVERIFY2(right <= 1e-3, qPrintable(QString::number(right)));
        QVERIFY2(transposed >= 0.1, qPrintable(QString::number(transposed)));
    }

    /// A transcoder_all site with every layer of one variant opens as a transcoder set from the site folder, the variant
    /// path (site/width_1k_l0_small_affine, not a folder) and the repository root; each layer as written.
    void transcoderSet() {
        const ModelConfig& cfg = model_->config();
        const QString root = tmp_.filePath(QStringLiteral("repo"));
        const std::vector<DictionaryParams> p = writeRandomGemmaScope2Transcoders(root + "/transcoder_all", cfg.n_layers, cfg.d_model, 90, 64, true);
        for (const QString& path : {root + "/transcoder_all", root + "/transcoder_all/width_1k_l0_small_affine", root}) {
            const DictionarySet set = openDictionaries(path);
            QCOMPARE(set.kind, QStringLiteral("transcoder_set"));
            QCOMPARE(int(set.coders.size()), cfg.n_layers);
            requireFitsModel(set, cfg);
            for (int l = 0; l < cfg.n_layers; ++l) {
                QCOMPARE(set.coders[size_t(l)].hookIn, QStringLiteral("blocks.%1.ln2.hook_normalized").arg(l));
                EXPECT_FORMULAS(set.coders[size_t(l)], p[size_t(l)], at(set.coders[size_t(l)].hookIn));
            }
        }
        // a second variant: the site and the root list both, by the paths that open them
        const std::vector<DictionaryParams> q = writeRandomGemmaScope2Transcoders(root + "/x/transcoder_all", 2, cfg.d_model, 95, 64, false);
        QDir().rename(root + "/x/transcoder_all/layer_0_width_1k_l0_small", root + "/transcoder_all/layer_0_width_1k_l0_small");
        QDir().rename(root + "/x/transcoder_all/layer_1_width_1k_l0_small", root + "/transcoder_all/layer_1_width_1k_l0_small");
        const QString site = QDir::toNativeSeparators(root + "/transcoder_all");
        QCOMPARE(modelErrorOf([&] { openDictionaries(root + "/transcoder_all"); }),
                 site + QStringLiteral(": the transcoder_all folder holds 2 Gemma Scope 2 dictionaries; open one of: ") + site +
                     QStringLiteral("/width_1k_l0_small (2 layers); ") + site + QStringLiteral("/width_1k_l0_small_affine (6 layers)"));
        QCOMPARE(openDictionaries(root + "/transcoder_all/width_1k_l0_small").coders.size(), size_t(2));
    }

    /// A cross-layer transcoder, clt/width_6k_l0_medium_affine/params_layer_{0…5}.safetensors (6 × 1024 features): each
    /// source layer's features from its own MLP input, and each layer's output Σ_{i ≤ j} f_i·w_dec_i[:, j, :] + b_dec_j + x_j·A_j
    /// against the float64 formulas; the slots below the source layer (nonzero here) are not read, as circuit-tracer's
    /// load_gemma_scope_2_clt reads w_dec[i, :, i:, :].
    void crossLayerTranscoder() {
        const ModelConfig& cfg = model_->config();
        const std::vector<MultiLayerParams> p = randomMultiLayer(cfg.n_layers, cfg.d_model, 1024, 5, false, true);
        const QString dir = tmp_.filePath(QStringLiteral("clt-repo/clt/width_6k_l0_medium_affine"));
        writeGemmaScope2MultiLayer(dir, p);
        for (const QString& path : {dir, dir + "/params_layer_2.safetensors", tmp_.filePath(QStringLiteral("clt-repo"))}) {
            const DictionarySet set = openDictionaries(path);
            QCOMPARE(set.kind, QStringLiteral("cross_layer_transcoder"));
            QCOMPARE(int(set.crossLayerDecoders.size()), cfg.n_layers);
            requireFitsModel(set, cfg);
        }
        const DictionarySet set = openDictionaries(dir);
        std::vector<MatrixD> x;
        for (int l = 0; l < cfg.n_layers; ++l) x.push_back(at(set.coders[size_t(l)].hookIn));
        const auto [rf, rx] = referenceMultiLayer(p, x, true);
        const auto all = referenceMultiLayer(p, x, false).second;
        for (int j = 0; j < cfg.n_layers; ++j) {
            QCOMPARE(int(set.crossLayerDecoders[size_t(j)].size()), cfg.n_layers - j);
            const Matrix xj = x[size_t(j)].cast<float>();
            QVERIFY(relDiff(asDouble(encodeFeatures(set.coders[size_t(j)], xj)), rf[size_t(j)]) <= 1e-4);
            Matrix out = decodeFeatures(set.coders[size_t(j)], rf[size_t(j)].cast<float>(), xj); // own slot, b_dec_j, skip
            for (int i = 0; i < j; ++i) out += rf[size_t(i)].cast<float>() * set.crossLayerDecoders[size_t(i)][size_t(j - i)].toMatrix();
            QVERIFY2(relDiff(asDouble(out), rx[size_t(j)]) <= 1e-4, qPrintable(QString::number(j)));
            if (j < cfg.n_layers - 1) QVERIFY(relDiff(asDouble(out), all[size_t(j)]) > 1e-2); // slots below would change it
        }
    }

    /// A crosscoder, crosscoder/layer_1_3_width_2k_l0_medium (two files of 1024 features on the residual stream after
    /// layers 1 and 3): each layer's features, and the reconstruction of both layers from both, against the float64
    /// formulas; the Features view and attribution graphs refuse it by name.
    void crosscoder() {
        const ModelConfig& cfg = model_->config();
        const std::vector<MultiLayerParams> p = randomMultiLayer(2, cfg.d_model, 1024, 9, false, false);
        const QString dir = tmp_.filePath(QStringLiteral("cc-repo/crosscoder/layer_1_3_width_2k_l0_medium"));
        writeGemmaScope2MultiLayer(dir, p);
        const DictionarySet set = openDictionaries(dir);
        QCOMPARE(set.kind, QStringLiteral("crosscoder"));
        QCOMPARE(set.coders[0].hookIn, QStringLiteral("blocks.1.hook_resid_post"));
        QCOMPARE(set.coders[1].hookIn, QStringLiteral("blocks.3.hook_resid_post"));
        requireFitsModel(set, cfg);
        const std::vector<MatrixD> x{at(QStringLiteral("blocks.1.hook_resid_post")), at(QStringLiteral("blocks.3.hook_resid_post"))};
        const auto [rf, rx] = referenceMultiLayer(p, x, false);
        std::vector<Matrix> f;
        for (int k = 0; k < 2; ++k) {
            f.push_back(encodeFeatures(set.coders[size_t(k)], x[size_t(k)].cast<float>()));
            QVERIFY(relDiff(asDouble(f.back()), rf[size_t(k)]) <= 1e-4);
        }
        const std::vector<Matrix> xhat = crosscoderReconstruction(set, f);
        for (int m = 0; m < 2; ++m) QVERIFY2(relDiff(asDouble(xhat[size_t(m)]), rx[size_t(m)]) <= 1e-4, qPrintable(QString::number(m)));
        QVERIFY(inputErrorOf([&] { requireOneHookPerDictionary(set); }).contains(QStringLiteral("a crosscoder")));
        QVERIFY(inputErrorOf([&] { buildReplacementModel(*model_, set, ids_); }).contains(QStringLiteral("a crosscoder reconstructs the residual stream")));
        QCOMPARE(modelErrorOf([&] { openDictionaries(tmp_.filePath(QStringLiteral("cc-repo/crosscoder/layer_1_3_5_width_2k_l0_medium"))); }),
                 QDir::toNativeSeparators(tmp_.filePath(QStringLiteral("cc-repo/crosscoder/layer_1_3_5_width_2k_l0_medium"))) +
                     QStringLiteral(": a Gemma Scope 2 crosscoder folder without params_layer_0.safetensors, params_layer_1.safetensors, …"));
    }

    /// circuit-tracer's Gemma Scope 2 sets (mwhanna/gemma-scope-2-*): a config.yaml listing hf://google/gemma-scope-2-…
    /// files, found in the Hugging Face cache beside the set's own repository, per-layer (params.safetensors) and
    /// cross-layer (params_layer_{i}.safetensors); the hooks from feature_input_hook mlp.hook_in and hook_mlp_out.
    void circuitTracerSets() {
#ifndef ATTNSCOPE_HAVE_YAML_CPP
        QSKIP("circuit-tracer's config.yaml: this build has no yaml-cpp");
#endif
        const ModelConfig& cfg = model_->config();
        const QString hub = tmp_.filePath(QStringLiteral("hub"));
        const QString google = hub + "/models--google--gemma-scope-2-1b-pt/snapshots/0123abcd";
        const std::vector<DictionaryParams> p = writeRandomGemmaScope2Transcoders(google + "/transcoder_all", cfg.n_layers, cfg.d_model, 120, 64, true);
        const std::vector<MultiLayerParams> c = randomMultiLayer(cfg.n_layers, cfg.d_model, 1024, 13, true, true);
        writeGemmaScope2MultiLayer(google + "/clt/width_6k_l0_medium_affine", c);
        for (const bool clt : {false, true}) {
            const QString setDir = hub + (clt ? "/models--mwhanna--gemma-scope-2-1b-pt/snapshots/feed/clt/width_6k_l0_medium_affine"
                                              : "/models--mwhanna--gemma-scope-2-1b-pt/snapshots/feed/transcoder_all/width_1k_l0_small_affine");
            QString yaml = QStringLiteral("model_kind: %1\nfeature_input_hook: mlp.hook_in\nfeature_output_hook: hook_mlp_out\ntranscoders:\n")
                               .arg(clt ? "cross_layer_transcoder" : "transcoder_set");
            for (int l = 0; l < cfg.n_layers; ++l)
                yaml += clt ? QStringLiteral("  - hf://google/gemma-scope-2-1b-pt/clt/width_6k_l0_medium_affine/params_layer_%1.safetensors\n").arg(l)
                            : QStringLiteral("  - hf://google/gemma-scope-2-1b-pt/transcoder_all/layer_%1_width_1k_l0_small_affine/params.safetensors\n").arg(l);
            QDir().mkpath(setDir);
            writeFile(setDir + "/config.yaml", yaml.toUtf8());
            const DictionarySet set = openDictionaries(setDir);
            QCOMPARE(set.format, QStringLiteral("circuit-tracer"));
            QCOMPARE(set.kind, clt ? QStringLiteral("cross_layer_transcoder") : QStringLiteral("transcoder_set"));
            QCOMPARE(int(set.coders.size()), cfg.n_layers);
            requireFitsModel(set, cfg);
            for (int l = 0; l < cfg.n_layers; ++l) {
                QCOMPARE(set.coders[size_t(l)].hookIn, QStringLiteral("blocks.%1.mlp.hook_in").arg(l));
                QCOMPARE(set.coders[size_t(l)].hookOut, QStringLiteral("blocks.%1.hook_mlp_out").arg(l));
                if (!clt) EXPECT_FORMULAS(set.coders[size_t(l)], p[size_t(l)], at(set.coders[size_t(l)].hookIn));
            }
            if (clt) QVERIFY(MatrixD(set.crossLayerDecoders[2][1].toMatrix().cast<double>()) == c[2].W_dec[3]); // w_dec_2[:, 3, :]
        }
        // a file missing from both places is named
        QFile::remove(google + "/transcoder_all/layer_4_width_1k_l0_small_affine/params.safetensors");
        const QString setDir = hub + "/models--mwhanna--gemma-scope-2-1b-pt/snapshots/feed/transcoder_all/width_1k_l0_small_affine";
        QVERIFY(modelErrorOf([&] { openDictionaries(setDir); }).contains(QStringLiteral("transcoder_all/layer_4_width_1k_l0_small_affine/params.safetensors")));
    }

    /// Bad input, by message: a folder without params.safetensors, a width in the folder name the tensors do not have, an
    /// _affine name without the tensor (and the tensor without the name), a set with a missing layer, a CLT folder whose
    /// width is not its layers' features in all.
    void badInput() {
        const ModelConfig& cfg = model_->config();
        const QString root = tmp_.filePath(QStringLiteral("bad"));
        const QString noParams = root + "/resid_post_all/layer_2_width_1k_l0_small";
        QDir().mkpath(noParams);
        writeFile(noParams + "/config.json", QJsonDocument(configOf("model.layers.2.output", "model.layers.2.output", 1024, false, "sae")).toJson());
        QCOMPARE(modelErrorOf([&] { openDictionaries(noParams); }),
                 QDir::toNativeSeparators(noParams) + QStringLiteral(": a Gemma Scope 2 folder without params.safetensors (has: config.json): "
                                                                     "download the folder's params.safetensors beside its config.json"));
        DictionaryParams p = roundedTo(randomParams(cfg.d_model, 1024, cfg.d_model, 3), QStringLiteral("F32"));
        const DictionaryParams withSkip = p;
        p.W_skip.resize(0, 0);
        const QString wide = root + "/resid_post_all/layer_2_width_16k_l0_small";
        writeGemmaScope2Folder(wide, p, configOf("model.layers.2.output", "model.layers.2.output", 1024, false, "sae"));
        QCOMPARE(modelErrorOf([&] { openDictionaries(wide); }),
                 QDir::toNativeSeparators(wide + "/params.safetensors") +
                     QStringLiteral(": the folder name layer_2_width_16k_l0_small says width 16k (16000 to 16999 features) but w_enc has 1024"));
        const QString affine = root + "/transcoder_all/layer_0_width_1k_l0_small_affine";
        writeGemmaScope2Folder(affine, p);
        QCOMPARE(modelErrorOf([&] { openDictionaries(affine); }),
                 QDir::toNativeSeparators(affine + "/params.safetensors") +
                     QStringLiteral(": the folder name layer_0_width_1k_l0_small_affine says _affine but there is no affine_skip_connection"));
        const QString plain = root + "/transcoder_all/layer_0_width_1k_l0_small";
        writeGemmaScope2Folder(plain, withSkip);
        QVERIFY(modelErrorOf([&] { openDictionaries(plain); }).endsWith(QStringLiteral("does not end in _affine")));
        writeGemmaScope2Folder(root + "/transcoder_all/layer_2_width_1k_l0_small", withSkip);
        QCOMPARE(modelErrorOf([&] { openDictionaries(root + "/transcoder_all/width_1k_l0_small"); }),
                 QDir::toNativeSeparators(root + "/transcoder_all/width_1k_l0_small") +
                     QStringLiteral(": layer 1 is missing: a transcoder set needs every layer 0 … 2 (no folder layer_1_width_1k_l0_small)"));
        const QString clt = root + "/clt/width_9k_l0_medium";
        writeGemmaScope2MultiLayer(clt, randomMultiLayer(2, cfg.d_model, 1024, 4, true, false));
        QCOMPARE(modelErrorOf([&] { openDictionaries(clt); }),
                 QDir::toNativeSeparators(clt) + QStringLiteral(": the folder name says width 9k (9000 to 9999 features) but the 2 files have 2 × 1024 = 2048"));
    }
};

QTEST_GUILESS_MAIN(TestGemmaScope2)
#include "tst_gemma_scope2.moc"
