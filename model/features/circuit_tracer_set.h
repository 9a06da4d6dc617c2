#pragma once
// circuit-tracer transcoder sets (safety-research/circuit-tracer, circuit_tracer/utils/hf_utils.py
// load_transcoders): a folder with config.yaml
//   model_kind: transcoder_set | cross_layer_transcoder   (older configs: none, transcoders as {id, layer, filepath})
//   feature_input_hook: hook_resid_mid | ln2.hook_normalized | mlp.hook_in …   (per layer; may be blocks.{layer}.…)
//   feature_output_hook: hook_mlp_out | mlp.hook_out
//   transcoders: [paths or hf:// URIs, one per layer]      (else layer_0.safetensors, layer_1.safetensors, …)
//   activation: relu | jump_relu | topk, k: N              (optional)
// Per-layer files (single_layer_transcoder.py load_relu_transcoder): W_enc [d_transcoder, d_model] — transposed
// relative to SAELens: encode x·W_encᵀ + b_enc, no b_dec subtracted —, W_dec [d_transcoder, d_model], b_enc,
// b_dec, optional activation_function.threshold (JumpReLU x·(x > θ), no ReLU) and W_skip [d_model, d_model]
// added as x·W_skipᵀ. A Gemma Scope params.npz listed there is read as gemma_scope_params.h reads it.
// Cross-layer (cross_layer_transcoder.py load_clt): W_enc_i.safetensors {W_enc_i [d_t, d_model], b_enc_i,
// b_dec_i, threshold_i} and W_dec_i.safetensors {W_dec_i [d_t, n_layers − i, d_model]}, mapped, sliced lazily.
// hf:// URIs are looked up inside the folder (their path within the repository, then the file name).

#include "model/features/dictionary_set.h"

namespace attnscope {

/// True when `folder` holds a config.yaml.
bool isCircuitTracerFolder(const QString& folder);

/// Reads the set. Throws ModelError naming config.yaml or the layer file: no YAML support in this build,
/// an unknown model_kind or activation, a missing layer (every layer 0 … max must be present), layers whose
/// d_transcoder or d_model differ, k outside [1, d_transcoder], shapes that disagree.
DictionarySet readCircuitTracerSet(const QString& folder);

} // namespace attnscope
