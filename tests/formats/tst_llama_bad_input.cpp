// Bad Llama-family input at the loader level, each refused with a message naming the file and the problem,
// no crash, and the files left as they were: an HF llama folder with a missing tensor, a wrong shape,
// num_attention_heads not a multiple of num_key_value_heads, an unsupported rope_scaling type, a Qwen2
// sliding window on some layers only, MLP biases; a GGUF of an unsupported general.architecture; a Q8_0 GGUF layer
// with a NaN block scale (it opens; the error comes when that layer is first used and names the tensor and
// the block); a llama2.c checkpoint without a tokenizer, and with a tokenizer.bin that is truncated or whose
// record runs past the end. The readers' own hostile corpora are in tst_gguf, tst_llama2c, tst_safetensors
// and tst_llama_tokenizer.

#include "model/core/errors.h"
#include "model/formats/gguf_file.h"
#include "model/formats/model_loader.h"
#include "model/transformer/forward.h"
#include "tests/support/error_capture.h"
#include "tests/support/gguf_llama_file.h"
#include "tests/support/gguf_q8_copy.h"
#include "tests/support/hf_llama_folder.h"
#include "tests/support/made_tokenizer.h"
#include "tests/support/stories_reference.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QtEndian>
#include <QtTest>
#include <map>

using namespace attnscope;
using namespace attnscope::test;

namespace {

/// Every file of a folder by name with its bytes.
std::map<QString, QByteArray> snapshot(const QString& dir) {
    std::map<QString, QByteArray> files;
    for (const QString& name : QDir(dir).entryList(QDir::Files)) files[name] = readBytes(QDir(dir).filePath(name));
    return files;
}

LlamaCheckpoint smallLlama() { return randomLlama(smallLlamaSpec("llama", 32, 4, 2, 8, 48), 7); }

/// A good HF folder of smallLlama (with a made 512-piece tokenizer.bin) in `dir`.
void writeGoodFolder(const QString& dir) { writeHfLlamaFolder(smallLlama(), dir, Storage::F32, madeTokenizer512(), "tokenizer.bin"); }

/// loadModel(path) must throw ModelError with exactly `expected`; the files of `dir` must not change.
void checkRefused(const QString& path, const QString& dir, const QString& expected, const LoadOptions& options = {}) {
    const auto before = snapshot(dir);
    QCOMPARE(modelErrorOf([&] { loadModel(path, {}, options); }), expected);
    QVERIFY(snapshot(dir) == before);
}

} // namespace

class TestLlamaBadInput : public QObject {
    Q_OBJECT

private slots:
    void goodFolderOpens() { // the base of the HF cases is fine as written
        QTemporaryDir dir;
        writeGoodFolder(dir.path());
        const auto m = loadModel(dir.path());
        QCOMPARE(m->config().n_kv_heads, 2);
        QCOMPARE(runForward(*m, std::vector<int>{1, 5, 9}).logits.rows(), Eigen::Index(3));
    }

    void hfTensorErrors_data() {
        QTest::addColumn<QString>("tensor");
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QString>("expected");
        QTest::newRow("missing") << "model.layers.1.mlp.up_proj.weight" << "remove"
                                 << "model.safetensors: missing tensor layers.1.mlp.up_proj.weight (also looked for "
                                    "model.layers.1.mlp.up_proj.weight)";
        QTest::newRow("wrong shape") << "model.layers.0.self_attn.k_proj.weight" << "reshape" // 512 values as [8, 64], not [16, 32]
                                     << "model.safetensors: tensor model.layers.0.self_attn.k_proj.weight has shape [8, 64] but "
                                        "config.json implies [16, 32]";
        // LlamaConfig mlp_bias: gate/up/down biases would be dropped by the forward, so the folder is refused
        QTest::newRow("MLP bias") << "model.layers.0.mlp.up_proj.bias" << "add"
                                  << "model.safetensors: tensor model.layers.0.mlp.up_proj.bias: MLP biases (mlp_bias) are not supported";
    }
    /// The good folder with model.safetensors rewritten: `tensor` removed, reshaped to [8, 64] or added ([48] of 0.5).
    void hfTensorErrors() {
        QFETCH(QString, tensor);
        QFETCH(QString, edit);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        writeGoodFolder(dir.path());
        std::vector<FixtureTensor> tensors = hfLlamaTensors(smallLlama(), Storage::F32);
        if (edit == QLatin1String("add")) tensors.push_back({tensor, "F32", {48}, floatBytes(std::vector<float>(48, 0.5f))});
        if (edit == QLatin1String("reshape"))
            for (FixtureTensor& t : tensors)
                if (t.name == tensor) t.shape = {8, 64};
        const size_t before = tensors.size();
        if (edit == QLatin1String("remove")) std::erase_if(tensors, [&](const FixtureTensor& t) { return t.name == tensor; });
        QCOMPARE(tensors.size() == before, edit != QLatin1String("remove"));
        writeFile(dir.filePath("model.safetensors"), buildSafetensors(tensors));
        checkRefused(dir.path(), dir.path(), expected);
    }

    void hfConfigErrors_data() {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QJsonValue>("value");
        QTest::addColumn<QString>("expected");
        QTest::newRow("kv heads") << "num_key_value_heads" << QJsonValue(3)
                                  << "config.json: num_attention_heads (4) is not a multiple of num_key_value_heads (3)";
        QTest::newRow("rope_scaling yarn") << "rope_scaling" << QJsonValue(QJsonObject{{"rope_type", "yarn"}, {"factor", 4.0}})
                                           << "config.json: unsupported rope_scaling type 'yarn'; supported: linear, llama3";
        QTest::newRow("qwen2 window on some layers") << "layer_types" << QJsonValue(QJsonArray{"full_attention", "sliding_attention"})
                                                     << "config.json: use_sliding_window applies to 1 of the 2 layers (max_window_layers / "
                                                        "layer_types): a sliding window on some layers only is not supported";
        QTest::newRow("rope_scaling dynamic (old key)") << "rope_scaling" << QJsonValue(QJsonObject{{"type", "dynamic"}, {"factor", 2.0}})
                                                        << "config.json: unsupported rope_scaling type 'dynamic'; supported: linear, llama3";
    }
    void hfConfigErrors() {
        QFETCH(QString, key);
        QFETCH(QJsonValue, value);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        writeGoodFolder(dir.path());
        QJsonObject config = hfLlamaConfig(smallLlama().spec);
        if (key == QLatin1String("layer_types")) { // a Qwen2 config with use_sliding_window
            config.insert("model_type", "qwen2");
            config.insert("use_sliding_window", true);
            config.insert("sliding_window", 4);
        }
        config.insert(key, value);
        writeFile(dir.filePath("config.json"), QJsonDocument(config).toJson());
        checkRefused(dir.path(), dir.path(), expected);
    }

    /// Qwen 3: a folder without blocks.1's q_norm is refused naming the tensor; qwen3_moe is refused as such;
    /// head_dim × num_attention_heads that does not fit q_proj names both shapes.
    void qwen3Errors() {
        QTemporaryDir dir;
        const LlamaCheckpoint c = randomLlama(smallLlamaSpec("qwen3", 32, 4, 2, 8, 48), 9);
        writeHfLlamaFolder(c, dir.path(), Storage::F32, madeTokenizer512(), "tokenizer.bin");
        QVERIFY(loadModel(dir.path())->config().qkNorm);
        std::vector<FixtureTensor> tensors = hfLlamaTensors(c, Storage::F32);
        std::erase_if(tensors, [](const FixtureTensor& t) { return t.name == "model.layers.1.self_attn.q_norm.weight"; });
        writeFile(dir.filePath("model.safetensors"), buildSafetensors(tensors));
        checkRefused(dir.path(), dir.path(),
                     "model.safetensors: missing tensor layers.1.self_attn.q_norm.weight (also looked for "
                     "model.layers.1.self_attn.q_norm.weight)");
        writeFile(dir.filePath("model.safetensors"), buildSafetensors(hfLlamaTensors(c, Storage::F32)));
        QJsonObject config = hfLlamaConfig(c.spec);
        config.insert("head_dim", 16);
        writeFile(dir.filePath("config.json"), QJsonDocument(config).toJson());
        checkRefused(dir.path(), dir.path(),
                     "model.safetensors: tensor model.layers.0.self_attn.q_proj.weight has shape [32, 32] but config.json "
                     "implies [64, 32]");
        config.insert("model_type", "qwen3_moe");
        writeFile(dir.filePath("config.json"), QJsonDocument(config).toJson());
        checkRefused(dir.path(), dir.path(),
                     "config.json: model_type 'qwen3_moe': Qwen 3 mixture-of-experts models are not supported (their MLPs are "
                     "routed experts); the dense Qwen 3 models (model_type 'qwen3') are");
    }

    /// Gemma 2: a soft-cap ≤ 0, a window larger than the context, and a GGUF without a post-norm tensor are
    /// refused naming the file and the field or tensor; null soft-caps mean none.
    void gemma2Errors() {
        QTemporaryDir dir;
        LlamaSpec spec = smallLlamaSpec("gemma2", 32, 4, 2, 8, 48);
        spec.attn_softcap = 10;
        const LlamaCheckpoint c = randomLlama(spec, 9);
        writeHfLlamaFolder(c, dir.path(), Storage::F32, madeTokenizer512(), "tokenizer.bin");
        QCOMPARE(loadModel(dir.path())->config().attn_logit_softcap, 10.0);
        QCOMPARE(loadModel(dir.path())->config().final_logit_softcap, 0.0); // null in config.json
        const QJsonObject good = hfLlamaConfig(c.spec);
        auto refusedWith = [&](const char* key, const QJsonValue& value, const QString& expected) {
            QJsonObject config = good;
            config.insert(key, value);
            writeFile(dir.filePath("config.json"), QJsonDocument(config).toJson());
            checkRefused(dir.path(), dir.path(), expected);
        };
        refusedWith("attn_logit_softcapping", 0.0, "config.json: attn_logit_softcapping must be a positive number or null (got 0)");
        refusedWith("final_logit_softcapping", -30.0, "config.json: final_logit_softcapping must be a positive number or null (got -30)");
        refusedWith("sliding_window", 65, "config.json: sliding_window (65) is larger than max_position_embeddings (64)");
        const QString gguf = dir.filePath("gemma2.gguf");
        writeFile(gguf, ggufHfLayoutBytes(c));
        QVERIFY(loadModel(gguf)->config().postNorms);
        writeFile(gguf, ggufHfLayoutBytes(c, "blk.1.post_ffw_norm.weight"));
        checkRefused(gguf, dir.path(), "gemma2.gguf: missing tensor blk.1.post_ffw_norm.weight");
    }

    /// Gemma 3: a window larger than the context, an unknown layer type, a rope_parameters entry of another kind, a
    /// gemma3 config without text_config, a folder or GGUF without a layer's q_norm, and a multimodal checkpoint without
    /// the text weights are refused naming the file and the field or tensor.
    void gemma3Errors() {
        QTemporaryDir dir;
        const LlamaCheckpoint c = randomLlama(smallGemma3Spec(), 9);
        writeHfLlamaFolder(c, dir.path(), Storage::F32, madeTokenizer512(), "tokenizer.bin");
        QVERIFY(loadModel(dir.path())->config().qkNorm);
        const QJsonObject good = hfLlamaConfig(c.spec);
        auto refusedAs = [&](const QJsonObject& config, const QString& expected) {
            writeFile(dir.filePath("config.json"), QJsonDocument(config).toJson());
            checkRefused(dir.path(), dir.path(), expected);
        };
        auto refusedWith = [&](const char* key, const QJsonValue& value, const QString& expected) {
            QJsonObject config = good;
            config.insert(key, value);
            refusedAs(config, expected);
        };
        refusedWith("sliding_window", 65, "config.json: sliding_window (65) is larger than max_position_embeddings (64)");
        refusedWith("layer_types", QJsonArray{"sliding_attention", "sliding_attention", "chunked_attention", "sliding_attention",
                                              "sliding_attention", "full_attention"},
                    "config.json: layer_types: unsupported entry 'chunked_attention'; supported: full_attention, sliding_attention");
        refusedWith("layer_types", QJsonArray{"sliding_attention", "full_attention"},
                    "config.json: layer_types has 2 entries but num_hidden_layers is 6");
        refusedWith("rope_parameters", QJsonObject{{"full_attention", QJsonObject{{"rope_type", "yarn"}, {"factor", 8.0}}}},
                    "config.json: unsupported rope_parameters.full_attention type 'yarn'; supported: linear, llama3");
        refusedWith("rope_parameters", QJsonObject{{"chunked_attention", QJsonObject{{"rope_type", "default"}}}},
                    "config.json: rope_parameters: unsupported layer type 'chunked_attention'; supported: full_attention, "
                    "sliding_attention");
        QJsonObject multimodal = good;
        multimodal.insert("model_type", "gemma3");
        refusedAs(multimodal, "config.json: model_type 'gemma3' without a text_config object (Gemma3Config keeps the text "
                              "model's fields there)");
        writeFile(dir.filePath("config.json"), QJsonDocument(good).toJson());
        writeFile(dir.filePath("model.safetensors"), buildSafetensors([&] {
                      std::vector<FixtureTensor> t = hfLlamaTensors(c, Storage::F32);
                      std::erase_if(t, [](const FixtureTensor& x) { return x.name == "model.layers.5.self_attn.q_norm.weight"; });
                      return t;
                  }()));
        checkRefused(dir.path(), dir.path(), "model.safetensors: missing tensor layers.5.self_attn.q_norm.weight (also looked for "
                                             "model.layers.5.self_attn.q_norm.weight)");
        // model_type gemma3 whose weights sit under model. (a text-only checkpoint's names): the text weights are missing
        LlamaSpec mm = c.spec;
        mm.modelType = QStringLiteral("gemma3");
        writeFile(dir.filePath("config.json"), QJsonDocument(hfLlamaConfig(mm)).toJson());
        writeFile(dir.filePath("model.safetensors"), buildSafetensors(hfLlamaTensors(c, Storage::F32)));
        checkRefused(dir.path(), dir.path(), "model.safetensors: missing tensor embed_tokens.weight (also looked for "
                                             "model.language_model.embed_tokens.weight, language_model.model.embed_tokens.weight)");
        const QString gguf = dir.filePath("gemma3.gguf");
        writeFile(gguf, ggufHfLayoutBytes(c, "blk.2.attn_q_norm.weight"));
        checkRefused(gguf, dir.path(), "gemma3.gguf: missing tensor blk.2.attn_q_norm.weight");
    }

    /// stories260K.gguf with general.architecture "llama" patched to "bloom" (same length, in place).
    void ggufUnsupportedArchitecture() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTemporaryDir dir;
        QByteArray bytes = readBytes(storiesFile("stories260K.gguf"));
        const auto f = GgufFile::fromBytes(bytes, "x");
        const GgufValue* v = f->find("general.architecture");
        QVERIFY(v && v->type == GgufValueType::String);
        QCOMPARE(bytes.mid(v->offset + 8, 5), QByteArray("llama"));
        bytes.replace(v->offset + 8, 5, "bloom");
        const QString path = dir.filePath("bloom.gguf");
        writeFile(path, bytes);
        checkRefused(path, dir.path(), "bloom.gguf: general.architecture 'bloom' is not supported; supported: llama, mistral, qwen2, qwen3, gemma2, gemma3");
    }

    /// A Q8_0 copy of stories260K whose blk.2.attn_v.weight block 7 has scale d = NaN: it opens and layers 0
    /// and 1 resolve; layer 2 fails when first used (and again on the next use), naming tensor, block and
    /// row; the forward reports the same ModelError; the file is unchanged.
    void ggufNanBlockScale() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTemporaryDir dir;
        QByteArray bytes = ggufQ8_0Copy(storiesFile("stories260K.gguf"), Q8Copy::Q8_0);
        qint64 offset = -1;
        {   // the tensor table lives in the file object: read the offset while it exists
            const auto file = GgufFile::fromBytes(bytes, "x");
            const GgufTensorInfo* t = file->findTensor("blk.2.attn_v.weight");
            QVERIFY(t && t->type == GgmlType::Q8_0);
            offset = qint64(t->fileOffset);
        }
        qToLittleEndian<quint16>(0x7e00, bytes.data() + offset + 7 * 34); // f16 NaN as block 7's d
        const QString path = dir.filePath("nan-scale.gguf");
        writeFile(path, bytes);
        std::shared_ptr<const Model> m;
        QCOMPARE(modelErrorOf([&] { m = loadModel(path); }), QString());
        QVERIFY(m);
        QCOMPARE(modelErrorOf([&] { m->layer(0); m->layer(1); m->globals(); }), QString());
        const QString expected = "nan-scale.gguf: tensor 'blk.2.attn_v.weight': block 7 (row 3) has a non-finite scale d = nan";
        QCOMPARE(modelErrorOf([&] { m->layer(2); }), expected);
        QCOMPARE(modelErrorOf([&] { m->layer(2); }), expected);
        QCOMPARE(modelErrorOf([&] { runForward(*m, std::vector<int>{1, 403, 407}); }), expected);
        QCOMPARE(readBytes(path), bytes);
    }

    void llama2cWithoutTokenizer() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTemporaryDir dir;
        copyFiles(storiesFile(QString()), dir.path(), {"stories260K.bin"});
        const QString path = dir.filePath("stories260K.bin");
        const QString expected = "stories260K.bin: no tokenizer: a llama2.c checkpoint needs one, give it with --tokenizer "
                                 "tokenizer.bin (no file named tokenizer.bin is next to the checkpoint)";
        checkRefused(path, dir.path(), expected);
        // the tokenizer alone (--tokenize) says the same, not what reading the weights as a tokenizer.bin gives
        QCOMPARE(modelErrorOf([&] { loadTokenizerOnly(path); }), expected);
        const QString missing = dir.filePath("tok512.bin");
        checkRefused(path, dir.path(), missing + ": no such tokenizer file", LoadOptions{missing});
        QCOMPARE(readBytes(path), readBytes(storiesFile("stories260K.bin")));
    }

    void llama2cTokenizerPastTheEnd_data() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("problem");
        const QByteArray good = readBytes(storiesFile("tok512.bin"));
        QTest::newRow("truncated to 4000 bytes") << good.left(4000)
                                                 << "the model's vocab_size is 512, but the file (4000 bytes) can hold at most 499 tokens";
        // token 300's record: find it by walking the records (int32 max_len, then float score, int32 len, bytes)
        qsizetype at = 4;
        for (int id = 0; id < 300; ++id) at += 8 + qFromLittleEndian<qint32>(good.constData() + at + 4);
        QByteArray longLength = good;
        qToLittleEndian<qint32>(1 << 20, longLength.data() + at + 4);
        QTest::newRow("length past the end") << longLength
                                             << QStringLiteral("token 300: length 1048576 at offset %1 runs past the end of the file").arg(at);
        QTest::newRow("truncated in a record") << good.left(5000) << QStringLiteral("runs past the end of the file");
    }
    void llama2cTokenizerPastTheEnd() {
        ATTNSCOPE_REQUIRE_TESTDATA();
        QFETCH(QByteArray, bytes);
        QFETCH(QString, problem);
        QTemporaryDir dir;
        copyFiles(storiesFile(QString()), dir.path(), {"stories260K.bin"});
        const QString tok = dir.filePath("tokenizer.bin");
        writeFile(tok, bytes);
        for (const LoadOptions& options : {LoadOptions{tok}, LoadOptions{}}) { // given, and found beside the checkpoint
            const auto before = snapshot(dir.path());
            const QString message = modelErrorOf([&] { loadModel(dir.filePath("stories260K.bin"), {}, options); });
            QVERIFY2(message.startsWith(tok + ": ") && message.contains(problem), qPrintable(message));
            QVERIFY(snapshot(dir.path()) == before);
        }
    }
};

QTEST_GUILESS_MAIN(TestLlamaBadInput)
#include "tst_llama_bad_input.moc"
