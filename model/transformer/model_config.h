#pragma once
// Architecture description: hyper-parameters and which block variants a model uses.
// The forward pass and the analyses read only this and the canonical weights, so a second
// family (Llama: RMSNorm, rotary, SwiGLU, grouped-query attention) slots in by setting the enums.

#include <QString>
#include <vector>

namespace attnscope {

enum class NormKind { LayerNorm, RMSNorm };
enum class PositionKind { Learned, Rotary };
/// Which dims of a head rotary embeddings rotate together (a file format's convention, read from the
/// file's own layout, never guessed): HalfSplit pairs (i, i + d_head/2), HF's rotate_half (Llama, Mistral and
/// Qwen2 checkpoints in HF layout; GGUF qwen2); Interleaved pairs (2i, 2i + 1), Meta's layout (llama2.c,
/// GGUF llama, whose converter permutes HF's Q/K rows back: convert_hf_to_gguf.py LlamaModel.permute).
enum class RopeLayout { HalfSplit, Interleaved };

/// Rotary frequency scaling (HF config.json rope_scaling).
struct RopeScaling {
    enum class Kind {
        None,
        Linear, ///< inv_freq / factor
        Llama3, ///< Llama 3.1+: long wavelengths / factor, short ones kept, smooth in between (HF _compute_llama3_parameters)
        Factors ///< inv_freq_i / freq_factors[i]: GGUF's rope_freqs.weight (llama.cpp stores Llama 3.1's scaling so)
    };
    Kind kind = Kind::None;
    double factor = 1.0;
    double low_freq_factor = 1.0;
    double high_freq_factor = 4.0;
    int original_max_position_embeddings = 8192;
    std::vector<double> freq_factors; ///< Factors: one per rotated pair (d_head/2)
};
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
    double rotary_base = 10000.0;  ///< rope_theta (Gemma 3: the global layers')
    RopeLayout rope_layout = RopeLayout::HalfSplit;
    RopeScaling rope_scaling;      ///< (Gemma 3: the global layers')
    /// Gemma 3: the RoPE of the sliding-window layers (those windowedLayers marks), which differs from the global layers'
    /// rotary_base and rope_scaling: base rope_local_base_freq (10 000 against rope_theta 1 000 000) and no scaling
    /// (transformers Gemma3TextModel.rotary_emb_local; llama.cpp rope_freq_base_train_swa). 0 = every layer uses
    /// rotary_base and rope_scaling.
    double local_rotary_base = 0;
    RopeScaling local_rope_scaling;
    int sliding_window = 0;     ///< Mistral: a query attends to at most this many keys (itself included); 0 = all
    /// Which layers the window applies to ([layer]; empty: every layer). Gemma 2 windows the even layers
    /// (transformers Gemma2Config.layer_types: "sliding_attention" when (i + 1) % 2, llama.cpp il % 2 == 0).
    std::vector<char> windowedLayers;
    bool tie_word_embeddings = true; ///< the unembedding is W_Eᵀ (no separate lm_head / output weight)
    /// Qwen 3 and Gemma 3: RMSNorm over each head's query and key (weights q_norm_w, k_norm_w [d_head], eps norm_eps)
    /// after the projection and before rotary embeddings (transformers modeling_qwen3.py Qwen3Attention; Gemma 3's gain is
    /// (1 + w), which the loaders store as the canonical weight).
    bool qkNorm = false;
    /// Gemma 2: RMSNorm on the attention output and on the MLP output before each is added to the residual stream
    /// (weights ln1_post_w, ln2_post_w; transformers Gemma2DecoderLayer post_attention_layernorm,
    /// post_feedforward_layernorm). attn_out and mlp_out are then the normed outputs.
    bool postNorms = false;
    /// Gemma 2: the scaled scores s become cap·tanh(s/cap) before the mask and softmax (attn_logit_softcapping); 0 = none.
    double attn_logit_softcap = 0;
    /// Gemma 2: the logits z become cap·tanh(z/cap) (final_logit_softcapping); 0 = none.
    double final_logit_softcap = 0;
    /// Gemma: the token embeddings are multiplied by this (√d_model, in the weights' dtype as transformers' Gemma2Model
    /// normalizer; in float32 for GGUF, as llama.cpp); 1 for the other families.
    double embed_scale = 1.0;
    /// Gemma 2: the scores are scaled by query_pre_attn_scalar^(−1/2) instead of d_head^(−1/2); 0 = d_head.
    double query_pre_attn_scalar = 0;
    QString architecture;       ///< what the file calls it, for display ("gpt2", "llama", "qwen2", GGUF general.architecture)
    int bos_token_id = -1;      ///< -1 when unknown
    int eos_token_id = -1;

    /// The factor the raw scores Q·Kᵀ of `layer` are multiplied by (HF GPT2Attention._attn; 1/√d_head
    /// for the Llama family).
    double attnScale(int layer) const;
    /// The sliding window of `layer` (sliding_window where windowedLayers marks the layer or is empty), 0 = none.
    int windowOf(int layer) const {
        return windowedLayers.empty() || (layer >= 0 && layer < int(windowedLayers.size()) && windowedLayers[size_t(layer)])
                   ? sliding_window
                   : 0;
    }
    /// Whether `layer` uses the local RoPE (local_rotary_base set and the layer windowed).
    bool usesLocalRope(int layer) const {
        return local_rotary_base > 0 && layer >= 0 && layer < int(windowedLayers.size()) && windowedLayers[size_t(layer)];
    }
    /// The RoPE base and scaling of `layer` (Gemma 3's differ between sliding and global layers).
    double rotaryBaseOf(int layer) const { return usesLocalRope(layer) ? local_rotary_base : rotary_base; }
    const RopeScaling& ropeScalingOf(int layer) const { return usesLocalRope(layer) ? local_rope_scaling : rope_scaling; }
    /// Query heads per K/V head (grouped-query attention): n_heads / n_kv_heads.
    int groupSize() const { return n_heads / (n_kv_heads > 0 ? n_kv_heads : n_heads); }
    /// The K/V head query head h reads.
    int kvHeadOf(int h) const { return h / groupSize(); }
};

/// Display name of an activation kind ("gelu_new", ...).
QString activationName(ActivationKind kind);

} // namespace attnscope
