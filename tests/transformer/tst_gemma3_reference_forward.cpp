// Gemma 3 forwards against the independent float64 reference of tests/support/reference_llama_forward (written from
// transformers' modeling_gemma3.py) at every position of a 20-token prompt, on random models written as HF folders in
// each config form the checkpoints use: the 270M/1B layout (model_type gemma3_text, transformers 4.x fields, the 5:1
// pattern by sliding_window_pattern, a window shorter than the prompt), the 4B+ layout (model_type gemma3 with
// text_config, RoPE scaling on the global layers, the text weights under language_model.model. or
// model.language_model. beside vision tensors), and transformers 5's rope_parameters keyed by layer type; the same
// weights as GGUF in llama.cpp's layout. Each known mistake (one RoPE base for every layer, the scaling on local
// layers too, a q/k-norm gain without its 1) moves the reference's logits by far more than the tolerance.

#include "model/formats/hf_config.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "tests/support/gguf_llama_file.h"
#include "tests/support/hf_llama_folder.h"
#include "tests/support/made_tokenizer.h"
#include "tests/support/reference_json.h"
#include "tests/support/reference_llama_forward.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

struct Gemma3Case {
    const char* name;
    LlamaSpec spec;
};

std::vector<Gemma3Case> gemma3Cases() {
    std::vector<Gemma3Case> out;
    // 270M/1B: gemma3_text, 6 layers (five sliding, one global), GQA 4 → 2, window 3 < 20, no RoPE scaling
    LlamaSpec a = smallGemma3Spec();
    a.n_kv_heads = 2;
    a.linear_factor = 0;
    out.push_back({"gemma3_text 1B layout", a});
    // 4B+: gemma3 with text_config (eps, query_pre_attn_scalar 256, rope_theta and rope_local_base_freq left to their
    // defaults), linear scaling 8, 7 layers (a sliding one after the global), one K/V head, language_model.model.
    LlamaSpec b = smallGemma3Spec("gemma3");
    b.n_layers = 7;
    b.query_pre_attn_scalar = 256;
    out.push_back({"gemma3 4B layout language_model.model.", b});
    // transformers 5: rope_parameters keyed by layer type with its own bases, layer_types written out (two globals)
    LlamaSpec c = smallGemma3Spec();
    c.n_layers = 5;
    c.slidingLayers = {1, 0, 1, 1, 0};
    c.rope_local_theta = 20000;
    c.rope_theta = 500000;
    c.ropeParameters = true;
    out.push_back({"gemma3_text transformers 5 rope_parameters", c});
    // a later Gemma3ForConditionalGeneration: model.language_model., rope_parameters
    LlamaSpec d = smallGemma3Spec("gemma3");
    d.languageModelPrefix = QStringLiteral("model.language_model.");
    d.ropeParameters = true;
    d.writeLayerTypes = true;
    out.push_back({"gemma3 model.language_model. rope_parameters", d});
    return out;
}

std::vector<int> prompt20(std::uint32_t seed, int vocab) {
    std::vector<int> ids{2};
    for (int i = 1; i < 20; ++i) ids.push_back(int((seed * 2654435761u + quint32(i) * 40503u) % quint32(vocab - 3)) + 3);
    return ids;
}

LlamaCheckpoint checkpointOf(int index) { return randomLlama(gemma3Cases()[size_t(index)].spec, 3000u + quint32(index)); }

/// The largest |ours − reference| over every logit.
double maxAbsDiff(const Matrix& ours, const Eigen::MatrixXd& ref) { return (ours.cast<double>() - ref).cwiseAbs().maxCoeff(); }

/// The config's per-layer parts against the spec: q/k norms and post-norms, no soft-caps, the window on sliding layers
/// only, the sliding layers' base unscaled and the global layers' base with the linear scaling.
void checkConfig(const ModelConfig& cfg, const LlamaSpec& s) {
    QVERIFY(cfg.qkNorm);
    QVERIFY(cfg.postNorms);
    QCOMPARE(cfg.attn_logit_softcap, 0.0);
    QCOMPARE(cfg.final_logit_softcap, 0.0);
    QCOMPARE(cfg.n_layers, s.n_layers);
    QCOMPARE(cfg.attnScale(0), 1.0 / std::sqrt(s.query_pre_attn_scalar));
    QCOMPARE(cfg.embed_scale, double(float(std::sqrt(double(s.d_model)))));
    for (int l = 0; l < s.n_layers; ++l) {
        const bool sliding = s.slidingLayer(l);
        QCOMPARE(cfg.windowOf(l), sliding ? s.sliding_window : 0);
        QCOMPARE(cfg.rotaryBaseOf(l), sliding ? s.rope_local_theta : s.rope_theta);
        const RopeScaling& scaling = cfg.ropeScalingOf(l);
        const double factor = sliding ? s.local_linear_factor : s.linear_factor;
        QCOMPARE(scaling.kind, factor > 0 ? RopeScaling::Kind::Linear : RopeScaling::Kind::None);
        if (factor > 0) QCOMPARE(scaling.factor, factor);
    }
}

} // namespace

class TestGemma3ReferenceForward : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;

private slots:
    void hfFolders_data() {
        QTest::addColumn<int>("index");
        const auto cases = gemma3Cases();
        for (int i = 0; i < int(cases.size()); ++i) QTest::newRow(cases[size_t(i)].name) << i;
    }
    /// Each case written as an HF folder, opened by loadModel: the config's per-layer window and RoPE, and every
    /// position's logits within 1e-4 of its largest one (float32 against float64 through 5–7 layers).
    void hfFolders() {
        QFETCH(int, index);
        const Gemma3Case gc = gemma3Cases()[size_t(index)];
        const LlamaCheckpoint c = checkpointOf(index);
        const QString dir = tmp_.filePath(QStringLiteral("gemma3-%1").arg(index));
        writeHfLlamaFolder(c, dir, Storage::F32, madeTokenizer512(), "tokenizer.bin");
        const QJsonObject written = readJsonObject(dir + "/config.json");
        QCOMPARE(written.contains("text_config"), gc.spec.modelType == QLatin1String("gemma3"));
        const auto model = loadModel(dir);
        checkConfig(model->config(), gc.spec);
        QCOMPARE(model->config().n_kv_heads, gc.spec.n_kv_heads);
        QVERIFY(!model->layer(0).q_norm_w.empty());
        QCOMPARE(model->globals().W_U_T.ptr, model->globals().W_E.ptr); // tied
        const std::vector<int> ids = prompt20(quint32(index) + 7, gc.spec.d_vocab);
        const Eigen::MatrixXd expected = referenceLlamaLogits(c, ids);
        const Matrix ours = runForward(*model, ids).logits;
        const double rel = worstRelativeRow(ours, expected);
        qInfo("%s: worst position max |diff| / max |logit| = %.3g, max |diff| = %.3g (max |logit| %.3g)", gc.name, rel,
              maxAbsDiff(ours, expected), expected.cwiseAbs().maxCoeff());
        QVERIFY2(rel <= 1e-4, qPrintable(QString::number(rel)));
    }

    void mistakesMatter_data() {
        QTest::addColumn<bool>("scaled");
        QTest::newRow("1B layout") << false;
        QTest::newRow("scaled by 8") << true;
    }
    /// The known mistakes each move the reference's logits by more than 1e-2 of a position's largest logit (100× the
    /// tolerance above): one RoPE base for every layer (the global one, or the local one), the linear scaling applied to
    /// the sliding layers too, and the q/k-norm gain w instead of 1 + w; and the window on every layer. On the 1B layout
    /// and on the shared small Gemma 3 (smallGemma3Spec: scaled by 8 on its global layer; scores scaled by 16^−½ — with
    /// the 4B case's 256^−½ the attention of these tiny heads is too flat for RoPE to move the logits by 1e-2).
    void mistakesMatter() {
        QFETCH(bool, scaled);
        const LlamaCheckpoint c = scaled ? randomLlama(smallGemma3Spec(), 3100u) : checkpointOf(0);
        const std::vector<int> ids = prompt20(11, c.spec.d_vocab);
        const Eigen::MatrixXd expected = referenceLlamaLogits(c, ids);
        auto moved = [&](const char* what, auto edit) {
            LlamaCheckpoint e = c;
            edit(e);
            const double rel = worstRelativeRow(referenceLlamaLogits(e, ids), expected);
            qInfo("%s: %s moves the logits by %.3g of a position's largest", QTest::currentDataTag(), what, rel);
            return rel;
        };
        QVERIFY(moved("one RoPE base for every layer", [](LlamaCheckpoint& e) { e.spec.rope_local_theta = e.spec.rope_theta; }) > 1e-2);
        QVERIFY(moved("the local base on every layer", [](LlamaCheckpoint& e) { e.spec.rope_theta = e.spec.rope_local_theta; }) > 1e-2);
        if (scaled)
            QVERIFY(moved("the scaling on local layers too", [](LlamaCheckpoint& e) { e.spec.local_linear_factor = e.spec.linear_factor; }) > 1e-2);
        QVERIFY(moved("the q/k-norm gain w without its 1", [](LlamaCheckpoint& e) {
                    for (LlamaLayerTensors& l : e.layers)
                        for (std::vector<float>* v : {&l.q_norm, &l.k_norm})
                            for (float& x : *v) x -= 1.0f; // the reference's 1 + (w − 1) = w
                }) > 1e-2);
        QVERIFY(moved("the window on every layer", [](LlamaCheckpoint& e) { e.spec.slidingLayers.assign(size_t(e.spec.n_layers), 1); }) > 1e-2);
    }

    void publishedConfigs_data() {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<double>("factor");
        // google/gemma-3-1b-it's config.json (transformers 4.50)
        QTest::newRow("gemma-3-1b-it") << QByteArray(R"({"architectures": ["Gemma3ForCausalLM"], "attention_bias": false,
            "attention_dropout": 0.0, "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid",
            "eos_token_id": [1, 106], "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
            "hidden_size": 1152, "initializer_range": 0.02, "intermediate_size": 6912, "max_position_embeddings": 32768,
            "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
            "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
            "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
            "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": true, "vocab_size": 262144})")
                                        << 0.0;
        // google/gemma-3-4b-it's: the text_config names the sizes, the window and the scaling, the rest is defaults
        QTest::newRow("gemma-3-4b-it") << QByteArray(R"({"architectures": ["Gemma3ForConditionalGeneration"],
            "boi_token_index": 255999, "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144,
            "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3",
            "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                            "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                            "sliding_window": 1024},
            "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
            "vision_config": {"hidden_size": 1152, "image_size": 896, "model_type": "siglip_vision_model"}})")
                                       << 8.0;
        // the same re-saved with rope_scaling keyed by layer type
        QTest::newRow("4b keyed rope_scaling") << QByteArray(R"({"model_type": "gemma3", "text_config": {
            "hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text", "num_hidden_layers": 34,
            "sliding_window": 1024, "rope_scaling": {"full_attention": {"rope_type": "linear", "factor": 8.0},
                                                     "sliding_attention": {"rope_type": "default"}}}})")
                                               << 8.0;
        // transformers 5: rope_parameters keyed by layer type, rope_scaling null, no rope_theta / rope_local_base_freq
        QTest::newRow("transformers 5") << QByteArray(R"({"model_type": "gemma3_text", "hidden_size": 1152,
            "intermediate_size": 6912, "num_hidden_layers": 26, "num_attention_heads": 4, "num_key_value_heads": 1,
            "head_dim": 256, "max_position_embeddings": 32768, "vocab_size": 262144, "sliding_window": 512,
            "rope_scaling": null, "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0},
                                                      "sliding_attention": {"rope_type": "default"}}})")
                                        << 8.0;
    }
    /// Published config.json files (and their re-saved forms) read as transformers does: Gemma3TextConfig's defaults
    /// where the 4B's text_config is silent (8 heads on 4 K/V heads, 262 208 tokens, 131 072 positions, RoPE bases
    /// 1e6 and 1e4), five sliding layers to one global, the scaling on global layers only, eos the first of [1, 106].
    void publishedConfigs() {
        QFETCH(QByteArray, json);
        QFETCH(double, factor);
        const ModelConfig c = parseHfConfig(json);
        const bool is4b = c.d_model == 2560;
        QCOMPARE(c.modelType, QString(is4b ? "gemma3" : "gemma3_text"));
        QCOMPARE(c.n_layers, is4b ? 34 : 26);
        QCOMPARE(c.n_heads, is4b ? 8 : 4);
        QCOMPARE(c.n_kv_heads, is4b ? 4 : 1);
        QCOMPARE(c.d_head, 256);
        QCOMPARE(c.d_vocab, is4b ? 262208 : 262144);
        QCOMPARE(c.n_ctx, is4b ? 131072 : 32768);
        QCOMPARE(c.norm_eps, 1e-6);
        QCOMPARE(c.query_pre_attn_scalar, 256.0);
        QCOMPARE(c.activation, ActivationKind::GeluNew);
        QVERIFY(c.qkNorm && c.postNorms && c.tie_word_embeddings);
        QCOMPARE(c.attn_logit_softcap, 0.0);
        QCOMPARE(c.final_logit_softcap, 0.0);
        QCOMPARE(c.bos_token_id, 2);
        QCOMPARE(c.eos_token_id, 1);
        for (int l = 0; l < c.n_layers; ++l) {
            const bool global = (l + 1) % 6 == 0;
            QCOMPARE(c.windowOf(l), global ? 0 : is4b ? 1024 : 512);
            QCOMPARE(c.rotaryBaseOf(l), global ? 1e6 : 1e4);
            QCOMPARE(c.ropeScalingOf(l).kind, global && factor > 0 ? RopeScaling::Kind::Linear : RopeScaling::Kind::None);
            if (global && factor > 0) QCOMPARE(c.ropeScalingOf(l).factor, factor);
        }
    }

    void gguf_data() {
        QTest::addColumn<int>("index");
        QTest::newRow("1B layout") << 0;
        QTest::newRow("4B layout (rope scaling)") << 1;
    }
    /// The same weights as GGUF in llama.cpp's layout (general.architecture gemma3, norms and q/k norms stored as 1 + w,
    /// rope.freq_base the global layers', rope.scaling.* for them; the 5:1 pattern and the local base 10 000 fixed):
    /// the same config and the reference's logits.
    void gguf() {
        QFETCH(int, index);
        LlamaSpec s = gemma3Cases()[size_t(index)].spec;
        s.query_pre_attn_scalar = s.d_head; // llama.cpp scales by 1/√head_dim below 62 layers and keeps no key for it
        const LlamaCheckpoint c = randomLlama(s, 3000u + quint32(index));
        const QString path = tmp_.filePath(QStringLiteral("gemma3-%1.gguf").arg(index));
        writeFile(path, ggufHfLayoutBytes(c));
        const auto model = loadModel(path);
        const ModelConfig& cfg = model->config();
        QCOMPARE(cfg.architecture, QStringLiteral("gemma3"));
        QCOMPARE(cfg.rope_layout, RopeLayout::HalfSplit);
        checkConfig(cfg, s);
        const std::vector<int> ids = prompt20(quint32(index) + 7, c.spec.d_vocab);
        const Eigen::MatrixXd expected = referenceLlamaLogits(c, ids);
        const Matrix ours = runForward(*model, ids).logits;
        const double rel = worstRelativeRow(ours, expected);
        qInfo("%s as GGUF: worst position max |diff| / max |logit| = %.3g, max |diff| = %.3g", QTest::currentDataTag(), rel,
              maxAbsDiff(ours, expected));
        QVERIFY2(rel <= 1e-4, qPrintable(QString::number(rel)));
    }
};

QTEST_GUILESS_MAIN(TestGemma3ReferenceForward)
#include "tst_gemma3_reference_forward.moc"
