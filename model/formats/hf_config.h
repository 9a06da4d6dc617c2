#pragma once
// Hugging Face config.json -> ModelConfig (transformers GPT2Config field names).

#include "model/transformer/model_config.h"

#include <QByteArray>
#include <QString>

namespace attnscope {

/// The model_type values loadModel understands.
QStringList supportedModelTypes();

/// Parses a config.json text. `fileLabel` names the file in errors (normally "config.json").
/// GPT-2 (transformers GPT2Config): n_layer, n_head, n_embd, n_positions (or n_ctx), n_inner
/// (null/absent -> 4*n_embd), vocab_size, layer_norm_epsilon (default 1e-5), activation_function
/// (gelu_new/gelu_pytorch_tanh -> GeluNew, gelu -> GeluExact, relu; default gelu_new),
/// scale_attn_weights (default true), scale_attn_by_inverse_layer_idx (default false),
/// bos_token_id/eos_token_id (absent/null -> -1).
/// Throws ModelError for invalid JSON, an unsupported model_type ("unsupported model_type 'llama';
/// supported: gpt2"), a missing/zero/negative/non-integer size field, n_embd not divisible by
/// n_head, or a bad value of any field above, naming the field.
ModelConfig parseHfConfig(const QByteArray& json, const QString& fileLabel = QStringLiteral("config.json"));

/// Reads and parses `path` (see parseHfConfig); errors name `fileLabel` (default: the file name).
/// Throws ModelError if the file is missing or unreadable.
ModelConfig loadHfConfig(const QString& path, const QString& fileLabel = {});

} // namespace attnscope
