#pragma once
// Llama Scope SAEs (He et al. 2024, fnlp/Llama-Scope): a folder with hyperparams.json and
// checkpoints/final.safetensors (encoder.weight [d_sae, d_model], encoder.bias, decoder.weight [d_model, d_sae],
// decoder.bias), read as SAELens's llama_scope_sae_huggingface_loader does: JumpReLU with one threshold for every
// feature, jump_relu_threshold·s, where s = √d_model / dataset_average_activation_norm.in is also the input
// scaling folded into the weights (expected_average_only_in); no b_dec subtracted from the input.

#include "model/features/sparse_coder.h"

namespace attnscope {

bool isLlamaScopeFolder(const QString& folder);

/// Throws ModelError naming hyperparams.json or the checkpoint (missing keys, non-positive norms, shapes).
SparseCoder readLlamaScopeFolder(const QString& folder);

} // namespace attnscope
