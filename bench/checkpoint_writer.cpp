#include "bench/checkpoint_writer.h"

#include "model/core/errors.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace attnscope::bench {

namespace {

struct TensorSpec {
    QString name;
    std::vector<qint64> shape;
    enum Fill { Normal, Ones, Zeros, Constant } fill = Normal;
    float stddev = 0.02f; ///< of Normal; the value of Constant
    qint64 count() const {
        qint64 n = 1;
        for (qint64 s : shape) n *= s;
        return n;
    }
};

std::vector<TensorSpec> gpt2Tensors(const Gpt2Shape& s) {
    const qint64 D = s.d_model, M = 4 * D;
    std::vector<TensorSpec> t;
    t.push_back({QStringLiteral("wte.weight"), {s.d_vocab, D}});
    t.push_back({QStringLiteral("wpe.weight"), {s.n_ctx, D}});
    for (int l = 0; l < s.n_layers; ++l) {
        const QString h = QStringLiteral("h.%1.").arg(l);
        t.push_back({h + QStringLiteral("ln_1.weight"), {D}, TensorSpec::Ones});
        t.push_back({h + QStringLiteral("ln_1.bias"), {D}, TensorSpec::Zeros});
        t.push_back({h + QStringLiteral("attn.c_attn.weight"), {D, 3 * D}});
        t.push_back({h + QStringLiteral("attn.c_attn.bias"), {3 * D}});
        t.push_back({h + QStringLiteral("attn.c_proj.weight"), {D, D}});
        t.push_back({h + QStringLiteral("attn.c_proj.bias"), {D}});
        t.push_back({h + QStringLiteral("ln_2.weight"), {D}, TensorSpec::Ones});
        t.push_back({h + QStringLiteral("ln_2.bias"), {D}, TensorSpec::Zeros});
        t.push_back({h + QStringLiteral("mlp.c_fc.weight"), {D, M}});
        t.push_back({h + QStringLiteral("mlp.c_fc.bias"), {M}});
        t.push_back({h + QStringLiteral("mlp.c_proj.weight"), {M, D}});
        t.push_back({h + QStringLiteral("mlp.c_proj.bias"), {D}});
    }
    t.push_back({QStringLiteral("ln_f.weight"), {D}, TensorSpec::Ones});
    t.push_back({QStringLiteral("ln_f.bias"), {D}, TensorSpec::Zeros});
    return t;
}

void fill(const TensorSpec& t, float* out, unsigned seed) {
    const qint64 n = t.count();
    if (t.fill != TensorSpec::Normal) {
        std::fill(out, out + n, t.fill == TensorSpec::Ones ? 1.0f : t.fill == TensorSpec::Constant ? t.stddev : 0.0f);
        return;
    }
    // Chunks with their own generator, so the values do not depend on the thread count.
    const qint64 chunk = 1 << 20;
#pragma omp parallel for schedule(dynamic)
    for (qint64 c0 = 0; c0 < n; c0 += chunk) {
        std::mt19937 gen(seed ^ unsigned(qHash(t.name)) ^ unsigned(c0 / chunk * 2654435761u));
        std::normal_distribution<float> normal(0.0f, t.stddev);
        for (qint64 i = c0; i < std::min(n, c0 + chunk); ++i) out[i] = normal(gen);
    }
}

std::vector<TensorSpec> llamaTensors(const LlamaShape& s) {
    const qint64 D = s.d_model, Q = qint64(s.n_heads) * s.d_head, KV = qint64(s.n_kv_heads) * s.d_head, M = s.d_mlp;
    const bool gemma = s.family == QLatin1String("gemma2") || s.family == QLatin1String("gemma3");
    const TensorSpec::Fill norm = gemma ? TensorSpec::Zeros : TensorSpec::Ones; // Gemma's norms multiply by 1 + w
    std::vector<TensorSpec> t;
    t.push_back({QStringLiteral("model.embed_tokens.weight"), {s.d_vocab, D}});
    for (int l = 0; l < s.n_layers; ++l) {
        const QString h = QStringLiteral("model.layers.%1.").arg(l);
        t.push_back({h + QStringLiteral("input_layernorm.weight"), {D}, norm});
        t.push_back({h + QStringLiteral("self_attn.q_proj.weight"), {Q, D}}); // nn.Linear: [out, in]
        t.push_back({h + QStringLiteral("self_attn.k_proj.weight"), {KV, D}});
        t.push_back({h + QStringLiteral("self_attn.v_proj.weight"), {KV, D}});
        t.push_back({h + QStringLiteral("self_attn.o_proj.weight"), {D, Q}});
        if (s.family == QLatin1String("qwen3") || s.family == QLatin1String("gemma3")) { // per-head q/k RMSNorm weights [d_head]
            t.push_back({h + QStringLiteral("self_attn.q_norm.weight"), {s.d_head}, norm});
            t.push_back({h + QStringLiteral("self_attn.k_norm.weight"), {s.d_head}, norm});
        }
        t.push_back({h + QStringLiteral("post_attention_layernorm.weight"), {D}, norm});
        if (gemma) {
            t.push_back({h + QStringLiteral("pre_feedforward_layernorm.weight"), {D}, norm});
            t.push_back({h + QStringLiteral("post_feedforward_layernorm.weight"), {D}, norm});
        }
        t.push_back({h + QStringLiteral("mlp.gate_proj.weight"), {M, D}});
        t.push_back({h + QStringLiteral("mlp.up_proj.weight"), {M, D}});
        t.push_back({h + QStringLiteral("mlp.down_proj.weight"), {D, M}});
    }
    t.push_back({QStringLiteral("model.norm.weight"), {D}, norm});
    if (!s.tie_word_embeddings) t.push_back({QStringLiteral("lm_head.weight"), {s.d_vocab, D}});
    return t;
}

/// float → bfloat16, round to nearest even (as torch's .to(torch.bfloat16)); the values here are finite.
quint16 toBf16(float f) {
    quint32 u;
    std::memcpy(&u, &f, 4);
    return quint16((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/// Writes the safetensors header and then each tensor (filled by `fill`, converted by `bytesPerValue`).
void writeSafetensors(const QString& path, const std::vector<TensorSpec>& tensors, const char* dtype, int bytesPerValue,
                      unsigned seed) {
    QJsonObject header{{"__metadata__", QJsonObject{{"format", "pt"}}}};
    qint64 offset = 0;
    for (const TensorSpec& t : tensors) {
        QJsonArray dims;
        for (qint64 s : t.shape) dims.append(s);
        const qint64 bytes = t.count() * bytesPerValue;
        header[t.name] = QJsonObject{{"dtype", dtype}, {"shape", dims}, {"data_offsets", QJsonArray{offset, offset + bytes}}};
        offset += bytes;
    }
    QByteArray json = QJsonDocument(header).toJson(QJsonDocument::Compact);
    while (json.size() % 8) json.append(' ');
    QFile wf(path);
    if (!wf.open(QIODevice::WriteOnly)) throw InputError(QStringLiteral("%1: cannot write").arg(wf.fileName()));
    const quint64 n = quint64(json.size());
    bool ok = wf.write(reinterpret_cast<const char*>(&n), 8) == 8 && wf.write(json) == json.size();
    std::vector<float> buf;
    std::vector<quint16> half;
    for (const TensorSpec& t : tensors) {
        buf.resize(size_t(t.count()));
        fill(t, buf.data(), seed);
        const qint64 bytes = t.count() * bytesPerValue;
        if (bytesPerValue == 4) {
            ok = ok && wf.write(reinterpret_cast<const char*>(buf.data()), bytes) == bytes;
        } else {
            half.resize(buf.size());
#pragma omp parallel for schedule(static)
            for (qint64 i = 0; i < qint64(buf.size()); ++i) half[size_t(i)] = toBf16(buf[size_t(i)]);
            ok = ok && wf.write(reinterpret_cast<const char*>(half.data()), bytes) == bytes;
        }
    }
    if (!ok) throw InputError(QStringLiteral("%1: write failed (%2)").arg(wf.fileName(), wf.errorString()));
}

void writeJson(const QString& path, const QJsonObject& o) {
    QFile cf(path);
    if (!cf.open(QIODevice::WriteOnly) || cf.write(QJsonDocument(o).toJson()) < 0)
        throw InputError(QStringLiteral("%1: cannot write").arg(cf.fileName()));
}

void copyFile(const QString& from, const QString& to) {
    QFile::remove(to);
    if (!QFile::copy(from, to)) throw InputError(QStringLiteral("%1: cannot copy to %2").arg(from, to));
}

} // namespace

Gpt2Shape gpt2Shape(const QString& name) {
    if (name == QLatin1String("gpt2-small") || name == QLatin1String("small")) return {QStringLiteral("gpt2-small"), 12, 12, 768};
    if (name == QLatin1String("gpt2-medium") || name == QLatin1String("medium")) return {QStringLiteral("gpt2-medium"), 24, 16, 1024};
    if (name == QLatin1String("gpt2-xl") || name == QLatin1String("xl")) return {QStringLiteral("gpt2-xl"), 48, 25, 1600};
    throw InputError(QStringLiteral("unknown model size '%1' (small, medium, xl)").arg(name));
}

void writeRandomGpt2(const Gpt2Shape& shape, const QString& dir, const QString& tokenizerDir, unsigned seed) {
    QDir().mkpath(dir);
    const QDir d(dir);

    QJsonObject config{{"model_type", "gpt2"},
                       {"architectures", QJsonArray{"GPT2LMHeadModel"}},
                       {"activation_function", "gelu_new"},
                       {"n_layer", shape.n_layers},
                       {"n_head", shape.n_heads},
                       {"n_embd", shape.d_model},
                       {"n_positions", shape.n_ctx},
                       {"n_ctx", shape.n_ctx},
                       {"n_inner", QJsonValue::Null},
                       {"vocab_size", shape.d_vocab},
                       {"layer_norm_epsilon", 1e-5},
                       {"bos_token_id", 50256},
                       {"eos_token_id", 50256},
                       {"tie_word_embeddings", true},
                       {"torch_dtype", "float32"}};
    writeJson(d.filePath(QStringLiteral("config.json")), config);
    copyFile(QDir(tokenizerDir).filePath(QStringLiteral("encoder.json")), d.filePath(QStringLiteral("vocab.json")));
    copyFile(QDir(tokenizerDir).filePath(QStringLiteral("vocab.bpe")), d.filePath(QStringLiteral("merges.txt")));
    // safetensors: u64 header length, JSON header {name: {dtype, shape, data_offsets}}, raw little-endian data
    writeSafetensors(d.filePath(QStringLiteral("model.safetensors")), gpt2Tensors(shape), "F32", 4, seed);
}

qint64 LlamaShape::weightBytes() const {
    qint64 n = 0;
    for (const TensorSpec& t : llamaTensors(*this)) n += t.count();
    return 2 * n;
}

bool isLlamaShapeName(const QString& name) {
    return name == QLatin1String("llama-1b") || name == QLatin1String("1b") || name == QLatin1String("llama-3b") ||
           name == QLatin1String("3b") || name == QLatin1String("qwen3-0.6b") || name == QLatin1String("gemma-2-2b") ||
           name == QLatin1String("gemma-3-1b");
}

LlamaShape llamaShape(const QString& name) {
    if (name == QLatin1String("llama-1b") || name == QLatin1String("1b")) return {QStringLiteral("llama-1b")};
    if (name == QLatin1String("llama-3b") || name == QLatin1String("3b"))
        return {QStringLiteral("llama-3b"), QStringLiteral("llama"), 28, 3072, 24, 8, 128, 8192};
    if (name == QLatin1String("qwen3-0.6b")) { // Qwen/Qwen3-0.6B's config.json
        return {QStringLiteral("qwen3-0.6b"), QStringLiteral("qwen3"), 28, 1024, 16, 8, 128, 3072, 151936, 40960, 1000000.0, true};
    }
    if (name == QLatin1String("gemma-2-2b")) { // google/gemma-2-2b's config.json
        return {QStringLiteral("gemma-2-2b"), QStringLiteral("gemma2"), 26, 2304, 8, 4, 256, 9216, 256000, 8192, 10000.0, true};
    }
    if (name == QLatin1String("gemma-3-1b")) { // google/gemma-3-1b-pt's config.json
        return {QStringLiteral("gemma-3-1b"), QStringLiteral("gemma3"), 26, 1152, 4, 1, 256, 6912, 262144, 32768, 1000000.0, true};
    }
    throw InputError(QStringLiteral("unknown Llama-family size '%1' (llama-1b, llama-3b, qwen3-0.6b, gemma-2-2b, gemma-3-1b)").arg(name));
}

void writeRandomLlama(const LlamaShape& shape, const QString& dir, const QString& tokenizerDir, unsigned seed) {
    QDir().mkpath(dir);
    const QDir d(dir);
    // as Llama-3.2-1B/3B's config.json (bos/eos ids of Llama 3; the bench tokenizer does not know them), then the
    // fields Qwen 3 and Gemma 2 add or change, as Qwen3-0.6B's and gemma-2-2b's
    QJsonObject config{{"model_type", "llama"},
                       {"architectures", QJsonArray{"LlamaForCausalLM"}},
                       {"hidden_act", "silu"},
                       {"num_hidden_layers", shape.n_layers},
                       {"hidden_size", shape.d_model},
                       {"num_attention_heads", shape.n_heads},
                       {"num_key_value_heads", shape.n_kv_heads},
                       {"head_dim", shape.d_head},
                       {"intermediate_size", shape.d_mlp},
                       {"vocab_size", shape.d_vocab},
                       {"max_position_embeddings", shape.n_ctx},
                       {"rms_norm_eps", 1e-5},
                       {"rope_theta", shape.rope_theta},
                       {"rope_scaling", QJsonObject{{"rope_type", "llama3"}, {"factor", 32.0},
                                                    {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                                                    {"original_max_position_embeddings", 8192}}},
                       {"attention_bias", false},
                       {"mlp_bias", false},
                       {"tie_word_embeddings", shape.tie_word_embeddings},
                       {"bos_token_id", 128000},
                       {"eos_token_id", 128001},
                       {"torch_dtype", "bfloat16"}};
    if (shape.family == QLatin1String("qwen3")) { // Qwen3Config
        config.insert("model_type", "qwen3");
        config.insert("architectures", QJsonArray{"Qwen3ForCausalLM"});
        config.insert("rope_scaling", QJsonValue::Null);
        config.insert("rms_norm_eps", 1e-6);
        config.insert("bos_token_id", 151643);
        config.insert("eos_token_id", 151645);
    } else if (shape.family == QLatin1String("gemma2")) { // Gemma2Config of gemma-2-2b
        config.insert("model_type", "gemma2");
        config.insert("architectures", QJsonArray{"Gemma2ForCausalLM"});
        config.insert("hidden_act", "gelu_pytorch_tanh");
        config.insert("hidden_activation", "gelu_pytorch_tanh");
        config.insert("rope_scaling", QJsonValue::Null);
        config.insert("rms_norm_eps", 1e-6);
        config.insert("query_pre_attn_scalar", 256);
        config.insert("attn_logit_softcapping", 50.0);
        config.insert("final_logit_softcapping", 30.0);
        config.insert("sliding_window", 4096);
        config.insert("bos_token_id", 2);
        config.insert("eos_token_id", 1);
    } else if (shape.family == QLatin1String("gemma3")) { // Gemma3TextConfig of gemma-3-1b-pt (transformers 4.x fields)
        config.insert("model_type", "gemma3_text");
        config.insert("architectures", QJsonArray{"Gemma3ForCausalLM"});
        config.insert("hidden_act", "gelu_pytorch_tanh");
        config.insert("hidden_activation", "gelu_pytorch_tanh");
        config.insert("rope_scaling", QJsonValue::Null);
        config.insert("rope_local_base_freq", 10000.0);
        config.insert("rms_norm_eps", 1e-6);
        config.insert("query_pre_attn_scalar", 256);
        config.insert("attn_logit_softcapping", QJsonValue::Null);
        config.insert("final_logit_softcapping", QJsonValue::Null);
        config.insert("sliding_window", 512);
        config.insert("sliding_window_pattern", 6);
        config.insert("bos_token_id", 2);
        config.insert("eos_token_id", 1);
    }
    writeJson(d.filePath(QStringLiteral("config.json")), config);
    copyFile(QDir(tokenizerDir).filePath(QStringLiteral("encoder.json")), d.filePath(QStringLiteral("vocab.json")));
    copyFile(QDir(tokenizerDir).filePath(QStringLiteral("vocab.bpe")), d.filePath(QStringLiteral("merges.txt")));
    writeSafetensors(d.filePath(QStringLiteral("model.safetensors")), llamaTensors(shape), "BF16", 2, seed);
}

void writeRandomTranscoderSet(const QString& dir, int nLayers, int dModel, int dTranscoder, int k, float jumpThreshold, unsigned seed) {
    QDir d(dir);
    if (!d.mkpath(QStringLiteral("."))) throw InputError(QStringLiteral("%1: cannot create the folder").arg(dir));
    const bool jump = jumpThreshold > 0;
    QString yaml = QStringLiteral("# random %1 transcoders written by attnscope_bench (bench/checkpoint_writer.h)\n"
                                  "model_name: attnscope-bench\nmodel_kind: transcoder_set\nscan: attnscope-bench/transcoders\n"
                                  "feature_input_hook: ln2.hook_normalized\nfeature_output_hook: hook_mlp_out\n")
                       .arg(jump ? QStringLiteral("JumpReLU") : QStringLiteral("TopK"));
    yaml += jump ? QStringLiteral("activation: jump_relu\ntranscoders:\n") : QStringLiteral("activation: topk\nk: %1\ntranscoders:\n").arg(k);
    for (int l = 0; l < nLayers; ++l) {
        const QString file = QStringLiteral("layer_%1.safetensors").arg(l);
        yaml += QStringLiteral("- %1\n").arg(file);
        std::vector<TensorSpec> t;
        t.push_back({QStringLiteral("W_enc"), {dTranscoder, dModel}, TensorSpec::Normal, float(std::sqrt(1.0 / dModel))});
        t.push_back({QStringLiteral("W_dec"), {dTranscoder, dModel}, TensorSpec::Normal, float(std::sqrt(1.0 / dTranscoder))});
        t.push_back({QStringLiteral("b_enc"), {dTranscoder}, TensorSpec::Normal, 0.01f});
        t.push_back({QStringLiteral("b_dec"), {dModel}, TensorSpec::Normal, 0.01f});
        if (jump) t.push_back({QStringLiteral("activation_function.threshold"), {dTranscoder}, TensorSpec::Constant, jumpThreshold});
        writeSafetensors(d.filePath(file), t, "BF16", 2, seed + unsigned(l));
    }
    QFile f(d.filePath(QStringLiteral("config.yaml")));
    if (!f.open(QIODevice::WriteOnly) || f.write(yaml.toUtf8()) != yaml.toUtf8().size())
        throw InputError(QStringLiteral("%1: cannot write").arg(f.fileName()));
}

} // namespace attnscope::bench
