#pragma once
// Random-weight GPT-2 and Llama checkpoints of real shapes, written in Hugging Face layout for the benchmark.

#include <QString>

namespace attnscope::bench {

/// Hyper-parameters of a GPT-2 size.
struct Gpt2Shape {
    QString name;     ///< "gpt2-small", "gpt2-medium", ...
    int n_layers = 12;
    int n_heads = 12;
    int d_model = 768;
    int d_vocab = 50257;
    int n_ctx = 1024;
};

/// gpt2-small (12/12/768), gpt2-medium (24/16/1024) or gpt2-xl (48/25/1600); throws InputError otherwise.
Gpt2Shape gpt2Shape(const QString& name);

/// Writes `dir`/config.json, model.safetensors (F32; matrices and biases N(0, 0.02), LayerNorm weights 1 and
/// biases 0; W_U tied to wte as in GPT-2) and the real GPT-2 tokenizer copied from `tokenizerDir`
/// (encoder.json → vocab.json, vocab.bpe → merges.txt). Deterministic for a given seed.
/// Throws InputError if a file cannot be written or the tokenizer files are missing.
void writeRandomGpt2(const Gpt2Shape& shape, const QString& dir, const QString& tokenizerDir, unsigned seed = 1);

/// Hyper-parameters of a Llama-architecture shape (RMSNorm, RoPE, SwiGLU, grouped-query attention).
struct LlamaShape {
    QString name;     ///< "llama-1b", "llama-3b", "qwen3-0.6b", "gemma-2-2b", "gemma-3-1b"
    QString family = QStringLiteral("llama"); ///< config.json model_type: llama, qwen3 (q/k norms), gemma2 or gemma3 (gemma3_text)
    int n_layers = 16;
    int d_model = 2048;
    int n_heads = 32;
    int n_kv_heads = 8;
    int d_head = 64;
    int d_mlp = 8192;
    int d_vocab = 128256;
    int n_ctx = 131072;
    double rope_theta = 500000.0;
    bool tie_word_embeddings = true;
    /// Bytes of model.safetensors (BF16) without its header.
    qint64 weightBytes() const;
};

/// True for the names llamaShape accepts ("llama-1b", "llama-3b", "1b", "3b").
bool isLlamaShapeName(const QString& name);

/// llama-1b: Llama-3.2-1B's shape (16 layers, d_model 2048, 32 heads / 8 KV heads, d_head 64, d_mlp 8192,
/// vocab 128 256, tied embeddings; 2.47 GB in BF16). llama-3b: Llama-3.2-3B's (28 layers, d_model 3072,
/// 24 / 8 heads, d_head 128, d_mlp 8192, tied; 6.43 GB). Both with rope_theta 500 000 and Llama 3's
/// rope_scaling (factor 32, as the HF configs). Throws InputError for other names.
LlamaShape llamaShape(const QString& name);

/// Writes `dir`/config.json (model_type llama, torch_dtype bfloat16) and model.safetensors in HF
/// LlamaForCausalLM names, every tensor BF16: matrices N(0, 0.02) rounded to nearest even, RMSNorm weights 1.
/// The tokenizer is GPT-2's byte-level BPE copied from `tokenizerDir` (50 257 tokens: ids from 50 257 to
/// d_vocab − 1 are valid inputs without a text form); the benchmark runs random ids, so only its load time
/// matters. Streams tensor by tensor (memory of one tensor). Deterministic for a given seed.
/// Throws InputError if a file cannot be written or the tokenizer files are missing.
void writeRandomLlama(const LlamaShape& shape, const QString& dir, const QString& tokenizerDir, unsigned seed = 1);

/// Writes `dir`/config.yaml and layer_<L>.safetensors: a circuit-tracer per-layer TopK transcoder set (model_kind
/// transcoder_set, ln2.hook_normalized → hook_mlp_out, activation topk with `k`), every tensor BF16 as the published
/// sets are: W_enc and W_dec [d_transcoder, d_model] N(0, 1/d_model) and N(0, 1/d_transcoder), b_enc and b_dec
/// N(0, 0.01²). A layer file is 4·d_transcoder·d_model bytes; written tensor by tensor (memory of one tensor).
/// With `jumpThreshold` > 0 the set is JumpReLU instead (activation jump_relu, `activation_function.threshold` = that
/// value for every feature, as Gemma Scope's transcoders store one; k unused): on ln2.hook_normalized (norm √d_model)
/// a pre-activation is about N(0, 1), so θ = 2.63 lets about 0.43 % of the features fire per token (70 of 16 384).
/// Deterministic for a given seed. Throws InputError if a file cannot be written.
void writeRandomTranscoderSet(const QString& dir, int nLayers, int dModel, int dTranscoder, int k, float jumpThreshold = 0,
                              unsigned seed = 7);

} // namespace attnscope::bench

