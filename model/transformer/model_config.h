#pragma once
// Architecture description: hyper-parameters and which block variants a model uses.
// The forward pass and the analyses read only this and the canonical weights, so a second
// family (Llama: RMSNorm, rotary, SwiGLU, grouped-query attention) slots in by setting the enums.

#include <QString>

namespace attnscope {

enum class NormKind { LayerNorm, RMSNorm };
enum class PositionKind { Learned, Rotary };
enum class ActivationKind {
    GeluNew,   ///< tanh approximation: 0.5x(1+tanh(√(2/π)(x+0.044715x³))) (HF "gelu_new", "gelu_pytorch_tanh")
    GeluExact, ///< x·Φ(x) with erf (HF "gelu")
    Relu,
    Silu       ///< x·σ(x), used gated (SwiGLU) in Llama
};

struct ModelConfig {
    QString modelType;          ///< config.json model_type, e.g. "gpt2"
    int n_layers = 0;
    int n_heads = 0;
    int n_kv_heads = 0;         ///< == n_heads for GPT-2 (no grouped-query attention)
    int d_model = 0;
    int d_head = 0;             ///< d_model / n_heads
    int d_mlp = 0;              ///< n_inner, 4*d_model when null
    int n_ctx = 0;              ///< n_positions
    int d_vocab = 0;
    double norm_eps = 1e-5;     ///< layer_norm_epsilon
    NormKind norm = NormKind::LayerNorm;
    PositionKind positions = PositionKind::Learned;
    ActivationKind activation = ActivationKind::GeluNew;
    bool gatedMlp = false;      ///< SwiGLU-style W_gate
    bool scale_attn_weights = true;               ///< divide scores by √d_head
    bool scale_attn_by_inverse_layer_idx = false; ///< also divide by (layer+1)
    double rotary_base = 10000.0;
    int bos_token_id = -1;      ///< -1 when unknown
    int eos_token_id = -1;

    /// The factor the raw scores Q·Kᵀ of `layer` are multiplied by (HF GPT2Attention._attn).
    double attnScale(int layer) const;
};

/// Display name of an activation kind ("gelu_new", ...).
QString activationName(ActivationKind kind);

} // namespace attnscope
