#pragma once
// Writes a LlamaCheckpoint (llama_checkpoint.h) as a Hugging Face model folder in exact transformers
// layout: config.json (LlamaConfig / MistralConfig / Qwen2Config field names) and model.safetensors with
// LlamaForCausalLM's tensor names (model.embed_tokens.weight, model.layers.N.self_attn.q_proj.weight, …,
// model.norm.weight, lm_head.weight when untied), in float32, float16 or bfloat16.

#include "tests/support/llama_checkpoint.h"
#include "tests/support/safetensors_writer.h"

#include <QJsonObject>

namespace attnscope::test {

/// config.json of the spec: model_type, sizes, head_dim, rms_norm_eps, rope_theta, rope_scaling (llama3),
/// tie_word_embeddings, attention_bias, sliding_window (mistral; qwen2 with use_sliding_window), bos/eos.
QJsonObject hfLlamaConfig(const LlamaSpec& spec);

/// The checkpoint's tensors under their HF names, each stored as `storage` (rounded to nearest even).
/// The checkpoint must be in HF layout (toHfLayout).
std::vector<FixtureTensor> hfLlamaTensors(const LlamaCheckpoint& c, Storage storage);

/// Writes config.json and model.safetensors into `dir` (created if needed) and copies `tokenizerFile`
/// (if given) into it as `tokenizerName` (default: its own name). qFatal on error.
void writeHfLlamaFolder(const LlamaCheckpoint& c, const QString& dir, Storage storage = Storage::F32,
                        const QString& tokenizerFile = {}, const QString& tokenizerName = {});

} // namespace attnscope::test
