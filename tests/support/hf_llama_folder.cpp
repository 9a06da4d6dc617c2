#include "tests/support/hf_llama_folder.h"

#include "tests/support/ggml_test_blocks.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QtEndian>

namespace attnscope::test {

namespace {

FixtureTensor tensor(const QString& name, const std::vector<float>& values, std::vector<qint64> shape, Storage storage) {
    qint64 n = 1;
    for (qint64 d : shape) n *= d;
    if (qint64(values.size()) != n) qFatal("tensor %s: %zu values for %lld elements", qPrintable(name), values.size(), qlonglong(n));
    FixtureTensor t;
    t.name = name;
    t.shape = std::move(shape);
    if (storage == Storage::F32) {
        t.dtype = QStringLiteral("F32");
        t.data = floatBytes(values);
        return t;
    }
    t.dtype = storage == Storage::F16 ? QStringLiteral("F16") : QStringLiteral("BF16");
    t.data.resize(qsizetype(2 * values.size()));
    for (size_t i = 0; i < values.size(); ++i)
        qToLittleEndian<quint16>(storage == Storage::F16 ? f16Bits(values[i]) : toBf16Bits(values[i]), t.data.data() + 2 * i);
    return t;
}

} // namespace

QJsonObject hfLlamaConfig(const LlamaSpec& s) {
    const QString arch = s.modelType == QLatin1String("mistral") ? QStringLiteral("MistralForCausalLM")
                         : s.modelType == QLatin1String("qwen2") ? QStringLiteral("Qwen2ForCausalLM")
                         : s.modelType == QLatin1String("qwen3") ? QStringLiteral("Qwen3ForCausalLM")
                         : s.modelType == QLatin1String("gemma2") ? QStringLiteral("Gemma2ForCausalLM")
                                                                 : QStringLiteral("LlamaForCausalLM");
    QJsonObject o{{"architectures", QJsonArray{arch}},
                  {"model_type", s.modelType},
                  {"hidden_size", s.d_model},
                  {"intermediate_size", s.d_mlp},
                  {"num_hidden_layers", s.n_layers},
                  {"num_attention_heads", s.n_heads},
                  {"num_key_value_heads", s.n_kv_heads},
                  {"head_dim", s.d_head},
                  {"max_position_embeddings", s.n_ctx},
                  {"vocab_size", s.d_vocab},
                  {"rms_norm_eps", s.rms_eps},
                  {"rope_theta", s.rope_theta},
                  {"hidden_act", "silu"},
                  {"tie_word_embeddings", s.tied},
                  {"bos_token_id", s.bos},
                  {"eos_token_id", s.eos},
                  {"torch_dtype", "float32"}};
    if (s.modelType == QLatin1String("llama")) o.insert("attention_bias", false);
    if (s.llama3.factor > 0)
        o.insert("rope_scaling", QJsonObject{{"rope_type", "llama3"},
                                             {"factor", s.llama3.factor},
                                             {"low_freq_factor", s.llama3.low_freq_factor},
                                             {"high_freq_factor", s.llama3.high_freq_factor},
                                             {"original_max_position_embeddings", s.llama3.original_max_position_embeddings}});
    else
        o.insert("rope_scaling", QJsonValue::Null);
    if (s.modelType == QLatin1String("mistral"))
        o.insert("sliding_window", s.sliding_window > 0 ? QJsonValue(s.sliding_window) : QJsonValue::Null);
    if (s.modelType == QLatin1String("gemma2")) { // Gemma2Config
        o.insert("hidden_activation", "gelu_pytorch_tanh");
        o.insert("hidden_act", "gelu_pytorch_tanh");
        o.insert("query_pre_attn_scalar", s.query_pre_attn_scalar > 0 ? s.query_pre_attn_scalar : double(s.d_head));
        o.insert("attn_logit_softcapping", s.attn_softcap > 0 ? QJsonValue(s.attn_softcap) : QJsonValue::Null);
        o.insert("final_logit_softcapping", s.final_softcap > 0 ? QJsonValue(s.final_softcap) : QJsonValue::Null);
        o.insert("sliding_window", s.sliding_window > 0 ? s.sliding_window : s.n_ctx);
        o.insert("attention_bias", false);
    }
    if (s.modelType == QLatin1String("qwen2") || s.modelType == QLatin1String("qwen3")) {
        o.insert("use_sliding_window", s.sliding_window > 0);
        o.insert("sliding_window", s.sliding_window > 0 ? s.sliding_window : 4096);
        o.insert("max_window_layers", 0);
    }
    return o;
}

std::vector<FixtureTensor> hfLlamaTensors(const LlamaCheckpoint& c, Storage storage) {
    const LlamaSpec& s = c.spec;
    if (s.interleavedRope) qFatal("hfLlamaTensors: the checkpoint is in Meta layout; convert it with toHfLayout");
    const qint64 D = s.d_model, V = s.d_vocab, M = s.d_mlp, QD = qint64(s.n_heads) * s.d_head, KD = qint64(s.n_kv_heads) * s.d_head;
    std::vector<FixtureTensor> out;
    out.push_back(tensor(QStringLiteral("model.embed_tokens.weight"), c.embed_tokens, {V, D}, storage));
    for (int i = 0; i < s.n_layers; ++i) {
        const LlamaLayerTensors& l = c.layers[size_t(i)];
        const QString p = QStringLiteral("model.layers.%1.").arg(i);
        out.push_back(tensor(p + "input_layernorm.weight", l.input_layernorm, {D}, storage));
        out.push_back(tensor(p + "self_attn.q_proj.weight", l.q_proj, {QD, D}, storage));
        out.push_back(tensor(p + "self_attn.k_proj.weight", l.k_proj, {KD, D}, storage));
        out.push_back(tensor(p + "self_attn.v_proj.weight", l.v_proj, {KD, D}, storage));
        if (!l.q_bias.empty()) out.push_back(tensor(p + "self_attn.q_proj.bias", l.q_bias, {QD}, storage));
        if (!l.k_bias.empty()) out.push_back(tensor(p + "self_attn.k_proj.bias", l.k_bias, {KD}, storage));
        if (!l.v_bias.empty()) out.push_back(tensor(p + "self_attn.v_proj.bias", l.v_bias, {KD}, storage));
        out.push_back(tensor(p + "self_attn.o_proj.weight", l.o_proj, {D, QD}, storage));
        if (!l.o_bias.empty()) out.push_back(tensor(p + "self_attn.o_proj.bias", l.o_bias, {D}, storage));
        if (!l.q_norm.empty()) out.push_back(tensor(p + "self_attn.q_norm.weight", l.q_norm, {s.d_head}, storage));
        if (!l.k_norm.empty()) out.push_back(tensor(p + "self_attn.k_norm.weight", l.k_norm, {s.d_head}, storage));
        out.push_back(tensor(p + "post_attention_layernorm.weight", l.post_attention_layernorm, {D}, storage));
        if (!l.pre_feedforward_layernorm.empty())
            out.push_back(tensor(p + "pre_feedforward_layernorm.weight", l.pre_feedforward_layernorm, {D}, storage));
        if (!l.post_feedforward_layernorm.empty())
            out.push_back(tensor(p + "post_feedforward_layernorm.weight", l.post_feedforward_layernorm, {D}, storage));
        out.push_back(tensor(p + "mlp.gate_proj.weight", l.gate_proj, {M, D}, storage));
        out.push_back(tensor(p + "mlp.up_proj.weight", l.up_proj, {M, D}, storage));
        out.push_back(tensor(p + "mlp.down_proj.weight", l.down_proj, {D, M}, storage));
    }
    out.push_back(tensor(QStringLiteral("model.norm.weight"), c.norm, {D}, storage));
    if (!s.tied) out.push_back(tensor(QStringLiteral("lm_head.weight"), c.lm_head, {V, D}, storage));
    return out;
}

void writeHfLlamaFolder(const LlamaCheckpoint& c, const QString& dir, Storage storage, const QString& tokenizerFile,
                        const QString& tokenizerName) {
    if (!QDir().mkpath(dir)) qFatal("cannot create %s", qPrintable(dir));
    const QDir d(dir);
    QJsonObject config = hfLlamaConfig(c.spec);
    // LlamaConfig / Qwen3Config attention_bias: q, k, v and o all biased, or none
    if (c.spec.modelType == QLatin1String("llama") || c.spec.modelType == QLatin1String("qwen3"))
        config.insert("attention_bias", !c.layers.empty() && !c.layers[0].o_bias.empty());
    config.insert("torch_dtype", storage == Storage::F32 ? "float32" : storage == Storage::F16 ? "float16" : "bfloat16");
    writeFile(d.filePath(QStringLiteral("config.json")), QJsonDocument(config).toJson());
    const QJsonObject metadata{{"format", "pt"}};
    writeFile(d.filePath(QStringLiteral("model.safetensors")), buildSafetensors(hfLlamaTensors(c, storage), metadata));
    if (!tokenizerFile.isEmpty()) {
        const QString target = d.filePath(tokenizerName.isEmpty() ? QFileInfo(tokenizerFile).fileName() : tokenizerName);
        QFile::remove(target);
        if (!QFile::copy(tokenizerFile, target)) qFatal("cannot copy %s", qPrintable(tokenizerFile));
        QFile::setPermissions(target, QFile::ReadOwner | QFile::WriteOwner); // the reference data is read-only
    }
}

} // namespace attnscope::test
