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
    QString modelType = QStringLiteral("llama"); ///< config.json model_type: llama, mistral, qwen2, qwen3 (q/k norms), gemma2,
                                                 ///< gemma3_text, gemma3 (Gemma3ForConditionalGeneration: text_config)
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
    /// Gemma 3 (modelType "gemma3_text" or "gemma3"; isGemma3()): Gemma 2's blocks plus (1 + w) q/k norms, the window on
    /// the sliding layers (slidingLayers, or by default all but every sixth: (i + 1) % 6 ≠ 0), RoPE base rope_theta
    /// scaled linearly by linear_factor (0 = none) on the global layers and rope_local_theta, scaled by
    /// local_linear_factor (0 = none; no checkpoint does), on the sliding ones.
    double rope_local_theta = 10000.0, linear_factor = 0, local_linear_factor = 0;
    std::vector<char> slidingLayers; ///< [layer] 1 = sliding_attention (config layer_types); empty = the default pattern
    /// How hf_llama_folder writes a Gemma 3 (the reference ignores these): transformers 5's rope_parameters keyed by layer
    /// type (rope_scaling null, no rope_theta / rope_local_base_freq) instead of the 4.x fields; layer_types written out;
    /// modelType "gemma3": the text weights' prefix ("language_model.model." as transformers 4.x saved
    /// Gemma3ForConditionalGeneration, "model.language_model." as later versions do) and the fields left to
    /// Gemma3TextConfig's defaults (rms_norm_eps 1e-6, query_pre_attn_scalar 256, rope_theta 1e6, rope_local_base_freq 1e4).
    bool ropeParameters = false, writeLayerTypes = false;
    QString languageModelPrefix = QStringLiteral("language_model.model.");
    bool isGemma3() const { return modelType == QLatin1String("gemma3_text") || modelType == QLatin1String("gemma3"); }
    bool isGemma() const { return modelType == QLatin1String("gemma2") || isGemma3(); }
    /// Whether layer l is windowed (Gemma 2: the even ones; Gemma 3: slidingLayers or the 5:1 pattern; others: all).
    bool slidingLayer(int l) const {
        if (!slidingLayers.empty()) return slidingLayers[size_t(l)] != 0;
        return modelType == QLatin1String("gemma2") ? l % 2 == 0 : isGemma3() ? (l + 1) % 6 != 0 : true;
    }
};

/// A spec of `type` with these sizes, 2 layers, a 512-token vocabulary (tok512.bin fits it), 64 positions,
/// rms_norm_eps 1e-6, θ 10000, tied, no window or scaling.
LlamaSpec smallLlamaSpec(const char* type, int d_model, int n_heads, int n_kv_heads, int d_head, int d_mlp);

/// The small Gemma 2 the suites share: smallLlamaSpec("gemma2", 32, 4, 2, 8, 48) with a window of 3 (layer 0 only),
/// query_pre_attn_scalar 4, and soft-caps that bind on random weights: attention 1.5, final 6.
LlamaSpec smallGemma2Spec();

/// The small Gemma 3 the suites share: smallLlamaSpec(type, 32, 4, 1, 16, 48) with 6 layers (five sliding, then a
/// global one), a window of 3, query_pre_attn_scalar 16, RoPE 1e4 on sliding layers and 1e6 scaled by 8 on the global one.
LlamaSpec smallGemma3Spec(const char* type = "gemma3_text");

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
