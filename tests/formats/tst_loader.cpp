// loadModel on the tiny-gpt2 reference checkpoint (F32, F16, BF16; folder and file paths) and on
// fixtures written here: sharded, "transformer."-prefixed, lm_head, broken configs and indexes.
// Weight values are checked against the file bytes read by an independent parser.

#include "model/core/errors.h"
#include "model/formats/hf_config.h"
#include "model/formats/model_loader.h"
#include "tests/support/safetensors_writer.h"
#include "tests/support/test_paths.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>
#include <QtEndian>
#include <thread>

using namespace attnscope;
using namespace attnscope::test;

namespace {

QString tiny() { return testdata(QStringLiteral("tiny-gpt2")); }
const QStringList kTokenizerFiles = {QStringLiteral("vocab.json"), QStringLiteral("merges.txt")};

QJsonObject tinyConfig() { return QJsonDocument::fromJson(readFile(tiny() + QStringLiteral("/config.json"))).object(); }

/// Element [r][c] of a 2-D fixture tensor (or [c] of a 1-D one with r = 0).
float at(const FixtureTensor& t, qint64 r, qint64 c) {
    const qint64 cols = t.shape.size() == 2 ? t.shape[1] : t.shape[0];
    return elementAsFloat(t, r * cols + c);
}

/// Asserts every element of a weight view equals the fixture tensor's columns [c0, c0+view.cols).
bool sameAs(const Weight& w, const FixtureTensor& t, qint64 c0, double tol, QString* why) {
    if (w.empty()) { *why = QStringLiteral("empty weight for ") + t.name; return false; }
    for (qint64 r = 0; r < w.rows; ++r)
        for (qint64 c = 0; c < w.cols; ++c) {
            const float expected = at(t, r, c0 + c), got = w.at(r, c);
            if (!(std::abs(double(expected) - double(got)) <= tol)) {
                *why = QStringLiteral("%1[%2][%3]: %4 vs %5").arg(t.name).arg(r).arg(c0 + c).arg(got).arg(expected);
                return false;
            }
        }
    return true;
}

#define CHECK_SAME(w, t, c0, tol)                                                   \
    do {                                                                            \
        QString why_;                                                               \
        QVERIFY2(sameAs((w), (t), (c0), (tol), &why_), qPrintable(why_));           \
    } while (0)

/// Every canonical weight of `m` against the tensors of a GPT-2 checkpoint (names without prefix).
void checkAllWeights(const Model& m, const std::vector<FixtureTensor>& ref, double tol, const QString& prefix = {}) {
    auto T = [&](const QString& n) -> const FixtureTensor& { return tensorNamed(ref, prefix + n); };
    const int D = m.config().d_model;
    const GlobalWeights& g = m.globals();
    CHECK_SAME(g.W_E, T(QStringLiteral("wte.weight")), 0, tol);
    CHECK_SAME(g.W_pos, T(QStringLiteral("wpe.weight")), 0, tol);
    CHECK_SAME(g.ln_final_w, T(QStringLiteral("ln_f.weight")), 0, tol);
    CHECK_SAME(g.ln_final_b, T(QStringLiteral("ln_f.bias")), 0, tol);
    for (int l = 0; l < m.config().n_layers; ++l) {
        const LayerWeights& w = m.layer(l);
        const QString h = QStringLiteral("h.%1.").arg(l);
        CHECK_SAME(w.ln1_w, T(h + QStringLiteral("ln_1.weight")), 0, tol);
        CHECK_SAME(w.ln1_b, T(h + QStringLiteral("ln_1.bias")), 0, tol);
        CHECK_SAME(w.W_Q, T(h + QStringLiteral("attn.c_attn.weight")), 0, tol);
        CHECK_SAME(w.W_K, T(h + QStringLiteral("attn.c_attn.weight")), D, tol);
        CHECK_SAME(w.W_V, T(h + QStringLiteral("attn.c_attn.weight")), 2 * D, tol);
        CHECK_SAME(w.b_Q, T(h + QStringLiteral("attn.c_attn.bias")), 0, tol);
        CHECK_SAME(w.b_K, T(h + QStringLiteral("attn.c_attn.bias")), D, tol);
        CHECK_SAME(w.b_V, T(h + QStringLiteral("attn.c_attn.bias")), 2 * D, tol);
        CHECK_SAME(w.W_O, T(h + QStringLiteral("attn.c_proj.weight")), 0, tol);
        CHECK_SAME(w.b_O, T(h + QStringLiteral("attn.c_proj.bias")), 0, tol);
        CHECK_SAME(w.ln2_w, T(h + QStringLiteral("ln_2.weight")), 0, tol);
        CHECK_SAME(w.ln2_b, T(h + QStringLiteral("ln_2.bias")), 0, tol);
        CHECK_SAME(w.W_in, T(h + QStringLiteral("mlp.c_fc.weight")), 0, tol);
        CHECK_SAME(w.b_in, T(h + QStringLiteral("mlp.c_fc.bias")), 0, tol);
        CHECK_SAME(w.W_out, T(h + QStringLiteral("mlp.c_proj.weight")), 0, tol);
        CHECK_SAME(w.b_out, T(h + QStringLiteral("mlp.c_proj.bias")), 0, tol);
        QVERIFY(w.W_gate.empty());
    }
}

/// The ModelError message of loadModel(path, {}, options), or a failure marker.
QString loadError(const QString& path, const LoadOptions& options = {}) {
    try {
        loadModel(path, {}, options);
    } catch (const ModelError& e) {
        return e.message();
    }
    return QStringLiteral("<no ModelError>");
}

} // namespace

class TestLoader : public QObject {
    Q_OBJECT
private:
    QTemporaryDir tmp_;
    std::vector<FixtureTensor> f32_ = testdataAvailable() ? readSafetensors(tiny() + QStringLiteral("/model.safetensors")) : std::vector<FixtureTensor>{};

    /// A new model folder with tiny-gpt2's tokenizer, the given config and weight files.
    QString makeFolder(const QString& name, const QJsonObject& config,
                       const std::vector<std::pair<QString, QByteArray>>& files) {
        const QString dir = tmp_.filePath(name);
        QDir().mkpath(dir);
        copyFiles(tiny(), dir, kTokenizerFiles);
        writeFile(dir + QStringLiteral("/config.json"), QJsonDocument(config).toJson());
        for (const auto& [fileName, bytes] : files) writeFile(dir + QLatin1Char('/') + fileName, bytes);
        return dir;
    }
    QString makeFolder(const QString& name, const std::vector<FixtureTensor>& tensors) {
        return makeFolder(name, tinyConfig(), {{QStringLiteral("model.safetensors"), buildSafetensors(tensors)}});
    }
    std::vector<FixtureTensor> without(const QString& name) const {
        std::vector<FixtureTensor> out;
        for (const auto& t : f32_)
            if (t.name != name) out.push_back(t);
        return out;
    }

private slots:
    void loadsTinyGpt2Folder() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const auto m = loadModel(tiny());
        const ModelConfig& c = m->config();
        QCOMPARE(c.modelType, QStringLiteral("gpt2"));
        QCOMPARE(c.n_layers, 2);
        QCOMPARE(c.n_heads, 4);
        QCOMPARE(c.n_kv_heads, 4);
        QCOMPARE(c.d_model, 64);
        QCOMPARE(c.d_head, 16);
        QCOMPARE(c.d_mlp, 256); // n_inner null -> 4*n_embd
        QCOMPARE(c.n_ctx, 64);
        QCOMPARE(c.d_vocab, 512);
        QCOMPARE(c.norm_eps, 1e-5);
        QCOMPARE(c.activation, ActivationKind::GeluNew);
        QCOMPARE(c.norm, NormKind::LayerNorm);
        QCOMPARE(c.positions, PositionKind::Learned);
        QVERIFY(c.scale_attn_weights);
        QVERIFY(!c.scale_attn_by_inverse_layer_idx);
        QCOMPARE(c.bos_token_id, 511);
        QCOMPARE(c.eos_token_id, 511);

        const ModelInfo& info = m->info();
        QCOMPARE(info.name, QStringLiteral("tiny-gpt2"));
        QCOMPARE(info.path, tiny());
        QCOMPARE(info.storageDtype, QStringLiteral("F32"));
        QCOMPARE(info.fileBytes, qint64(550152));
        QCOMPARE(info.weightFiles, QStringList{QStringLiteral("model.safetensors")});
        QCOMPARE(m->tokenizer().vocabSize(), 512);

        // W_Q head 1 element [r][c] is c_attn.weight[r][16 + c] (Conv1D [in, out], heads are column blocks).
        const FixtureTensor& qkv = tensorNamed(f32_, QStringLiteral("h.0.attn.c_attn.weight"));
        const LayerWeights& l0 = m->layer(0);
        const Weight q1 = l0.W_Q_head(1, c.d_head);
        QCOMPARE(q1.rows, Eigen::Index(64));
        QCOMPARE(q1.cols, Eigen::Index(16));
        QCOMPARE(q1.view()(5, 3), at(qkv, 5, 16 + 3));
        QCOMPARE(l0.W_K_head(2, 16).view()(7, 1), at(qkv, 7, 64 + 32 + 1));
        QCOMPARE(l0.W_V_head(3, 16).view()(63, 15), at(qkv, 63, 128 + 48 + 15));
        const FixtureTensor& proj = tensorNamed(f32_, QStringLiteral("h.0.attn.c_proj.weight"));
        QCOMPARE(l0.W_O_head(2, 16).view()(4, 9), at(proj, 32 + 4, 9));
        // Zero-copy F32: W_Q/W_K/W_V are strided views of the one fused c_attn block.
        QCOMPARE(l0.W_Q.stride, Eigen::Index(192));
        QCOMPARE(l0.W_K.data(), l0.W_Q.data() + 64);
        QCOMPARE(l0.W_V.data(), l0.W_Q.data() + 128);
        // Tied unembedding.
        QCOMPARE(m->globals().W_U_T.data(), m->globals().W_E.data());
        QVERIFY(m->globals().b_U.empty());
        checkAllWeights(*m, f32_, 0.0);
    }

    void loadsEachFileByPath_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("dtype");
        QTest::addColumn<qint64>("bytes");
        QTest::addColumn<double>("tolerance"); // vs the fp32 weights
        QTest::newRow("F32") << "model.safetensors" << "F32" << qint64(550152) << 0.0;
        QTest::newRow("F16") << "model.float16.safetensors" << "F16" << qint64(276224) << 4.9e-4;
        QTest::newRow("BF16") << "model.bfloat16.safetensors" << "BF16" << qint64(276248) << 3.9e-3;
    }

    void loadsEachFileByPath() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(QString, file);
        QFETCH(QString, dtype);
        QFETCH(qint64, bytes);
        QFETCH(double, tolerance);
        const QString dir = tmp_.filePath(QStringLiteral("bypath-") + dtype);
        QDir().mkpath(dir);
        copyFiles(tiny(), dir, kTokenizerFiles + QStringList{QStringLiteral("config.json"), file});
        const QString path = dir + QLatin1Char('/') + file;
        const auto m = loadModel(path);
        QCOMPARE(m->info().storageDtype, dtype);
        QCOMPARE(m->info().fileBytes, bytes);
        QCOMPARE(m->info().path, path);
        QCOMPARE(m->info().name, QStringLiteral("bypath-") + dtype);
        QCOMPARE(m->info().weightFiles, QStringList{file});
        // Exactly the file's values (independently decoded), and the fp32 weights within rounding.
        checkAllWeights(*m, readSafetensors(path), 0.0);
        checkAllWeights(*m, f32_, tolerance);
        // Read in place in the file's own element type (the kernels widen 16-bit weights): strided views of
        // the fused c_attn block, W_U the same memory as W_E.
        const Weight& wq = m->layer(1).W_Q;
        QCOMPARE(int(wq.type), int(dtype == QLatin1String("F32") ? WeightType::F32 : dtype == QLatin1String("F16") ? WeightType::F16 : WeightType::BF16));
        QCOMPARE(static_cast<const char*>(m->layer(1).W_K.ptr), static_cast<const char*>(wq.ptr) + 64 * wq.elementBytes());
        QCOMPARE(m->globals().W_U_T.ptr, m->globals().W_E.ptr);
    }

    void shardedMatchesSingleFile() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        std::vector<FixtureTensor> a, b;
        QJsonObject weightMap;
        for (const auto& t : f32_) {
            const bool first = t.name.startsWith(QLatin1String("w")) || t.name.startsWith(QLatin1String("h.0."));
            (first ? a : b).push_back(t);
            weightMap.insert(t.name, first ? QStringLiteral("model-00001-of-00002.safetensors")
                                           : QStringLiteral("model-00002-of-00002.safetensors"));
        }
        const QByteArray index = QJsonDocument(QJsonObject{{QStringLiteral("metadata"), QJsonObject{}},
                                                           {QStringLiteral("weight_map"), weightMap}}).toJson();
        const QString dir = makeFolder(QStringLiteral("sharded"), tinyConfig(),
                                       {{QStringLiteral("model-00001-of-00002.safetensors"), buildSafetensors(a)},
                                        {QStringLiteral("model-00002-of-00002.safetensors"), buildSafetensors(b)},
                                        {QStringLiteral("model.safetensors.index.json"), index}});
        const auto m = loadModel(dir);
        QCOMPARE(m->info().weightFiles, (QStringList{QStringLiteral("model-00001-of-00002.safetensors"),
                                                     QStringLiteral("model-00002-of-00002.safetensors")}));
        QCOMPARE(m->info().fileBytes, QFileInfo(dir + QStringLiteral("/model-00001-of-00002.safetensors")).size() +
                                          QFileInfo(dir + QStringLiteral("/model-00002-of-00002.safetensors")).size());
        checkAllWeights(*m, f32_, 0.0);
        // The index file itself can be opened too.
        checkAllWeights(*loadModel(dir + QStringLiteral("/model.safetensors.index.json")), f32_, 0.0);
    }

    void transformerPrefixAndIgnoredBuffers() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        std::vector<FixtureTensor> prefixed;
        for (auto t : f32_) {
            t.name = QStringLiteral("transformer.") + t.name;
            prefixed.push_back(t);
        }
        // HF's causal-mask buffers, which the loader must ignore.
        prefixed.push_back({QStringLiteral("transformer.h.0.attn.bias"), QStringLiteral("BOOL"), {1, 1, 64, 64}, QByteArray(4096, '\1')});
        prefixed.push_back({QStringLiteral("transformer.h.1.attn.masked_bias"), QStringLiteral("F32"), {}, floatBytes({-1e4f})});
        const auto m = loadModel(makeFolder(QStringLiteral("prefixed"), prefixed));
        checkAllWeights(*m, prefixed, 0.0, QStringLiteral("transformer."));
        QCOMPARE(m->info().storageDtype, QStringLiteral("F32"));
    }

    void lmHeadIsUsedWhenPresent() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        std::vector<FixtureTensor> tensors = f32_;
        std::vector<float> head(512 * 64);
        for (size_t i = 0; i < head.size(); ++i) head[i] = float(i % 97) * 0.01f - 0.5f;
        tensors.push_back({QStringLiteral("lm_head.weight"), QStringLiteral("F32"), {512, 64}, floatBytes(head)});
        const auto m = loadModel(makeFolder(QStringLiteral("lmhead"), tensors));
        const GlobalWeights& g = m->globals();
        QVERIFY(g.W_U_T.data() != g.W_E.data());
        QCOMPARE(g.W_U_T.view()(3, 5), head[3 * 64 + 5]);
        QCOMPARE(g.W_U_T.view()(511, 63), head[511 * 64 + 63]);
        CHECK_SAME(g.W_E, tensorNamed(f32_, QStringLiteral("wte.weight")), 0, 0.0);
    }

    void unalignedF32IsCopiedCorrectly() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        // A header padded to an odd length puts every F32 tensor at an unaligned address.
        const QString dir = makeFolder(QStringLiteral("unaligned"), tinyConfig(),
                                       {{QStringLiteral("model.safetensors"), buildSafetensors(f32_, {}, 1)}});
        QByteArray bytes = readFile(dir + QStringLiteral("/model.safetensors"));
        if (qFromLittleEndian<quint64>(bytes.constData()) % 4 == 0) { // make it odd: one more space
            const quint64 n = qFromLittleEndian<quint64>(bytes.constData());
            bytes = rawSafetensors(bytes.mid(8, qsizetype(n)) + ' ', bytes.mid(8 + qsizetype(n)));
            writeFile(dir + QStringLiteral("/model.safetensors"), bytes);
        }
        QVERIFY(qFromLittleEndian<quint64>(bytes.constData()) % 4 != 0);
        checkAllWeights(*loadModel(dir), f32_, 0.0);
    }

    void missingTensor() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const QString dir = makeFolder(QStringLiteral("missing"), without(QStringLiteral("h.1.mlp.c_fc.bias")));
        QCOMPARE(loadError(dir), QStringLiteral("model.safetensors: missing tensor h.1.mlp.c_fc.bias "
                                                "(also looked for transformer.h.1.mlp.c_fc.bias)"));
    }

    void tensorShapeMismatch() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        std::vector<FixtureTensor> tensors = f32_;
        for (auto& t : tensors)
            if (t.name == QLatin1String("h.0.attn.c_attn.weight")) {
                t.shape = {64, 190};
                t.data.truncate(64 * 190 * 4);
            }
        QCOMPARE(loadError(makeFolder(QStringLiteral("badshape"), tensors)),
                 QStringLiteral("model.safetensors: tensor h.0.attn.c_attn.weight has shape [64, 190] but config.json implies [64, 192]"));

        QJsonObject config = tinyConfig();
        config[QStringLiteral("vocab_size")] = 500;
        QCOMPARE(loadError(makeFolder(QStringLiteral("badvocab"), config,
                                      {{QStringLiteral("model.safetensors"), buildSafetensors(f32_)}})),
                 QStringLiteral("model.safetensors: tensor wte.weight has shape [512, 64] but config.json implies [500, 64]"));
    }

    void nonWeightDtypeRejected() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        std::vector<FixtureTensor> tensors = f32_;
        for (auto& t : tensors)
            if (t.name == QLatin1String("ln_f.bias")) t.dtype = QStringLiteral("I32");
        QCOMPARE(loadError(makeFolder(QStringLiteral("intweights"), tensors)),
                 QStringLiteral("model.safetensors: tensor ln_f.bias has dtype I32; weights must be F32, F16 or BF16"));
    }

    void unsupportedModelType() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QJsonObject config = tinyConfig();
        config[QStringLiteral("model_type")] = QStringLiteral("falcon");
        QCOMPARE(loadError(makeFolder(QStringLiteral("falcon"), config,
                                      {{QStringLiteral("model.safetensors"), buildSafetensors(f32_)}})),
                 QStringLiteral("config.json: unsupported model_type 'falcon'; supported: gpt2, llama, mistral, qwen2, qwen3, gemma2, gemma3_text, gemma3"));
    }

    void configErrors_data() {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QJsonValue>("value"); // Undefined = remove the field
        QTest::addColumn<QString>("message");
        QTest::newRow("no model_type") << "model_type" << QJsonValue(QJsonValue::Undefined)
                                       << "config.json: missing model_type; supported: gpt2, llama, mistral, qwen2, qwen3, gemma2, gemma3_text, gemma3";
        QTest::newRow("no n_layer") << "n_layer" << QJsonValue(QJsonValue::Undefined) << "config.json: missing field n_layer";
        QTest::newRow("n_head 0") << "n_head" << QJsonValue(0) << "config.json: n_head must be a positive integer (got 0)";
        QTest::newRow("no n_embd") << "n_embd" << QJsonValue(QJsonValue::Undefined) << "config.json: missing field n_embd";
        QTest::newRow("vocab_size 0") << "vocab_size" << QJsonValue(0) << "config.json: vocab_size must be a positive integer (got 0)";
        QTest::newRow("n_positions negative") << "n_positions" << QJsonValue(-1)
                                              << "config.json: n_positions must be a positive integer (got -1)";
        QTest::newRow("n_embd negative") << "n_embd" << QJsonValue(-64) << "config.json: n_embd must be a positive integer (got -64)";
        QTest::newRow("n_layer fractional") << "n_layer" << QJsonValue(2.5) << "config.json: n_layer must be a positive integer (got 2.5)";
        QTest::newRow("n_layer string") << "n_layer" << QJsonValue(QStringLiteral("2"))
                                        << "config.json: n_layer must be a positive integer (got \"2\")";
        QTest::newRow("vocab_size huge") << "vocab_size" << QJsonValue(1e12) << "config.json: vocab_size is too large (got 1e+12)";
        QTest::newRow("not divisible") << "n_head" << QJsonValue(5) << "config.json: n_embd (64) is not divisible by n_head (5)";
        QTest::newRow("n_inner 0") << "n_inner" << QJsonValue(0) << "config.json: n_inner must be a positive integer (got 0)";
        QTest::newRow("eps 0") << "layer_norm_epsilon" << QJsonValue(0) << "config.json: layer_norm_epsilon must be a positive number";
        QTest::newRow("activation") << "activation_function" << QJsonValue(QStringLiteral("swish"))
                                    << "config.json: unsupported activation_function 'swish'; supported: gelu_new, gelu_pytorch_tanh, gelu, relu";
        QTest::newRow("scale flag") << "scale_attn_weights" << QJsonValue(1) << "config.json: scale_attn_weights must be true or false";
        QTest::newRow("bos") << "bos_token_id" << QJsonValue(-3) << "config.json: bos_token_id must be a non-negative integer";
    }

    void configErrors() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(QString, field);
        QFETCH(QJsonValue, value);
        QFETCH(QString, message);
        QJsonObject config = tinyConfig();
        if (value.isUndefined()) config.remove(field);
        else config[field] = value;
        try {
            parseHfConfig(QJsonDocument(config).toJson());
            QFAIL("no ModelError");
        } catch (const ModelError& e) {
            QCOMPARE(e.message(), message);
        }
    }

    void configNPositionsMissingBoth() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QJsonObject config = tinyConfig();
        config.remove(QStringLiteral("n_positions"));
        config.remove(QStringLiteral("n_ctx"));
        QCOMPARE(loadError(makeFolder(QStringLiteral("nopos"), config, {{QStringLiteral("model.safetensors"), buildSafetensors(f32_)}})),
                 QStringLiteral("config.json: missing field n_positions (or n_ctx)"));
    }

    void configVariants() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QJsonObject config = tinyConfig();
        config.remove(QStringLiteral("n_positions"));
        config[QStringLiteral("n_ctx")] = 32;
        config[QStringLiteral("n_inner")] = 100;
        config[QStringLiteral("activation_function")] = QStringLiteral("gelu");
        config[QStringLiteral("scale_attn_by_inverse_layer_idx")] = true;
        config[QStringLiteral("scale_attn_weights")] = false;
        config.remove(QStringLiteral("bos_token_id"));
        config.remove(QStringLiteral("layer_norm_epsilon"));
        ModelConfig c = parseHfConfig(QJsonDocument(config).toJson());
        QCOMPARE(c.n_ctx, 32);
        QCOMPARE(c.d_mlp, 100);
        QCOMPARE(c.activation, ActivationKind::GeluExact);
        QVERIFY(c.scale_attn_by_inverse_layer_idx);
        QVERIFY(!c.scale_attn_weights);
        QCOMPARE(c.bos_token_id, -1);
        QCOMPARE(c.norm_eps, 1e-5);
        QCOMPARE(c.attnScale(1), 0.5);
        config[QStringLiteral("activation_function")] = QStringLiteral("gelu_pytorch_tanh");
        QCOMPARE(parseHfConfig(QJsonDocument(config).toJson()).activation, ActivationKind::GeluNew);
        config[QStringLiteral("activation_function")] = QStringLiteral("relu");
        QCOMPARE(parseHfConfig(QJsonDocument(config).toJson()).activation, ActivationKind::Relu);
        try {
            parseHfConfig("{\"model_type\": ");
            QFAIL("no ModelError");
        } catch (const ModelError& e) {
            QVERIFY2(e.message().startsWith(QStringLiteral("config.json: not valid JSON")), qPrintable(e.message()));
        }
    }

    void missingConfig() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const QString dir = tmp_.filePath(QStringLiteral("noconfig"));
        QDir().mkpath(dir);
        copyFiles(tiny(), dir, kTokenizerFiles + QStringList{QStringLiteral("model.safetensors")});
        QVERIFY2(loadError(dir).startsWith(QStringLiteral("config.json: file not found")), qPrintable(loadError(dir)));
    }

    void badIndexes_data() {
        QTest::addColumn<QString>("shard");
        QTest::addColumn<QString>("message");
        QTest::newRow("missing shard") << "model-00009.safetensors"
                                       << "model.safetensors.index.json: shard 'model-00009.safetensors' is missing";
        QTest::newRow("parent dir") << "../model.safetensors"
                                    << "model.safetensors.index.json: shard '../model.safetensors' for tensor wte.weight is outside the model folder";
        QTest::newRow("nested parent") << "sub/../../x.safetensors" << "is outside the model folder";
        QTest::newRow("absolute") << "/etc/passwd" << "shard '/etc/passwd' for tensor wte.weight is outside the model folder";
        QTest::newRow("resource") << ":/demo/model.safetensors" << "is outside the model folder";
        QTest::newRow("backslash") << "..\\x.safetensors" << "is outside the model folder";
    }

    void badIndexes() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(QString, shard);
        QFETCH(QString, message);
        QJsonObject weightMap;
        for (const auto& t : f32_) weightMap.insert(t.name, QStringLiteral("model-00001.safetensors"));
        weightMap[QStringLiteral("wte.weight")] = shard;
        const QString name = QStringLiteral("badindex-%1").arg(QString::number(qHash(shard)));
        const QString dir = makeFolder(name, tinyConfig(),
                                       {{QStringLiteral("model-00001.safetensors"), buildSafetensors(f32_)},
                                        {QStringLiteral("model.safetensors.index.json"),
                                         QJsonDocument(QJsonObject{{QStringLiteral("weight_map"), weightMap}}).toJson()}});
        // A real file one level up, so "../model.safetensors" would exist if it were followed.
        writeFile(tmp_.filePath(QStringLiteral("model.safetensors")), buildSafetensors(f32_));
        const QString error = loadError(dir);
        QVERIFY2(error.contains(message), qPrintable(error));
    }

    void indexEntryNotInShard() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        std::vector<FixtureTensor> tensors = without(QStringLiteral("ln_f.bias"));
        QJsonObject weightMap;
        for (const auto& t : f32_) weightMap.insert(t.name, QStringLiteral("model-00001.safetensors"));
        const QString dir = makeFolder(QStringLiteral("notinshard"), tinyConfig(),
                                       {{QStringLiteral("model-00001.safetensors"), buildSafetensors(tensors)},
                                        {QStringLiteral("model.safetensors.index.json"),
                                         QJsonDocument(QJsonObject{{QStringLiteral("weight_map"), weightMap}}).toJson()}});
        QCOMPARE(loadError(dir), QStringLiteral("model-00001.safetensors: tensor ln_f.bias listed in "
                                                "model.safetensors.index.json is not in this file"));
    }

    void duplicateTensorAcrossShards() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QJsonObject weightMap;
        for (const auto& t : f32_) weightMap.insert(t.name, QStringLiteral("a.safetensors"));
        weightMap[QStringLiteral("ln_f.bias")] = QStringLiteral("b.safetensors");
        const QString dir = makeFolder(QStringLiteral("dup"), tinyConfig(),
                                       {{QStringLiteral("a.safetensors"), buildSafetensors(f32_)},
                                        {QStringLiteral("b.safetensors"), buildSafetensors({tensorNamed(f32_, QStringLiteral("ln_f.bias"))})},
                                        {QStringLiteral("model.safetensors.index.json"),
                                         QJsonDocument(QJsonObject{{QStringLiteral("weight_map"), weightMap}}).toJson()}});
        QCOMPARE(loadError(dir), QStringLiteral("b.safetensors: tensor ln_f.bias is also in a.safetensors"));
    }

    void brokenWeightFileNamesIt() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const QString dir = makeFolder(QStringLiteral("brokenfile"), tinyConfig(),
                                       {{QStringLiteral("model.safetensors"), QByteArray(5, 'x')}});
        QCOMPARE(loadError(dir), QStringLiteral("model.safetensors: file is 5 bytes, too short for the 8-byte header length of a safetensors file"));
    }

    void noWeights() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const QString dir = makeFolder(QStringLiteral("noweights"), tinyConfig(), {});
        QCOMPARE(loadError(dir), dir + QStringLiteral(": no weights found: expected model.safetensors or model.safetensors.index.json"));
        writeFile(dir + QStringLiteral("/pytorch_model.bin"), "x");
        QVERIFY(loadError(dir).endsWith(QStringLiteral("(pytorch_model.bin is not supported; convert it to safetensors)")));
        const QString nowhere = tmp_.filePath(QStringLiteral("does-not-exist"));
        QCOMPARE(loadError(nowhere), nowhere + QStringLiteral(": no such file or folder"));
        QCOMPARE(loadError(dir + QStringLiteral("/config.json")),
                 dir + QStringLiteral("/config.json: not a model folder, .safetensors, .gguf or llama2.c .bin file, or model.safetensors.index.json"));
    }

    void missingTokenizerIsAnError() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const QString dir = tmp_.filePath(QStringLiteral("notok"));
        QDir().mkpath(dir);
        copyFiles(tiny(), dir, {QStringLiteral("config.json"), QStringLiteral("model.safetensors")});
        bool threw = false;
        try {
            loadModel(dir);
        } catch (const ModelError&) {
            threw = true;
        }
        QVERIFY(threw);
    }

    /// A tokenizer file given apart goes with a llama2.c checkpoint only; for a model with its own tokenizer it is
    /// an error naming both (it was silently ignored), for loadModel and loadTokenizerOnly alike.
    void separateTokenizerOnlyForLlama2c() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const QString tok = testdata("stories260K/tok512.bin");
        const QString expected = QStringLiteral("%1: this model has its own tokenizer; a separate tokenizer file (%2) goes with a "
                                                "llama2.c checkpoint (.bin) only");
        for (const QString& model : {tiny(), tiny() + "/model.safetensors", testdata("stories260K/stories260K.gguf")}) {
            QCOMPARE(loadError(model, LoadOptions{tok}), expected.arg(model, tok));
            try {
                loadTokenizerOnly(model, LoadOptions{tok});
                QFAIL("no ModelError");
            } catch (const ModelError& e) {
                QCOMPARE(e.message(), expected.arg(model, tok));
            }
        }
        const auto stories = loadModel(testdata("stories260K/stories260K.bin"), {}, LoadOptions{tok}); // where it belongs
        QCOMPARE(stories->tokenizer().vocabSize(), 512);
        QCOMPARE(loadTokenizerOnly(testdata("stories260K/stories260K.bin"), LoadOptions{tok})->vocabSize(), 512);
    }

    void filesUnchangedAfterLoad() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const QString dir = tmp_.filePath(QStringLiteral("unchanged"));
        QDir().mkpath(dir);
        copyFiles(tiny(), dir, kTokenizerFiles + QStringList{QStringLiteral("config.json"), QStringLiteral("model.float16.safetensors")});
        const QString path = dir + QStringLiteral("/model.float16.safetensors");
        const QDateTime old = QDateTime::currentDateTime().addSecs(-3600);
        {
            QFile f(path);
            QVERIFY(f.open(QIODevice::ReadWrite));
            QVERIFY(f.setFileTime(old, QFileDevice::FileModificationTime));
        }
        const QByteArray before = QCryptographicHash::hash(readFile(path), QCryptographicHash::Sha256);
        const QDateTime mtime = QFileInfo(path).lastModified();
        {
            const auto m = loadModel(path);
            for (int l = 0; l < m->config().n_layers; ++l) m->layer(l);
            m->globals();
        }
        QCOMPARE(QCryptographicHash::hash(readFile(path), QCryptographicHash::Sha256), before);
        QCOMPARE(QFileInfo(path).lastModified(), mtime);
    }

    void progressAndCancel() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        std::vector<std::pair<qint64, qint64>> steps;
        Progress p;
        p.report = [&](qint64 done, qint64 total, const QString&) { steps.emplace_back(done, total); };
        loadModel(tiny(), p);
        const qint64 total = 1 + 1 + (5 + 12 * 2) + 1; // config, file, tensors, tokenizer
        QVERIFY(!steps.empty());
        for (size_t i = 0; i < steps.size(); ++i) {
            QCOMPARE(steps[i].second, total);
            if (i > 0) QVERIFY(steps[i].first >= steps[i - 1].first);
        }
        QCOMPARE(steps.back().first, total);

        int polls = 0;
        Progress cancel;
        cancel.isCancelled = [&] { return ++polls > 5; };
        QVERIFY_THROWS_EXCEPTION(Cancelled, loadModel(tiny(), cancel));
        QCOMPARE(polls, 6);
    }

    void concurrentLayerResolution() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        const QString dir = tmp_.filePath(QStringLiteral("concurrent"));
        QDir().mkpath(dir);
        copyFiles(tiny(), dir, kTokenizerFiles + QStringList{QStringLiteral("config.json"), QStringLiteral("model.bfloat16.safetensors")});
        const auto m = loadModel(dir + QStringLiteral("/model.bfloat16.safetensors"));
        std::vector<std::thread> threads;
        for (int i = 0; i < 4; ++i) threads.emplace_back([&m, i] { m->layer(i % 2); m->globals(); });
        for (auto& t : threads) t.join();
        checkAllWeights(*m, readSafetensors(dir + QStringLiteral("/model.bfloat16.safetensors")), 0.0);
    }
};

QTEST_GUILESS_MAIN(TestLoader)
#include "tst_loader.moc"
