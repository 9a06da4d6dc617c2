#pragma once
// SAELens folders: cfg.json + sae_weights.safetensors, as SAE.save_model writes them (sae_lens/saes/sae.py)
// and as the SAELens releases on Hugging Face hold them, both config generations:
//  - 6.x: "architecture" (standard, gated, topk, jumprelu, transcoder, skip_transcoder, jumprelu_transcoder),
//    top-level "k" for topk, "metadata": {"hook_name", "hook_name_out" for transcoders, …};
//  - before 6.0 (sae_lens/loading/pretrained_sae_loaders.py handle_pre_6_0_config): "hook_point" or
//    "hook_name" at the top level, "activation_fn_str" / "activation_fn" "topk" with
//    "activation_fn_kwargs": {"k"}, and a bool "normalize_activations" (true = expected_average_only_in).
// Tensors: W_enc [d_in, d_sae], b_enc [d_sae], W_dec [d_sae, d_out], b_dec [d_out]; threshold [d_sae]
// (jumprelu); b_gate, b_mag, r_mag instead of b_enc (gated); W_skip [d_out, d_in] (skip_transcoder).

#include "model/features/sparse_coder.h"

namespace attnscope {

/// True when `folder` holds a cfg.json and a sae_weights.safetensors.
bool isSaeLensFolder(const QString& folder);

/// Reads cfg.json of an SAELens folder: every field of the SparseCoder but its tensors (path, format, architecture,
/// d_in, d_sae, d_out, hooks, apply_b_dec_to_input, the normalisation, k, rescale_acts_by_decoder_norm). Each boolean,
/// number and string field AttnScope reads, and the common ones it does not (dtype, device, model_name, …), must
/// have its JSON type or null: else InputError "cfg.json: field \"KEY\" must be …, not …" (config_fields.h). Where
/// SAELens itself accepts two types, both are read: normalize_activations a string or (before 6.0) a bool; k a
/// number (SAELens ≥ 6.11 allows a fractional k for batchtopk; topk needs an integer). Other checks throw ModelError
/// as readSaeLensFolder says.
SparseCoder readSaeLensConfig(const QString& folder);

/// Reads an SAELens folder. Throws ModelError naming cfg.json or the weights file and the field or
/// tensor: an unknown architecture or activation, missing or non-positive d_in/d_sae, k outside
/// [1, d_sae], a shape that disagrees with cfg.json, NaN in a threshold, hook_head_index set,
/// apply_b_dec_to_input on a transcoder, expected_average_only_in without a norm_scaling_factor to fold.
SparseCoder readSaeLensFolder(const QString& folder);

} // namespace attnscope
