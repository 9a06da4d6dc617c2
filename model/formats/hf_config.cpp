#include "model/formats/hf_config.h"

#include "model/core/errors.h"
#include "model/formats/json_file.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonObject>
#include <QStringList>
#include <algorithm>
#include <climits>
#include <cmath>

namespace attnscope {

namespace {

/// Reads config fields, each error naming the file and the field.
class ConfigReader {
public:
    ConfigReader(const QJsonObject& o, const QString& file) : o_(o), file_(file) {}

    [[noreturn]] void fail(const QString& problem) const { throw ModelError(file_, problem); }

    /// A required positive integer (a size). `fallback` is a second field name tried when `key` is absent.
    int positiveInt(const QString& key, const QString& fallback = {}) const {
        QString used = key;
        QJsonValue v = o_.value(key);
        if ((v.isUndefined() || v.isNull()) && !fallback.isEmpty()) {
            used = fallback;
            v = o_.value(fallback);
        }
        if (v.isUndefined() || v.isNull())
            fail(fallback.isEmpty() ? QStringLiteral("missing field %1").arg(key)
                                    : QStringLiteral("missing field %1 (or %2)").arg(key, fallback));
        return positiveValue(used, v);
    }

    /// An optional positive integer; `dflt` when absent or null.
    int positiveIntOr(const QString& key, int dflt) const {
        const QJsonValue v = o_.value(key);
        return v.isUndefined() || v.isNull() ? dflt : positiveValue(key, v);
    }

    bool boolOr(const QString& key, bool dflt) const {
        const QJsonValue v = o_.value(key);
        if (v.isUndefined() || v.isNull()) return dflt;
        if (!v.isBool()) fail(QStringLiteral("%1 must be true or false").arg(key));
        return v.toBool();
    }

    /// A token id: non-negative integer, or -1 when absent/null; of a list (Gemma 3's and Llama 3.1's eos_token_id
    /// [1, 106]) the first.
    int tokenIdOr(const QString& key) const {
        QJsonValue v = o_.value(key);
        if (v.isArray() && !v.toArray().isEmpty()) v = v.toArray().first();
        if (v.isUndefined() || v.isNull()) return -1;
        const double d = v.toDouble(-1);
        if (!v.isDouble() || d < 0 || d != std::floor(d) || d > INT_MAX)
            fail(QStringLiteral("%1 must be a non-negative integer").arg(key));
        return int(d);
    }

    double positiveNumberOr(const QString& key, double dflt) const {
        const QJsonValue v = o_.value(key);
        if (v.isUndefined() || v.isNull()) return dflt;
        const double d = v.toDouble(-1);
        if (!v.isDouble() || !(d > 0) || !std::isfinite(d)) fail(QStringLiteral("%1 must be a positive number").arg(key));
        return d;
    }

    QString stringOr(const QString& key, const QString& dflt) const {
        const QJsonValue v = o_.value(key);
        if (v.isUndefined() || v.isNull()) return dflt;
        if (!v.isString()) fail(QStringLiteral("%1 must be a string").arg(key));
        return v.toString();
    }

private:
    int positiveValue(const QString& key, const QJsonValue& v) const {
        if (!v.isDouble()) fail(QStringLiteral("%1 must be a positive integer (got %2)").arg(key, describe(v)));
        const double d = v.toDouble();
        if (d != std::floor(d) || d <= 0)
            fail(QStringLiteral("%1 must be a positive integer (got %2)").arg(key).arg(d));
        if (d > INT_MAX) fail(QStringLiteral("%1 is too large (got %2)").arg(key).arg(d));
        return int(d);
    }

    static QString describe(const QJsonValue& v) {
        if (v.isString()) return QStringLiteral("\"%1\"").arg(v.toString());
        if (v.isBool()) return v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
        if (v.isArray()) return QStringLiteral("an array");
        if (v.isObject()) return QStringLiteral("an object");
        return QStringLiteral("null");
    }

    QJsonObject o_;
    QString file_;
};

ModelConfig parseGpt2(const ConfigReader& r) {
    ModelConfig c;
    c.modelType = QStringLiteral("gpt2");
    c.architecture = c.modelType;
    c.n_layers = r.positiveInt(QStringLiteral("n_layer"));
    c.n_heads = r.positiveInt(QStringLiteral("n_head"));
    c.n_kv_heads = c.n_heads;
    c.d_model = r.positiveInt(QStringLiteral("n_embd"));
    if (c.d_model % c.n_heads != 0)
        r.fail(QStringLiteral("n_embd (%1) is not divisible by n_head (%2)").arg(c.d_model).arg(c.n_heads));
    c.d_head = c.d_model / c.n_heads;
    if (c.d_model > INT_MAX / 4) r.fail(QStringLiteral("n_embd is too large (got %1)").arg(c.d_model));
    c.d_mlp = r.positiveIntOr(QStringLiteral("n_inner"), 4 * c.d_model);
    c.n_ctx = r.positiveInt(QStringLiteral("n_positions"), QStringLiteral("n_ctx"));
    c.d_vocab = r.positiveInt(QStringLiteral("vocab_size"));
    c.norm_eps = r.positiveNumberOr(QStringLiteral("layer_norm_epsilon"), 1e-5);
    c.norm = NormKind::LayerNorm;
    c.positions = PositionKind::Learned;
    c.gatedMlp = false;

    const QString act = r.stringOr(QStringLiteral("activation_function"), QStringLiteral("gelu_new"));
    if (act == QLatin1String("gelu_new") || act == QLatin1String("gelu_pytorch_tanh"))
        c.activation = ActivationKind::GeluNew;
    else if (act == QLatin1String("gelu"))
        c.activation = ActivationKind::GeluExact;
    else if (act == QLatin1String("relu"))
        c.activation = ActivationKind::Relu;
    else
        r.fail(QStringLiteral("unsupported activation_function '%1'; supported: gelu_new, gelu_pytorch_tanh, gelu, relu").arg(act));

    c.scale_attn_weights = r.boolOr(QStringLiteral("scale_attn_weights"), true);
    c.scale_attn_by_inverse_layer_idx = r.boolOr(QStringLiteral("scale_attn_by_inverse_layer_idx"), false);
    c.bos_token_id = r.tokenIdOr(QStringLiteral("bos_token_id"));
    c.eos_token_id = r.tokenIdOr(QStringLiteral("eos_token_id"));
    return c;
}

/// A RoPE scaling object `rs` named `field` in errors: {"type"|"rope_type": "linear", "factor"} or "llama3" with
/// factor, low_freq_factor, high_freq_factor, original_max_position_embeddings (HF modeling_rope_utils); "default"
/// or no type = none.
RopeScaling parseRopeScalingObject(const ConfigReader& r, const QJsonObject& rs, const QString& field) {
    RopeScaling s;
    QString type = rs.value(QLatin1String("rope_type")).toString();
    if (type.isEmpty()) type = rs.value(QLatin1String("type")).toString();
    if (type.isEmpty() && !rs.contains(QLatin1String("factor"))) return s; // transformers 5: {"rope_theta": …} alone
    auto number = [&](const char* key, double dflt) {
        const QJsonValue x = rs.value(QLatin1String(key));
        if (x.isUndefined() || x.isNull()) return dflt;
        if (!x.isDouble() || !(x.toDouble() > 0) || !std::isfinite(x.toDouble()))
            r.fail(QStringLiteral("%1.%2 must be a positive number").arg(field, QLatin1String(key)));
        return x.toDouble();
    };
    if (type == QLatin1String("default")) return s;
    if (type == QLatin1String("linear")) {
        s.kind = RopeScaling::Kind::Linear;
        s.factor = number("factor", 1.0);
    } else if (type == QLatin1String("llama3")) {
        s.kind = RopeScaling::Kind::Llama3;
        s.factor = number("factor", 8.0);
        s.low_freq_factor = number("low_freq_factor", 1.0);
        s.high_freq_factor = number("high_freq_factor", 4.0);
        if (!(s.high_freq_factor > s.low_freq_factor))
            r.fail(QStringLiteral("%1.high_freq_factor must exceed low_freq_factor").arg(field));
        s.original_max_position_embeddings = int(number("original_max_position_embeddings", 8192));
    } else {
        r.fail(QStringLiteral("unsupported %1 type '%2'; supported: linear, llama3").arg(field, type));
    }
    return s;
}

/// config.json rope_scaling: null/absent (none) or an object (parseRopeScalingObject).
RopeScaling parseRopeScaling(const ConfigReader& r, const QJsonObject& o) {
    const QJsonValue v = o.value(QLatin1String("rope_scaling"));
    if (v.isUndefined() || v.isNull()) return {};
    if (!v.isObject()) r.fail(QStringLiteral("rope_scaling must be an object or null"));
    return parseRopeScalingObject(r, v.toObject(), QStringLiteral("rope_scaling"));
}

/// config.json layer_types (transformers' per-layer attention kinds): [layer] 1 for "sliding_attention", 0 for
/// "full_attention"; empty when the field is absent. Fails on another length or entry.
std::vector<char> slidingLayerTypes(const ConfigReader& r, const QJsonObject& o, int nLayers) {
    const QJsonValue types = o.value(QLatin1String("layer_types"));
    if (!types.isArray()) return {};
    const QJsonArray a = types.toArray();
    if (a.size() != nLayers)
        r.fail(QStringLiteral("layer_types has %1 entries but num_hidden_layers is %2").arg(a.size()).arg(nLayers));
    std::vector<char> sliding;
    for (const QJsonValue& t : a) {
        sliding.push_back(t.toString() == QLatin1String("sliding_attention"));
        if (!sliding.back() && t.toString() != QLatin1String("full_attention"))
            r.fail(QStringLiteral("layer_types: unsupported entry '%1'; supported: full_attention, sliding_attention").arg(t.toString()));
    }
    return sliding;
}

/// Qwen2's use_sliding_window windows only some layers (transformers Qwen2Config.layer_types): those marked
/// "sliding_attention" in layer_types, or by default layers i ≥ max_window_layers (default 28). True when every
/// layer is windowed, false when none is; a mix cannot be described by one ModelConfig::sliding_window and fails.
bool qwen2WindowOnEveryLayer(const ConfigReader& r, const QJsonObject& o, int nLayers) {
    int windowed = 0;
    if (const std::vector<char> sliding = slidingLayerTypes(r, o, nLayers); !sliding.empty()) {
        windowed = int(std::count(sliding.begin(), sliding.end(), char(1)));
    } else {
        const QJsonValue m = o.value(QLatin1String("max_window_layers"));
        const double first = m.isUndefined() || m.isNull() ? 28 : m.toDouble(-1);
        if (!m.isUndefined() && !m.isNull() && (!m.isDouble() || first < 0 || first != std::floor(first)))
            r.fail(QStringLiteral("max_window_layers must be a non-negative integer"));
        windowed = first >= nLayers ? 0 : nLayers - int(first);
    }
    if (windowed > 0 && windowed < nLayers)
        r.fail(QStringLiteral("use_sliding_window applies to %1 of the %2 layers (max_window_layers / layer_types): a sliding "
                              "window on some layers only is not supported").arg(windowed).arg(nLayers));
    return windowed == nLayers;
}

/// A soft-cap field: absent or null = none (0), else a positive number.
double softcapOr(const ConfigReader& r, const QJsonObject& o, const QString& key, double dflt) {
    const QJsonValue v = o.value(key);
    if (v.isNull()) return 0;
    if (v.isUndefined()) return dflt;
    const double d = v.toDouble(-1);
    if (!v.isDouble() || !(d > 0) || !std::isfinite(d))
        r.fail(QStringLiteral("%1 must be a positive number or null (got %2)").arg(key, v.isDouble() ? QString::number(d) : QStringLiteral("a non-number")));
    return d;
}

/// transformers Gemma2Config and Gemma3TextConfig beyond the Llama fields: (1 + w) RMSNorms (the resolver adds the 1),
/// four norms per layer, the embedding scaled by √hidden_size, query_pre_attn_scalar (default 256),
/// attn_logit_softcapping and final_logit_softcapping (Gemma 2: 50 and 30 by default, Gemma 3: none; null = none),
/// sliding_window (4096) on the layers layer_types marks "sliding_attention", by default those with (i + 1) % pattern
/// ≠ 0: Gemma 2 the even ones (pattern 2, modeling_gemma2.py is_sliding = not bool(layer_idx % 2)), Gemma 3 five of
/// six (sliding_window_pattern, default 6).
void parseGemmaParts(const ConfigReader& r, const QJsonObject& o, ModelConfig& c, bool gemma3) {
    c.postNorms = true;
    c.embed_scale = double(float(std::sqrt(double(c.d_model)))); // float32; the loader rounds it to a BF16/F16 file's type
    c.query_pre_attn_scalar = r.positiveNumberOr(QStringLiteral("query_pre_attn_scalar"), 256.0);
    c.attn_logit_softcap = softcapOr(r, o, QStringLiteral("attn_logit_softcapping"), gemma3 ? 0.0 : 50.0);
    c.final_logit_softcap = softcapOr(r, o, QStringLiteral("final_logit_softcapping"), gemma3 ? 0.0 : 30.0);
    c.sliding_window = r.positiveIntOr(QStringLiteral("sliding_window"), std::min(4096, c.n_ctx)); // a default never exceeds
    if (c.sliding_window > c.n_ctx)
        r.fail(QStringLiteral("sliding_window (%1) is larger than max_position_embeddings (%2)").arg(c.sliding_window).arg(c.n_ctx));
    c.windowedLayers = slidingLayerTypes(r, o, c.n_layers);
    if (c.windowedLayers.empty()) {
        const int pattern = gemma3 ? r.positiveIntOr(QStringLiteral("sliding_window_pattern"), 6) : 2;
        c.windowedLayers.assign(size_t(c.n_layers), 0);
        for (int i = 0; i < c.n_layers; ++i) c.windowedLayers[size_t(i)] = (i + 1) % pattern != 0;
    }
}

/// Gemma 3's two RoPEs (transformers Gemma3TextModel: rotary_emb on full_attention layers, rotary_emb_local on
/// sliding_attention ones). transformers 4.x: rope_theta (default 1 000 000) and rope_scaling for the global layers,
/// rope_local_base_freq (10 000) unscaled for the local ones. transformers 5: rope_parameters keyed by layer type,
/// {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}, "sliding_attention": {"rope_type":
/// "default", "rope_theta": 1e4}} (an entry without rope_theta takes the 4.x field or its default); rope_scaling keyed
/// the same way is read alike.
void parseGemma3Rope(const ConfigReader& r, const QJsonObject& o, ModelConfig& c) {
    c.rotary_base = r.positiveNumberOr(QStringLiteral("rope_theta"), 1e6);
    c.local_rotary_base = r.positiveNumberOr(QStringLiteral("rope_local_base_freq"), 1e4);
    c.local_rope_scaling = {};
    QString name = QStringLiteral("rope_parameters");
    QJsonValue params = o.value(name);
    // some re-saved checkpoints key rope_scaling itself by layer type ({"full_attention": {"rope_type": "linear", …}})
    const QJsonObject scalingObject = o.value(QLatin1String("rope_scaling")).toObject();
    if ((params.isUndefined() || params.isNull()) &&
        (scalingObject.contains(QLatin1String("full_attention")) || scalingObject.contains(QLatin1String("sliding_attention")))) {
        name = QStringLiteral("rope_scaling");
        params = scalingObject;
    }
    if (params.isUndefined() || params.isNull()) return; // rope_scaling was read with the Llama fields
    if (!params.isObject()) r.fail(QStringLiteral("rope_parameters must be an object or null"));
    const QJsonObject p = params.toObject();
    for (auto it = p.begin(); it != p.end(); ++it)
        if (it.key() != QLatin1String("full_attention") && it.key() != QLatin1String("sliding_attention"))
            r.fail(QStringLiteral("%1: unsupported layer type '%2'; supported: full_attention, sliding_attention").arg(name, it.key()));
    c.rope_scaling = {}; // the keyed entries say it (a keyed rope_scaling read as one scaling would be none)
    auto entry = [&](const char* type, double& base, RopeScaling& scaling) {
        const QString field = QStringLiteral("%1.%2").arg(name, QLatin1String(type));
        const QJsonValue v = p.value(QLatin1String(type));
        if (v.isUndefined() || v.isNull()) return;
        if (!v.isObject()) r.fail(QStringLiteral("%1 must be an object").arg(field));
        const QJsonObject e = v.toObject();
        const QJsonValue theta = e.value(QLatin1String("rope_theta"));
        if (!theta.isUndefined() && !theta.isNull()) {
            if (!theta.isDouble() || !(theta.toDouble() > 0) || !std::isfinite(theta.toDouble()))
                r.fail(QStringLiteral("%1.rope_theta must be a positive number").arg(field));
            base = theta.toDouble();
        }
        scaling = parseRopeScalingObject(r, e, field);
    };
    entry("full_attention", c.rotary_base, c.rope_scaling);
    entry("sliding_attention", c.local_rotary_base, c.local_rope_scaling);
}

/// transformers Gemma3TextConfig's defaults, where they differ from the Llama family's, for the fields a config may leave
/// out (the 4B+ checkpoints' text_config names little more than the sizes, the window and the scaling); head_dim (256),
/// rms_norm_eps (1e-6), query_pre_attn_scalar (256), sliding_window (4096), the activation and the tied head default
/// as Gemma 2's.
QJsonObject withGemma3Defaults(QJsonObject o) {
    const std::pair<const char*, QJsonValue> defaults[] = {{"num_attention_heads", 8},        {"num_key_value_heads", 4},
                                                           {"vocab_size", 262208},           {"max_position_embeddings", 131072},
                                                           {"bos_token_id", 2},              {"eos_token_id", 1}};
    for (const auto& [key, value] : defaults)
        if (o.value(QLatin1String(key)).isUndefined()) o.insert(QLatin1String(key), value);
    return o;
}

/// transformers LlamaConfig / MistralConfig / Qwen2Config: hidden_size, intermediate_size,
/// num_hidden_layers, num_attention_heads, num_key_value_heads (default num_attention_heads), head_dim
/// (default hidden_size / num_attention_heads), max_position_embeddings, vocab_size, rms_norm_eps
/// (default 1e-6), rope_theta (default 10000), rope_scaling, hidden_act (silu), Mistral's sliding_window
/// (Qwen2's only when use_sliding_window, and on the layers max_window_layers / layer_types say: all or
/// none). Weights in HF layout: rotary pairs (i, i + d_head/2). Qwen3Config adds the per-head q/k RMSNorm
/// (qkNorm), head_dim defaulting to 128, and windows as Qwen2's; Gemma2Config: parseGemmaParts; Gemma3TextConfig
/// (model_type gemma3_text): Gemma 2's blocks with (1 + w) q/k norms, no soft-caps by default, the 5:1 pattern and
/// two RoPEs (parseGemma3Rope).
ModelConfig parseLlamaFamily(const ConfigReader& r, const QJsonObject& o, const QString& type) {
    ModelConfig c;
    c.modelType = type;
    c.architecture = type;
    c.n_layers = r.positiveInt(QStringLiteral("num_hidden_layers"));
    c.n_heads = r.positiveInt(QStringLiteral("num_attention_heads"));
    c.n_kv_heads = r.positiveIntOr(QStringLiteral("num_key_value_heads"), c.n_heads);
    if (c.n_heads % c.n_kv_heads != 0)
        r.fail(QStringLiteral("num_attention_heads (%1) is not a multiple of num_key_value_heads (%2)").arg(c.n_heads).arg(c.n_kv_heads));
    c.d_model = r.positiveInt(QStringLiteral("hidden_size"));
    if (c.d_model > INT_MAX / 4) r.fail(QStringLiteral("hidden_size is too large (got %1)").arg(c.d_model));
    const bool explicitHeadDim = !o.value(QLatin1String("head_dim")).isUndefined() && !o.value(QLatin1String("head_dim")).isNull();
    if (!explicitHeadDim && c.d_model % c.n_heads != 0)
        r.fail(QStringLiteral("hidden_size (%1) is not divisible by num_attention_heads (%2)").arg(c.d_model).arg(c.n_heads));
    // Qwen3Config's and Gemma2Config's head_dim defaults are 128 and 256, not hidden_size / num_attention_heads
    // (Qwen3-0.6B's 16 heads of 128 span 2048 > 1024)
    const bool qwen3 = type == QLatin1String("qwen3"), gemma3 = type == QLatin1String("gemma3_text");
    const bool gemma2 = type == QLatin1String("gemma2"), gemma = gemma2 || gemma3;
    c.d_head = r.positiveIntOr(QStringLiteral("head_dim"), qwen3 ? 128 : gemma ? 256 : c.d_model / c.n_heads);
    c.qkNorm = qwen3 || gemma3;
    if (c.d_head % 2 != 0) r.fail(QStringLiteral("head_dim must be even for rotary embeddings (got %1)").arg(c.d_head));
    if (qint64(c.d_head) * c.n_heads > INT_MAX / 4) r.fail(QStringLiteral("head_dim × num_attention_heads is too large"));
    c.d_mlp = r.positiveInt(QStringLiteral("intermediate_size"));
    c.n_ctx = r.positiveInt(QStringLiteral("max_position_embeddings"));
    c.d_vocab = r.positiveInt(QStringLiteral("vocab_size"));
    c.norm_eps = r.positiveNumberOr(QStringLiteral("rms_norm_eps"), 1e-6);
    c.norm = NormKind::RMSNorm;
    c.positions = PositionKind::Rotary;
    c.rope_layout = RopeLayout::HalfSplit;
    c.rotary_base = r.positiveNumberOr(QStringLiteral("rope_theta"), 10000.0);
    c.rope_scaling = parseRopeScaling(r, o);
    c.gatedMlp = true;
    // Gemma 2 names it hidden_activation (gelu_pytorch_tanh), older configs hidden_act
    const QString act = gemma && o.contains(QLatin1String("hidden_activation"))
                            ? r.stringOr(QStringLiteral("hidden_activation"), QStringLiteral("gelu_pytorch_tanh"))
                            : r.stringOr(QStringLiteral("hidden_act"), gemma ? QStringLiteral("gelu_pytorch_tanh") : QStringLiteral("silu"));
    if (act == QLatin1String("silu") || act == QLatin1String("swish")) c.activation = ActivationKind::Silu;
    else if (act == QLatin1String("gelu_pytorch_tanh") || act == QLatin1String("gelu_new")) c.activation = ActivationKind::GeluNew;
    else if (act == QLatin1String("gelu")) c.activation = ActivationKind::GeluExact;
    else r.fail(QStringLiteral("unsupported hidden_act '%1'; supported: silu, gelu, gelu_pytorch_tanh").arg(act));
    c.scale_attn_weights = true;
    // sliding window: Mistral's applies whenever it is set; Qwen2's only with use_sliding_window
    const bool window = type == QLatin1String("mistral") || r.boolOr(QStringLiteral("use_sliding_window"), false);
    if (window) c.sliding_window = r.positiveIntOr(QStringLiteral("sliding_window"), 0);
    if (window && (type == QLatin1String("qwen2") || qwen3) && c.sliding_window > 0 && !qwen2WindowOnEveryLayer(r, o, c.n_layers))
        c.sliding_window = 0;
    if (gemma) parseGemmaParts(r, o, c, gemma3);
    if (gemma3) parseGemma3Rope(r, o, c);
    c.tie_word_embeddings = r.boolOr(QStringLiteral("tie_word_embeddings"), gemma); // the resolver goes by lm_head.weight
    c.bos_token_id = r.tokenIdOr(QStringLiteral("bos_token_id"));
    c.eos_token_id = r.tokenIdOr(QStringLiteral("eos_token_id"));
    return c;
}

} // namespace

QStringList supportedModelTypes() {
    return {QStringLiteral("gpt2"),  QStringLiteral("llama"),  QStringLiteral("mistral"),     QStringLiteral("qwen2"),
            QStringLiteral("qwen3"), QStringLiteral("gemma2"), QStringLiteral("gemma3_text"), QStringLiteral("gemma3")};
}

ModelConfig parseHfConfig(const QByteArray& json, const QString& file) {
    const QJsonObject o = parseJsonObject(json, file);
    const ConfigReader r(o, file);
    const QString supported = supportedModelTypes().join(QLatin1String(", "));
    const QJsonValue type = o.value(QLatin1String("model_type"));
    if (!type.isString()) r.fail(QStringLiteral("missing model_type; supported: %1").arg(supported));
    if (type.toString() == QLatin1String("gpt2")) return parseGpt2(r);
    if (type.toString() == QLatin1String("llama") || type.toString() == QLatin1String("mistral") ||
        type.toString() == QLatin1String("qwen2") || type.toString() == QLatin1String("qwen3") ||
        type.toString() == QLatin1String("gemma2"))
        return parseLlamaFamily(r, o, type.toString());
    if (type.toString() == QLatin1String("gemma3_text")) {
        const QJsonObject d = withGemma3Defaults(o);
        return parseLlamaFamily(ConfigReader(d, file), d, type.toString());
    }
    if (type.toString() == QLatin1String("gemma3")) { // Gemma3ForConditionalGeneration: the text model's config in text_config
        const QJsonValue text = o.value(QLatin1String("text_config"));
        if (!text.isObject())
            r.fail(QStringLiteral("model_type 'gemma3' without a text_config object (Gemma3Config keeps the text model's "
                                  "fields there)"));
        QJsonObject t = text.toObject();
        for (const char* key : {"bos_token_id", "eos_token_id", "tie_word_embeddings"}) // Gemma3Config keeps these at the top
            if (t.value(QLatin1String(key)).isUndefined() && !o.value(QLatin1String(key)).isUndefined())
                t.insert(QLatin1String(key), o.value(QLatin1String(key)));
        t = withGemma3Defaults(t);
        ModelConfig c = parseLlamaFamily(ConfigReader(t, file + QStringLiteral(" (text_config)")), t, QStringLiteral("gemma3_text"));
        c.modelType = c.architecture = QStringLiteral("gemma3");
        return c;
    }
    if (type.toString() == QLatin1String("qwen3_moe"))
        r.fail(QStringLiteral("model_type 'qwen3_moe': Qwen 3 mixture-of-experts models are not supported (their MLPs are routed "
                              "experts); the dense Qwen 3 models (model_type 'qwen3') are"));
    r.fail(QStringLiteral("unsupported model_type '%1'; supported: %2").arg(type.toString(), supported));
}

ModelConfig loadHfConfig(const QString& path, const QString& fileLabel) {
    const QString label = fileLabel.isEmpty() ? QFileInfo(path).fileName() : fileLabel;
    return parseHfConfig(readSmallFile(path, label, 16 * 1024 * 1024), label);
}

} // namespace attnscope
