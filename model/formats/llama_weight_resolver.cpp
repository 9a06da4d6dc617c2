#include "model/formats/llama_weight_resolver.h"

#include "model/core/errors.h"
#include "model/formats/safetensors_weights.h"

#include <cstring>

namespace attnscope {

int LlamaWeightResolver::tensorCount(const ModelConfig& config) {
    return 3 + (9 + (config.qkNorm ? 2 : 0) + (config.postNorms ? 2 : 0)) * config.n_layers;
}

LlamaWeightResolver::LlamaWeightResolver(const ModelConfig& config, TensorSet tensors, const QString& sourceLabel,
                                         const QString& configLabel, const Progress& progress, qint64 progressDone,
                                         qint64 progressTotal)
    : config_(config), tensors_(std::move(tensors)), layers_(size_t(config.n_layers)), layerBuffers_(size_t(config.n_layers)) {
    // Gemma3ForConditionalGeneration (model_type gemma3) keeps the text model under language_model.model. (transformers
    // 4.x) or model.language_model. (later); its vision tower's tensors are not read
    const bool multimodal = config.modelType == QLatin1String("gemma3");
    const QStringList prefixes = multimodal ? QStringList{QStringLiteral("model.language_model."), QStringLiteral("language_model.model.")}
                                            : QStringList{QStringLiteral("model.")};
    TensorChecker check(tensors_, prefixes, sourceLabel, configLabel, &progress, progressDone, progressTotal);
    const std::int64_t D = config.d_model, V = config.d_vocab, M = config.d_mlp;
    const std::int64_t QD = std::int64_t(config.n_heads) * config.d_head, KD = std::int64_t(config.n_kv_heads) * config.d_head;
    embed_ = check.require(QStringLiteral("embed_tokens.weight"), {V, D});
    for (int l = 0; l < config.n_layers; ++l) {
        const QString p = QStringLiteral("layers.%1.").arg(l);
        LayerRefs& r = layers_[size_t(l)];
        r.ln1 = check.require(p + QStringLiteral("input_layernorm.weight"), {D});
        r.q = check.require(p + QStringLiteral("self_attn.q_proj.weight"), {QD, D});
        r.k = check.require(p + QStringLiteral("self_attn.k_proj.weight"), {KD, D});
        r.v = check.require(p + QStringLiteral("self_attn.v_proj.weight"), {KD, D});
        r.o = check.require(p + QStringLiteral("self_attn.o_proj.weight"), {D, QD});
        r.q_b = check.optional(p + QStringLiteral("self_attn.q_proj.bias"), {QD});
        r.k_b = check.optional(p + QStringLiteral("self_attn.k_proj.bias"), {KD});
        r.v_b = check.optional(p + QStringLiteral("self_attn.v_proj.bias"), {KD});
        r.o_b = check.optional(p + QStringLiteral("self_attn.o_proj.bias"), {D});
        if (config.qkNorm) { // Qwen 3, Gemma 3: RMSNorm weights over head_dim
            r.q_norm = check.require(p + QStringLiteral("self_attn.q_norm.weight"), {config.d_head});
            r.k_norm = check.require(p + QStringLiteral("self_attn.k_norm.weight"), {config.d_head});
        }
        if (config.postNorms) { // Gemma 2: post_attention_layernorm is the attention's post-norm, pre_feedforward_layernorm ln_2
            r.ln1_post = check.require(p + QStringLiteral("post_attention_layernorm.weight"), {D});
            r.ln2 = check.require(p + QStringLiteral("pre_feedforward_layernorm.weight"), {D});
            r.ln2_post = check.require(p + QStringLiteral("post_feedforward_layernorm.weight"), {D});
        } else {
            r.ln2 = check.require(p + QStringLiteral("post_attention_layernorm.weight"), {D});
        }
        r.gate = check.require(p + QStringLiteral("mlp.gate_proj.weight"), {M, D});
        r.up = check.require(p + QStringLiteral("mlp.up_proj.weight"), {M, D});
        r.down = check.require(p + QStringLiteral("mlp.down_proj.weight"), {D, M});
        // LlamaConfig.mlp_bias: the forward's gated MLP has no gate bias, so refuse rather than drop them silently
        for (const char* proj : {"gate_proj", "up_proj", "down_proj"})
            for (const QString& prefix : QStringList{QString()} + prefixes)
                if (const QString bias = prefix + p + QStringLiteral("mlp.%1.bias").arg(QLatin1String(proj)); tensors_.find(bias))
                    throw ModelError(sourceLabel, QStringLiteral("tensor %1: MLP biases (mlp_bias) are not supported").arg(bias));
    }
    norm_ = check.require(QStringLiteral("norm.weight"), {D});
    const QString head = multimodal && !tensors_.find(QStringLiteral("lm_head.weight")) ? QStringLiteral("language_model.lm_head.weight")
                                                                                       : QStringLiteral("lm_head.weight");
    if (tensors_.find(head))
        lm_head_ = check.require(head, {V, D});
    else
        check.step(QStringLiteral("W_U tied to embed_tokens.weight"));
    storageDtype_ = check.storageDtype();
}

Weight LlamaWeightResolver::plusOne(const Weight& w, std::vector<std::vector<unsigned char>>& buffers) {
    const RowVector v = w.rowVector(0).array() + 1.0f;
    buffers.emplace_back(size_t(v.size()) * sizeof(float));
    std::memcpy(buffers.back().data(), v.data(), buffers.back().size());
    return f32Weight(reinterpret_cast<const float*>(buffers.back().data()), 1, v.size());
}

GlobalWeights LlamaWeightResolver::globals() {
    const Eigen::Index D = config_.d_model, V = config_.d_vocab;
    GlobalWeights g;
    g.W_E = tensorWeight(embed_, V, D, false, globalBuffers_);
    g.ln_final_w = tensorWeight(norm_, 1, D, false, globalBuffers_);
    if (config_.postNorms) g.ln_final_w = plusOne(g.ln_final_w, globalBuffers_);
    g.W_U_T = lm_head_.tensor ? tensorWeight(lm_head_, V, D, false, globalBuffers_) : g.W_E;
    return g;
}

LayerWeights LlamaWeightResolver::layer(int l) {
    const Eigen::Index D = config_.d_model, M = config_.d_mlp;
    const Eigen::Index QD = Eigen::Index(config_.n_heads) * config_.d_head, KD = Eigen::Index(config_.n_kv_heads) * config_.d_head;
    const LayerRefs& r = layers_[size_t(l)];
    auto& buffers = layerBuffers_[size_t(l)];
    auto linear = [&](const TensorRef& t, Eigen::Index in, Eigen::Index out) { return tensorWeight(t, in, out, true, buffers); };
    auto vec = [&](const TensorRef& t, Eigen::Index n) { return t.tensor ? tensorWeight(t, 1, n, false, buffers) : Weight{}; };
    // Gemma's RMSNorm multiplies by (1 + w) (Gemma2RMSNorm): the canonical weight is that sum
    auto norm = [&](const TensorRef& t, Eigen::Index n) { return config_.postNorms ? plusOne(vec(t, n), buffers) : vec(t, n); };
    LayerWeights w;
    w.ln1_w = norm(r.ln1, D);
    w.W_Q = linear(r.q, D, QD);
    w.W_K = linear(r.k, D, KD);
    w.W_V = linear(r.v, D, KD);
    w.b_Q = vec(r.q_b, QD);
    w.b_K = vec(r.k_b, KD);
    w.b_V = vec(r.v_b, KD);
    w.W_O = linear(r.o, QD, D);
    w.b_O = vec(r.o_b, D);
    if (r.q_norm.tensor) w.q_norm_w = norm(r.q_norm, config_.d_head); // Gemma 3: (1 + w) as its other norms
    if (r.k_norm.tensor) w.k_norm_w = norm(r.k_norm, config_.d_head);
    w.ln2_w = norm(r.ln2, D);
    if (r.ln1_post.tensor) w.ln1_post_w = norm(r.ln1_post, D);
    if (r.ln2_post.tensor) w.ln2_post_w = norm(r.ln2_post, D);
    w.W_gate = linear(r.gate, D, M);
    w.W_in = linear(r.up, D, M);
    w.W_out = linear(r.down, M, D);
    return w;
}

} // namespace attnscope
