#pragma once
// Range checks shared by the analyses: each throws InputError naming the index and its valid range.

#include "model/transformer/model_config.h"

namespace attnscope {

/// layer in [0, n_layers).
void checkLayer(const ModelConfig& cfg, int layer);
/// layer valid and head in [0, n_heads).
void checkHead(const ModelConfig& cfg, int layer, int head);
/// layer valid and neuron in [0, d_mlp).
void checkNeuron(const ModelConfig& cfg, int layer, int neuron);
/// token id in [0, d_vocab).
void checkToken(const ModelConfig& cfg, int token);

} // namespace attnscope
