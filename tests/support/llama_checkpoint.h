#pragma once
// A Llama-family checkpoint held in memory for the tests, independent of model/formats and model/transformer:
// hyper-parameters as HF's LlamaConfig names them and float32 tensors in nn.Linear's [out, in] row-major
// layout. Made from llama2.c's stories260K.bin (read by hand here), from a GGUF file, or at random; turned
// into Hugging Face layout (transformers' convert_llama_weights_to_hf.py `permute`) and written as an HF
// folder by hf_llama_folder.h; run by reference_llama_forward.h.

#include <QString>
#include <QtGlobal>
#include <cstdint>
#include <vector>

namespace attnscope::test {

/// The hyper-parameters (transformers LlamaConfig / MistralConfig / Qwen2Config field meanings).
struct LlamaSpec {
    QString modelType = QStringLiteral("llama"); ///< config.json model_type: llama, mistral, qwen2, qwen3 (q/k norms), gemma2
    int d_model = 0;       ///< hidden_size
    int n_layers = 0;      ///< num_hidden_layers
    int n_heads = 0;       ///< num_attention_heads
    int n_kv_heads = 0;    ///< num_key_value_heads
    int d_head = 0;        ///< head_dim (may differ from d_model / n_heads)
    int d_mlp = 0;         ///< intermediate_size
    int d_vocab = 0;       ///< vocab_size
    int n_ctx = 0;         ///< max_position_embeddings
    double rms_eps = 1e-5; ///< rms_norm_eps
    double rope_theta = 10000.0;
    /// Which dims of a head rotate together: false = HF's rotate_half pairs (i, i + d_head/2); true = Meta's
    /// interleaved pairs (2i, 2i + 1) (llama2.c, GGUF llama).
    bool interleavedRope = false;
    int sliding_window = 0; ///< Mistral: a query sees itself and the window − 1 keys before it; 0 = all
    struct Llama3Scaling {  ///< rope_scaling {"rope_type": "llama3", ...}; factor 0 = none
        double factor = 0, low_freq_factor = 1, high_freq_factor = 4;
        int original_max_position_embeddings = 8192;
    } llama3;
    bool tied = true; ///< tie_word_embeddings (no lm_head.weight)
    /// Gemma 2 (modelType "gemma2"): the window applies to the even layers; scores scaled by query_pre_attn_scalar^-1/2
    /// (0 = d_head); soft-caps (0 = none). Its norms store w of (1 + w), around 0.
    double query_pre_attn_scalar = 0, attn_softcap = 0, final_softcap = 0;
    int bos = 1, eos = 2;
};

/// A spec of `type` with these sizes, 2 layers, a 512-token vocabulary (tok512.bin fits it), 64 positions,
/// rms_norm_eps 1e-6, θ 10000, tied, no window or scaling.
LlamaSpec smallLlamaSpec(const char* type, int d_model, int n_heads, int n_kv_heads, int d_head, int d_mlp);

/// The small Gemma 2 the suites share: smallLlamaSpec("gemma2", 32, 4, 2, 8, 48) with a window of 3 (layer 0 only),
/// query_pre_attn_scalar 4, and soft-caps that bind on random weights: attention 1.5, final 6.
LlamaSpec smallGemma2Spec();

/// One layer's tensors, nn.Linear weights [out, in] row-major; an empty vector is an absent bias.
struct LlamaLayerTensors {
    std::vector<float> input_layernorm;          ///< [d_model]
    std::vector<float> q_proj, k_proj, v_proj;   ///< [n_heads·d_head | n_kv_heads·d_head, d_model]
    std::vector<float> q_bias, k_bias, v_bias;   ///< [out] or empty
    std::vector<float> o_proj;                   ///< [d_model, n_heads·d_head]
    std::vector<float> o_bias;                   ///< [d_model] or empty
    std::vector<float> q_norm, k_norm;           ///< [d_head] (Qwen 3's self_attn.q_norm / k_norm) or empty
    std::vector<float> post_attention_layernorm; ///< [d_model] (Gemma 2: the attention's post-norm, not ln_2)
    std::vector<float> pre_feedforward_layernorm, post_feedforward_layernorm; ///< [d_model] Gemma 2's ln_2 and MLP post-norm
    std::vector<float> gate_proj, up_proj;       ///< [d_mlp, d_model]
    std::vector<float> down_proj;                ///< [d_model, d_mlp]
};

struct LlamaCheckpoint {
    LlamaSpec spec;
    std::vector<float> embed_tokens; ///< [d_vocab, d_model]
    std::vector<LlamaLayerTensors> layers;
    std::vector<float> norm;         ///< [d_model]
    std::vector<float> lm_head;      ///< [d_vocab, d_model]; empty when tied
};

/// Reads a llama2.c checkpoint (run.c's legacy version-0 layout: seven int32, then float32 arrays) with
/// this file's own code. Meta layout (interleavedRope), eps 1e-5, θ 10000, n_ctx = seq_len. qFatal on error.
LlamaCheckpoint readLlama2cCheckpoint(const QString& path);

/// Reads a GGUF Llama (general.architecture llama; F32/F16/BF16 tensors, dequantized to float32) into a
/// checkpoint: ggml's [in, out] tensors are nn.Linear's [out, in] rows as stored, Q/K rows in llama.cpp's
/// order (interleavedRope). Uses the library's GGUF reader for the bytes (tested on its own in tst_gguf).
LlamaCheckpoint readGgufLlama(const QString& path);

/// The rows of a [rows, cols] Q or K projection in Meta's interleaved order, permuted to HF's half-split
/// order exactly as transformers' convert_llama_weights_to_hf.py does:
/// w.view(n_heads, rows / n_heads / 2, 2, cols).transpose(1, 2).reshape(rows, cols).
std::vector<float> permuteMetaToHf(const std::vector<float>& w, int rows, int cols, int nHeads);

/// The same checkpoint in HF layout: q_proj and k_proj (and their biases) permuted, interleavedRope false.
LlamaCheckpoint toHfLayout(const LlamaCheckpoint& meta);

/// Element types of a copy: each value rounded to nearest even in that type and back to float32.
enum class Storage { F32, F16, BF16 };
LlamaCheckpoint roundedTo(const LlamaCheckpoint& c, Storage storage);
/// float32 → bfloat16 bits, rounded to nearest even (binary16: f16Bits in ggml_test_blocks.h).
quint16 toBf16Bits(float v);

/// A random checkpoint for `spec`: normal weights (std::mt19937 `seed`), scale 1/√fan_in, norm gains
/// 1 + N(0, 0.1), biases N(0, 0.1) when `biases` says (q/k/v, and o too with oBias); Qwen 3 q/k norm gains
/// 1 + N(0, 0.3).
LlamaCheckpoint randomLlama(const LlamaSpec& spec, std::uint32_t seed, bool qkvBias = false, bool oBias = false);

} // namespace attnscope::test
