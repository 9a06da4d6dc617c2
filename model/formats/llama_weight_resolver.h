#pragma once
// Llama-family checkpoint tensor names (transformers LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM) -> canonical role-named weights.

#include "model/core/progress.h"
#include "model/formats/tensor_set.h"
#include "model/transformer/model_config.h"
#include "model/transformer/weights.h"

#include <QString>
#include <vector>

namespace attnscope {

/// Maps HF Llama names (with or without the "model." prefix) to LayerWeights/GlobalWeights; every matrix
/// is nn.Linear's [out, in], viewed transposed in place (W_Q = q_proj.weightᵀ [d_model, n_heads·d_head]):
///   model.embed_tokens.weight [d_vocab, d_model] -> W_E (and W_U_T unless lm_head.weight [d_vocab, d_model])
///   model.norm.weight [d_model] -> ln_final_w (RMSNorm: no bias)
///   model.layers.{l}.input_layernorm.weight, post_attention_layernorm.weight [d_model] -> ln1_w, ln2_w
///   model.layers.{l}.self_attn.{q,k,v}_proj.weight [n_(kv_)heads·d_head, d_model] (+ .bias: Qwen2, attention_bias)
///   model.layers.{l}.self_attn.o_proj.weight [d_model, n_heads·d_head] (+ .bias with attention_bias)
///   model.layers.{l}.mlp.{gate,up}_proj.weight [d_mlp, d_model] -> W_gate, W_in;  down_proj [d_model, d_mlp] -> W_out
/// Buffers such as rotary_emb.inv_freq are ignored. Tensors stay in their file's element type (F32, F16,
/// BF16) and place (safetensors_weights.h). Different layers may be resolved concurrently.
class LlamaWeightResolver : public WeightResolver {
public:
    /// Checks every tensor the model needs: present, dtype F32/F16/BF16, shape implied by `config`;
    /// biases where present must have the right shape; MLP biases (mlp_bias) are refused, naming the tensor.
    /// Errors as Gpt2WeightResolver's. Progress: one
    /// step per required tensor, out of tensorCount.
    LlamaWeightResolver(const ModelConfig& config, TensorSet tensors, const QString& sourceLabel,
                        const QString& configLabel = QStringLiteral("config.json"), const Progress& progress = {},
                        qint64 progressDone = 0, qint64 progressTotal = 0);

    /// Progress units the constructor reports: embed, final norm, lm_head (checked or tied) + 9 per layer.
    static int tensorCount(const ModelConfig& config);

    GlobalWeights globals() override;
    LayerWeights layer(int l) override;

    QString storageDtype() const { return storageDtype_; }
    bool tiedUnembedding() const { return lm_head_.tensor == nullptr; }
    const TensorSet& tensors() const { return tensors_; }

private:
    /// A [1, n] norm weight plus one, as float32 in a new buffer of `buffers` (Gemma's (1 + w) RMSNorm).
    static Weight plusOne(const Weight& w, std::vector<std::vector<unsigned char>>& buffers);
    struct LayerRefs {
        TensorRef ln1, q, k, v, o, q_b, k_b, v_b, o_b, q_norm, k_norm, ln1_post, ln2, ln2_post, gate, up, down;
    };
    ModelConfig config_;
    TensorSet tensors_;
    QString storageDtype_;
    TensorRef embed_, norm_, lm_head_;
    std::vector<LayerRefs> layers_;
    std::vector<std::vector<unsigned char>> globalBuffers_;
    std::vector<std::vector<std::vector<unsigned char>>> layerBuffers_;
};

} // namespace attnscope
