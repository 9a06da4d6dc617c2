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

/// Gemma3TextConfig's fields over the Llama ones in `o`: transformers 4.x's rope_theta, rope_scaling and
/// rope_local_base_freq, or transformers 5's rope_parameters keyed by layer type; sliding_window, layer_types (when
/// asked), no soft-caps. model_type gemma3 nests them in text_config as Gemma3Config does, leaving out the fields
/// whose Gemma3TextConfig default is the spec's (as the 4B checkpoint's config does), with a vision_config beside.
QJsonObject gemma3Config(const LlamaSpec& s, QJsonObject o) {
    o.remove("hidden_act");
    o.insert("hidden_activation", "gelu_pytorch_tanh");
    o.insert("query_pre_attn_scalar", s.query_pre_attn_scalar > 0 ? s.query_pre_attn_scalar : double(s.d_head));
    o.insert("attn_logit_softcapping", QJsonValue::Null);
    o.insert("final_logit_softcapping", QJsonValue::Null);
    o.insert("sliding_window", s.sliding_window > 0 ? s.sliding_window : s.n_ctx);
    o.insert("attention_bias", false);
    auto linear = [](double factor) {
        return factor > 0 ? QJsonValue(QJsonObject{{"rope_type", "linear"}, {"factor", factor}}) : QJsonValue(QJsonValue::Null);
    };
    if (s.ropeParameters) { // transformers 5
        auto entry = [&](double theta, double factor) {
            QJsonObject e{{"rope_type", factor > 0 ? "linear" : "default"}, {"rope_theta", theta}};
            if (factor > 0) e.insert("factor", factor);
            return e;
        };
        o.insert("rope_parameters", QJsonObject{{"full_attention", entry(s.rope_theta, s.linear_factor)},
                                                {"sliding_attention", entry(s.rope_local_theta, s.local_linear_factor)}});
        o.insert("rope_scaling", QJsonValue::Null);
        o.remove("rope_theta");
    } else {
        if (s.local_linear_factor > 0) qFatal("hfLlamaConfig: transformers 4.x cannot scale Gemma 3's local RoPE");
        o.insert("rope_scaling", linear(s.linear_factor));
        o.insert("rope_local_base_freq", s.rope_local_theta);
    }
    if (s.writeLayerTypes || !s.slidingLayers.empty()) {
        QJsonArray types;
        for (int l = 0; l < s.n_layers; ++l) types.append(s.slidingLayer(l) ? "sliding_attention" : "full_attention");
        o.insert("layer_types", types);
    } else {
        o.insert("sliding_window_pattern", 6);
    }
    if (s.modelType != QLatin1String("gemma3")) return o;
    QJsonObject text = o;
    text.insert("model_type", "gemma3_text");
    for (const char* key : {"architectures", "torch_dtype", "bos_token_id", "eos_token_id", "tie_word_embeddings"}) text.remove(key);
    const std::pair<const char*, QJsonValue> defaults[] = {{"rms_norm_eps", 1e-6}, {"query_pre_attn_scalar", 256},
                                                           {"rope_theta", 1e6}, {"rope_local_base_freq", 1e4},
                                                           {"hidden_activation", "gelu_pytorch_tanh"}};
    for (const auto& [key, value] : defaults)
        if (value.isDouble() ? text.value(QLatin1String(key)).toDouble(-1) == value.toDouble() : text.value(QLatin1String(key)) == value)
            text.remove(QLatin1String(key));
    return QJsonObject{{"architectures", o.value("architectures")},
                       {"model_type", "gemma3"},
                       {"text_config", text},
                       {"vision_config", QJsonObject{{"model_type", "siglip_vision_model"}, {"hidden_size", 8}}},
                       {"mm_tokens_per_image", 256},
                       {"boi_token_index", 255999},
                       {"eos_token_id", QJsonArray{s.eos, 106}},
                       {"bos_token_id", s.bos},
                       {"torch_dtype", "float32"}};
}

} // namespace

QJsonObject hfLlamaConfig(const LlamaSpec& s) {
    const QString arch = s.modelType == QLatin1String("mistral") ? QStringLiteral("MistralForCausalLM")
                         : s.modelType == QLatin1String("qwen2") ? QStringLiteral("Qwen2ForCausalLM")
                         : s.modelType == QLatin1String("qwen3") ? QStringLiteral("Qwen3ForCausalLM")
                         : s.modelType == QLatin1String("gemma2") ? QStringLiteral("Gemma2ForCausalLM")
                         : s.modelType == QLatin1String("gemma3_text") ? QStringLiteral("Gemma3ForCausalLM")
                         : s.modelType == QLatin1String("gemma3")      ? QStringLiteral("Gemma3ForConditionalGeneration")
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
    if (s.isGemma3()) return gemma3Config(s, o);
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
    // Gemma3ForConditionalGeneration: the text model under its prefix, beside vision tensors the loader must not read
    const QString model = s.modelType == QLatin1String("gemma3") ? s.languageModelPrefix : QStringLiteral("model.");
    std::vector<FixtureTensor> out;
    if (s.modelType == QLatin1String("gemma3")) {
        const QString vision = model.startsWith(QLatin1String("model.")) ? QStringLiteral("model.") : QString();
        out.push_back(tensor(vision + "vision_tower.vision_model.embeddings.patch_embedding.weight",
                             std::vector<float>(8 * 3 * 2 * 2, 0.5f), {8, 3, 2, 2}, storage));
        out.push_back(tensor(vision + "multi_modal_projector.mm_input_projection_weight", std::vector<float>(8 * size_t(D), 0.25f),
                             {8, D}, storage));
    }
    out.push_back(tensor(model + "embed_tokens.weight", c.embed_tokens, {V, D}, storage));
    for (int i = 0; i < s.n_layers; ++i) {
        const LlamaLayerTensors& l = c.layers[size_t(i)];
        const QString p = model + QStringLiteral("layers.%1.").arg(i);
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
    out.push_back(tensor(model + "norm.weight", c.norm, {D}, storage));
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
