// Llama-family forwards against the independent float64 reference of tests/support/reference_llama_forward
// (written from transformers' modeling_llama.py and run.c, checked against run.c in tst_llama_stories),
// at every position: llama-2-tiny-random.gguf (F16 matrices, interleaved RoPE, the full 32000-token
// vocabulary) and random models of our own written as HF folders, which between them use grouped-query
// attention, head_dim ≠ hidden_size / num_attention_heads, q/k/v(/o) biases (Llama attention_bias, Qwen2),
// untied lm_head, a Mistral (and Qwen2) sliding window shorter than the prompt and Llama 3 rope_scaling; and
// Qwen2's max_window_layers, which turns the window off on the layers below it; Qwen 3's per-head q/k RMSNorm; Gemma 2
// ((1 + w) norms, post-norms, soft-caps that bind, a window on even layers, query_pre_attn_scalar, GeGLU, the √d_model
// embedding); as HF folders and as GGUF files in llama.cpp's layout.

#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "model/transformer/prompt.h"
#include "tests/support/gguf_llama_file.h"
#include "tests/support/hf_llama_folder.h"
#include "tests/support/made_tokenizer.h"
#include "tests/support/reference_json.h"
#include "tests/support/reference_llama_forward.h"
#include "tests/support/same_cache.h"
#include "tests/support/stories_reference.h"
#include "tests/support/test_paths.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnscope;
using namespace attnscope::test;

namespace {

/// The random models: name, spec, biases (q/k/v, o).
struct RandomCase {
    const char* name;
    LlamaSpec spec;
    bool qkvBias, oBias;
};

std::vector<RandomCase> randomCases() {
    std::vector<RandomCase> out;
    LlamaSpec a = smallLlamaSpec("llama", 40, 4, 2, 16, 56); // Llama 3 style: GQA, head_dim 16 ≠ 40 / 4, attention_bias, untied
    a.tied = false;
    // llama3 rope_scaling, original context 64: wavelengths 6.3 (kept, < 16), 20 and 63 (smoothed), ≥ 199 (divided by 8)
    a.llama3 = {8.0, 1.0, 4.0, 64};
    out.push_back({"llama GQA head_dim bias untied llama3", a, true, true});
    LlamaSpec b = smallLlamaSpec("mistral", 32, 4, 2, 8, 48); // sliding window 5 < 20 positions
    b.sliding_window = 5;
    out.push_back({"mistral sliding window 5", b, false, false});
    LlamaSpec c = smallLlamaSpec("qwen2", 36, 4, 1, 12, 40); // q/k/v biases, one K/V head, head_dim 12 ≠ 36 / 4, θ 1e6, untied
    c.rope_theta = 1e6;
    c.tied = false;
    out.push_back({"qwen2 qkv bias MQA untied", c, true, false});
    LlamaSpec d = smallLlamaSpec("qwen2", 32, 4, 2, 8, 48); // use_sliding_window with max_window_layers 0: every layer windowed
    d.sliding_window = 4;
    out.push_back({"qwen2 sliding window 4 on every layer", d, true, false});
    LlamaSpec e = smallLlamaSpec("qwen3", 32, 4, 2, 16, 48); // q/k norms, GQA, head_dim 16 ≠ 32 / 4, tied, θ 1e6
    e.rope_theta = 1e6;
    out.push_back({"qwen3 qk-norm GQA head_dim tied", e, false, false});
    LlamaSpec f = smallLlamaSpec("qwen3", 36, 6, 3, 8, 40); // attention_bias (q, k, v, o), untied, window 4 on every layer
    f.tied = false;
    f.sliding_window = 4;
    out.push_back({"qwen3 attention_bias untied window 4", f, true, true});
    LlamaSpec g = smallLlamaSpec("gemma2", 32, 4, 2, 16, 48); // GQA, head_dim 16 ≠ 32 / 4, tied, window 5 on layer 0
    g.sliding_window = 5;
    g.query_pre_attn_scalar = 16;
    g.attn_softcap = 0.8; // binds: scaled scores reach ±3
    g.final_softcap = 5;  // binds: logits reach ±30
    out.push_back({"gemma2 softcaps GQA window 5 tied", g, false, false});
    LlamaSpec h = smallLlamaSpec("gemma2", 36, 6, 3, 8, 40); // query_pre_attn_scalar 4 ≠ head_dim, untied, no final cap
    h.tied = false;
    h.sliding_window = 3;
    h.query_pre_attn_scalar = 4;
    h.attn_softcap = 2;
    out.push_back({"gemma2 query_pre_attn_scalar untied window 3", h, false, false});
    return out;
}

std::vector<int> prompt20(std::uint32_t seed, int vocab) {
    std::vector<int> ids{1};
    for (int i = 1; i < 20; ++i) ids.push_back(int((seed * 2654435761u + quint32(i) * 40503u) % quint32(vocab - 3)) + 3);
    return ids;
}

} // namespace

class TestLlamaReferenceForward : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;

private slots:
    /// llama-2-tiny-random.gguf (random weights, d_model 8, 1 layer, 2 heads, F16 matrices, 32000 tokens):
    /// a 20-token prompt, every position within 1e-5 of the largest logit of the position. The F16 values are
    /// exact in float32 and the reference uses the same values, so only float32 rounding separates the two
    /// (sums of ≤ 32 terms, ~6e-8 relative each; seen 1.4e-7). The bound is tight on purpose: the weights are
    /// N(0, 0.02), so attention is nearly uniform and even a wrong rotary layout (HalfSplit) moves the logits
    /// by only 4.4e-4 of the largest one.
    void tinyRandomGguf() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const QString path = testdata("llama/llama-2-tiny-random.gguf");
        const auto model = loadModel(path);
        QCOMPARE(model->config().rope_layout, RopeLayout::Interleaved);
        QCOMPARE(model->layer(0).W_Q.type, WeightType::F16);
        std::vector<int> ids = tokenizePrompt(model->tokenizer(),
                                              QStringLiteral("The quick brown fox jumps over the lazy dog while the cat sleeps on a warm mat"), true);
        QVERIFY(ids.size() >= 20);
        ids.resize(20);
        const LlamaCheckpoint ref = readGgufLlama(path);
        QCOMPARE(ref.spec.d_vocab, 32000);
        const Eigen::MatrixXd expected = referenceLlamaLogits(ref, ids);
        const Matrix ours = runForward(*model, ids).logits;
        const double rel = worstRelativeRow(ours, expected);
        qInfo("tiny-random GGUF: worst position max |diff| / max |logit| = %.3g (max |logit| %.3g)", rel, expected.cwiseAbs().maxCoeff());
        QVERIFY2(rel <= 1e-5, qPrintable(QString::number(rel)));
    }

    /// A BF16 model stored [out, in] (nn.Linear, as Llama's safetensors: the weights whose product class depends
    /// on the packed copy being attached): the first pass, on weights read in place while the packer is held,
    /// and a pass on the packed copies give the same bits at every hook point.
    void firstPassInPlaceEqualsPackedBf16() {
        const LlamaSpec spec = smallLlamaSpec("llama", 40, 4, 2, 16, 56);
        const LlamaCheckpoint c = randomLlama(spec, 4242u, true, false);
        const QString dir = tmp_.filePath(QStringLiteral("bf16-packing"));
        writeHfLlamaFolder(c, dir, Storage::BF16, madeTokenizer512(), "tokenizer.bin");
        const auto model = loadModel(dir);
        QCOMPARE(model->info().storageDtype, QStringLiteral("BF16"));
        std::vector<int> ids;
        for (int i = 0; i < 20; ++i) ids.push_back((i * 37 + 5) % model->config().d_vocab);
        model->pauseWeightPacking(true);
        const ActivationCache inPlace = runForward(*model, ids);
        QCOMPARE(model->packedWeightBytes(), size_t(0));
        model->pauseWeightPacking(false);
        model->waitForPackedWeights();
        QVERIFY(model->packedWeightBytes() > 0);
        QVERIFY(model->layer(0).W_Q.transposed);
        const ActivationCache packed = runForward(*model, ids);
        QCOMPARE(firstDifference(inPlace, packed), QString());
        // the pass on few rows too (2 ≤ rows < the in-place threshold: the GEMM class, read in place or packed)
        const std::vector<int> few(ids.begin(), ids.begin() + 3);
        const ActivationCache fewPacked = runForward(*model, few);
        const auto fresh = loadModel(dir);
        fresh->pauseWeightPacking(true);
        QCOMPARE(firstDifference(runForward(*fresh, few), fewPacked), QString());
    }

    void randomHfModels_data() {
        QTest::addColumn<int>("index");
        const auto cases = randomCases();
        for (int i = 0; i < int(cases.size()); ++i) QTest::newRow(cases[size_t(i)].name) << i;
    }
    /// Each random model written as an HF folder, opened by loadModel, run on 20 positions: every position
    /// within 1e-4 of its largest logit (float32 against float64 through 2 layers; seen: ~1e-6).
    void randomHfModels() {
        QFETCH(int, index);
        const RandomCase rc = randomCases()[size_t(index)];
        const LlamaCheckpoint c = randomLlama(rc.spec, 1000u + quint32(index), rc.qkvBias, rc.oBias);
        const QString dir = tmp_.filePath(QStringLiteral("random%1").arg(index));
        writeHfLlamaFolder(c, dir, Storage::F32, madeTokenizer512(), "tokenizer.bin");
        const auto model = loadModel(dir);
        const ModelConfig& cfg = model->config();
        QCOMPARE(cfg.d_head, rc.spec.d_head);
        QCOMPARE(cfg.n_kv_heads, rc.spec.n_kv_heads);
        QCOMPARE(cfg.windowOf(0), rc.spec.sliding_window);
        QCOMPARE(cfg.windowOf(1), rc.spec.modelType == QLatin1String("gemma2") ? 0 : rc.spec.sliding_window);
        QCOMPARE(cfg.rope_scaling.kind, rc.spec.llama3.factor > 0 ? RopeScaling::Kind::Llama3 : RopeScaling::Kind::None);
        QCOMPARE(model->layer(1).b_Q.empty(), !rc.qkvBias);
        QCOMPARE(model->layer(1).b_O.empty(), !rc.oBias);
        QCOMPARE(cfg.qkNorm, rc.spec.modelType == QLatin1String("qwen3"));
        QCOMPARE(cfg.postNorms, rc.spec.modelType == QLatin1String("gemma2"));
        QCOMPARE(cfg.attn_logit_softcap, rc.spec.attn_softcap);
        QCOMPARE(cfg.final_logit_softcap, rc.spec.final_softcap);
        QCOMPARE(model->layer(1).q_norm_w.empty(), !cfg.qkNorm);
        QCOMPARE(model->globals().W_U_T.ptr == model->globals().W_E.ptr, rc.spec.tied);
        const std::vector<int> ids = prompt20(quint32(index) + 7, rc.spec.d_vocab);
        const Eigen::MatrixXd expected = referenceLlamaLogits(c, ids);
        const Matrix ours = runForward(*model, ids).logits;
        const double rel = worstRelativeRow(ours, expected);
        qInfo("%s: worst position max |diff| / max |logit| = %.3g (max |logit| %.3g)", rc.name, rel, expected.cwiseAbs().maxCoeff());
        QVERIFY2(rel <= 1e-4, qPrintable(QString::number(rel)));
    }

    /// The Qwen 3 cases written as GGUF in llama.cpp's layout (architecture qwen3, attn_q_norm / attn_k_norm): the
    /// same config and logits as the HF folder's reference (≤ 1e-4 of each position's largest logit); and the q/k
    /// norms matter: without them the reference moves by more than 1e-2.
    void qwen3Gguf() {
        const auto cases = randomCases();
        for (int index = 0; index < int(cases.size()); ++index) {
            const RandomCase& rc = cases[size_t(index)];
            if (rc.spec.modelType != QLatin1String("qwen3")) continue;
            const LlamaCheckpoint c = randomLlama(rc.spec, 1000u + quint32(index), rc.qkvBias, rc.oBias);
            const QString path = tmp_.filePath(QStringLiteral("qwen3-%1.gguf").arg(index));
            writeFile(path, ggufHfLayoutBytes(c));
            const auto model = loadModel(path);
            const ModelConfig& cfg = model->config();
            QCOMPARE(cfg.architecture, QStringLiteral("qwen3"));
            QVERIFY(cfg.qkNorm);
            QCOMPARE(cfg.rope_layout, RopeLayout::HalfSplit);
            QCOMPARE(cfg.d_head, rc.spec.d_head);
            QCOMPARE(cfg.sliding_window, rc.spec.sliding_window);
            QCOMPARE(cfg.tie_word_embeddings, rc.spec.tied);
            const std::vector<int> ids = prompt20(quint32(index) + 7, rc.spec.d_vocab);
            const Eigen::MatrixXd expected = referenceLlamaLogits(c, ids);
            const double rel = worstRelativeRow(runForward(*model, ids).logits, expected);
            qInfo("%s as GGUF: worst position max |diff| / max |logit| = %.3g", rc.name, rel);
            QVERIFY2(rel <= 1e-4, qPrintable(QString::number(rel)));
            LlamaCheckpoint plain = c;
            for (LlamaLayerTensors& l : plain.layers) {
                l.q_norm.clear();
                l.k_norm.clear();
            }
            QVERIFY(worstRelativeRow(referenceLlamaLogits(plain, ids).cast<float>(), expected) > 1e-2);
        }
    }

    /// Gemma 2's parts each matter on the random models (the reference without one moves the logits by > 1e-2): the
    /// attention soft-cap, the final soft-cap, the window on layer 0 only (and not on layer 1), the post-norms' (1 + w);
    /// the tied case as GGUF in llama.cpp's layout (norms stored as 1 + w, softcaps and window as metadata) gives the
    /// reference's logits too (≤ 1e-4).
    void gemma2PartsMatterAndGguf() {
        const auto cases = randomCases();
        int index = 0;
        while (cases[size_t(index)].spec.modelType != QLatin1String("gemma2")) ++index;
        const RandomCase& rc = cases[size_t(index)];
        const LlamaCheckpoint c = randomLlama(rc.spec, 1000u + quint32(index), rc.qkvBias, rc.oBias);
        const std::vector<int> ids = prompt20(quint32(index) + 7, rc.spec.d_vocab);
        const Eigen::MatrixXd expected = referenceLlamaLogits(c, ids);
        auto moved = [&](auto edit) {
            LlamaCheckpoint e = c;
            edit(e);
            return worstRelativeRow(referenceLlamaLogits(e, ids).cast<float>(), expected);
        };
        QVERIFY(moved([](LlamaCheckpoint& e) { e.spec.attn_softcap = 0; }) > 1e-2);
        QVERIFY(moved([](LlamaCheckpoint& e) { e.spec.final_softcap = 0; }) > 1e-2);
        QVERIFY(moved([](LlamaCheckpoint& e) { e.spec.sliding_window = 0; }) > 1e-2);
        QVERIFY(moved([](LlamaCheckpoint& e) { e.spec.modelType = QStringLiteral("llama"); }) > 1e-2);
        const QString path = tmp_.filePath(QStringLiteral("gemma2.gguf"));
        writeFile(path, ggufHfLayoutBytes(c));
        const auto model = loadModel(path);
        const ModelConfig& cfg = model->config();
        QCOMPARE(cfg.architecture, QStringLiteral("gemma2"));
        QVERIFY(cfg.postNorms);
        QCOMPARE(cfg.attn_logit_softcap, double(float(rc.spec.attn_softcap)));
        QCOMPARE(cfg.windowOf(0), 5);
        QCOMPARE(cfg.windowOf(1), 0);
        const double rel = worstRelativeRow(runForward(*model, ids).logits, expected);
        qInfo("%s as GGUF: worst position max |diff| / max |logit| = %.3g", rc.name, rel);
        QVERIFY2(rel <= 1e-4, qPrintable(QString::number(rel)));
    }

    /// Qwen2's use_sliding_window windows only the layers i ≥ max_window_layers (transformers Qwen2Config
    /// layer_types; 28 by default, as in Qwen2-7B's config): with max_window_layers 2 of 2 layers no layer is
    /// windowed, so the logits are the reference's without a window (they differ from the windowed ones).
    void qwen2WindowOffByMaxWindowLayers() {
        LlamaSpec s = smallLlamaSpec("qwen2", 32, 4, 2, 8, 48);
        const LlamaCheckpoint c = randomLlama(s, 77, true, false);
        const QString dir = tmp_.filePath(QStringLiteral("qwen2-max-window-layers"));
        writeHfLlamaFolder(c, dir, Storage::F32, madeTokenizer512(), "tokenizer.bin");
        QJsonObject config = readJsonObject(dir + "/config.json");
        config.insert("use_sliding_window", true);
        config.insert("sliding_window", 3);
        config.insert("max_window_layers", 2);
        writeFile(dir + "/config.json", QJsonDocument(config).toJson());
        const auto model = loadModel(dir);
        QCOMPARE(model->config().sliding_window, 0);
        const std::vector<int> ids = prompt20(5, 512);
        const Eigen::MatrixXd expected = referenceLlamaLogits(c, ids);
        LlamaCheckpoint windowed = c;
        windowed.spec.sliding_window = 3;
        QVERIFY(worstRelativeRow(referenceLlamaLogits(windowed, ids).cast<float>(), expected) > 1e-2);
        const double rel = worstRelativeRow(runForward(*model, ids).logits, expected);
        QVERIFY2(rel <= 1e-4, qPrintable(QString::number(rel)));
        // without max_window_layers: the default 28 ≥ 2 layers, no window either
        config.remove("max_window_layers");
        writeFile(dir + "/config.json", QJsonDocument(config).toJson());
        QCOMPARE(loadModel(dir)->config().sliding_window, 0);
        // layer_types wins over max_window_layers
        config.insert("layer_types", QJsonArray{"sliding_attention", "sliding_attention"});
        writeFile(dir + "/config.json", QJsonDocument(config).toJson());
        QCOMPARE(loadModel(dir)->config().sliding_window, 3);
    }
};

QTEST_GUILESS_MAIN(TestLlamaReferenceForward)
#include "tst_llama_reference_forward.moc"
