#include "model/formats/gpt2_weight_resolver.h"

#include "model/core/errors.h"
#include "model/formats/safetensors_weights.h"

#include <QtEndian>
#include <cstdint>

namespace attnscope {

namespace {
const QString kPrefix = QStringLiteral("transformer.");
}

int Gpt2WeightResolver::tensorCount(const ModelConfig& config) {
    return 5 + 12 * config.n_layers; // wte, wpe, ln_f.{weight,bias}, lm_head (checked or tied) + 12 per layer
}

Gpt2WeightResolver::Gpt2WeightResolver(const ModelConfig& config, TensorSet tensors, const QString& sourceLabel,
                                       const QString& configLabel, const Progress& progress, qint64 progressDone,
                                       qint64 progressTotal)
    : config_(config), tensors_(std::move(tensors)), layers_(size_t(config.n_layers)), layerBuffers_(size_t(config.n_layers)) {
    TensorChecker check(tensors_, {kPrefix}, sourceLabel, configLabel, &progress, progressDone, progressTotal);
    const std::int64_t D = config.d_model, V = config.d_vocab, C = config.n_ctx, M = config.d_mlp;
    wte_ = check.require(QStringLiteral("wte.weight"), {V, D});
    wpe_ = check.require(QStringLiteral("wpe.weight"), {C, D});
    for (int l = 0; l < config.n_layers; ++l) {
        const QString h = QStringLiteral("h.%1.").arg(l);
        LayerRefs& r = layers_[size_t(l)];
        r.ln1_w = check.require(h + QStringLiteral("ln_1.weight"), {D});
        r.ln1_b = check.require(h + QStringLiteral("ln_1.bias"), {D});
        r.c_attn_w = check.require(h + QStringLiteral("attn.c_attn.weight"), {D, 3 * D});
        r.c_attn_b = check.require(h + QStringLiteral("attn.c_attn.bias"), {3 * D});
        r.c_proj_w = check.require(h + QStringLiteral("attn.c_proj.weight"), {D, D});
        r.c_proj_b = check.require(h + QStringLiteral("attn.c_proj.bias"), {D});
        r.ln2_w = check.require(h + QStringLiteral("ln_2.weight"), {D});
        r.ln2_b = check.require(h + QStringLiteral("ln_2.bias"), {D});
        r.fc_w = check.require(h + QStringLiteral("mlp.c_fc.weight"), {D, M});
        r.fc_b = check.require(h + QStringLiteral("mlp.c_fc.bias"), {M});
        r.mlp_proj_w = check.require(h + QStringLiteral("mlp.c_proj.weight"), {M, D});
        r.mlp_proj_b = check.require(h + QStringLiteral("mlp.c_proj.bias"), {D});
    }
    lnf_w_ = check.require(QStringLiteral("ln_f.weight"), {D});
    lnf_b_ = check.require(QStringLiteral("ln_f.bias"), {D});
    if (check.has(QStringLiteral("lm_head.weight"))) {
        lm_head_ = check.require(QStringLiteral("lm_head.weight"), {V, D});
    } else {
        check.step(QStringLiteral("W_U tied to wte.weight"));
    }
    storageDtype_ = check.storageDtype();
}

QString Gpt2WeightResolver::storageDtype() const { return storageDtype_; }

Weight Gpt2WeightResolver::view(const TensorRef& ref, Eigen::Index rows, Eigen::Index cols,
                                std::vector<std::vector<unsigned char>>& buffers) {
    return tensorWeight(ref, rows, cols, false, buffers); // Conv1D [in, out] as stored
}

GlobalWeights Gpt2WeightResolver::globals() {
    const Eigen::Index D = config_.d_model, V = config_.d_vocab;
    GlobalWeights g;
    g.W_E = view(wte_, V, D, globalBuffers_);
    g.W_pos = view(wpe_, config_.n_ctx, D, globalBuffers_);
    g.ln_final_w = view(lnf_w_, 1, D, globalBuffers_);
    g.ln_final_b = view(lnf_b_, 1, D, globalBuffers_);
    g.W_U_T = lm_head_.tensor ? view(lm_head_, V, D, globalBuffers_) : g.W_E; // tied to wte
    return g;
}

LayerWeights Gpt2WeightResolver::layer(int l) {
    Q_ASSERT(l >= 0 && l < config_.n_layers);
    const Eigen::Index D = config_.d_model, M = config_.d_mlp;
    const LayerRefs& r = layers_[size_t(l)];
    std::vector<std::vector<unsigned char>>& buffers = layerBuffers_[size_t(l)];
    LayerWeights w;
    w.ln1_w = view(r.ln1_w, 1, D, buffers);
    w.ln1_b = view(r.ln1_b, 1, D, buffers);
    // c_attn is [d_model, 3*d_model] = [W_Q | W_K | W_V] (GPT2Attention: query, key, value = split(c_attn(x), 3)).
    const Weight qkv = view(r.c_attn_w, D, 3 * D, buffers);
    w.W_Q = qkv.colBlock(0, D);
    w.W_K = qkv.colBlock(D, D);
    w.W_V = qkv.colBlock(2 * D, D);
    const Weight qkvBias = view(r.c_attn_b, 1, 3 * D, buffers);
    w.b_Q = qkvBias.colBlock(0, D);
    w.b_K = qkvBias.colBlock(D, D);
    w.b_V = qkvBias.colBlock(2 * D, D);
    w.W_O = view(r.c_proj_w, D, D, buffers);
    w.b_O = view(r.c_proj_b, 1, D, buffers);
    w.ln2_w = view(r.ln2_w, 1, D, buffers);
    w.ln2_b = view(r.ln2_b, 1, D, buffers);
    w.W_in = view(r.fc_w, D, M, buffers);
    w.b_in = view(r.fc_b, 1, M, buffers);
    w.W_out = view(r.mlp_proj_w, M, D, buffers);
    w.b_out = view(r.mlp_proj_b, 1, D, buffers);
    return w;
}

} // namespace attnscope
