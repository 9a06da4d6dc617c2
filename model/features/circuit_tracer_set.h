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
// Gemma Scope 2 sets (mwhanna/gemma-scope-2-*: load_gemma_scope_2_transcoder / load_gemma_scope_2_clt, chosen in
// hf_utils.load_transcoders when the repository is a gemma-scope-2 one and config.yaml lists `transcoders`): a
// transcoder_set listing hf://google/gemma-scope-2-*/transcoder_all/layer_L_…/params.safetensors (read as
// gemma_scope_params.h reads them), or a cross_layer_transcoder listing …/clt/width_…/params_layer_{i}.safetensors
// (gemma_scope2_multilayer.h), with feature_input_hook mlp.hook_in and feature_output_hook hook_mlp_out.
// hf:// URIs are looked up inside the folder (their path within the repository), then in the Hugging Face cache that
// holds the folder (models--ORG--NAME/snapshots/*/PATH: where huggingface_hub put google's files when circuit-tracer
// downloaded mwhanna's set), then by file name beside config.yaml when no other entry has that name.
// The first format (circuit-tracer 0.1, circuit_tracer/configs/*.yaml) is a .yaml of any name: `transcoders:` as {id, layer,
// filepath}, model_name, no model_kind; it opens by its path, its files resolved beside it.

#include "model/features/dictionary_set.h"

#include <QStringList>
#include <vector>

namespace attnscope {

/// True when `folder` holds a config.yaml.
bool isCircuitTracerFolder(const QString& folder);

/// One entry of a config's `transcoders:` list.
struct CircuitTracerEntry {
    int layer = 0;
    QString id;          ///< the first format's id (empty for a plain path)
    QString entry;       ///< as written: a path, or hf://OWNER/REPO/PATH[?revision=…]
    QString file;        ///< the file it names, resolved beside the config; empty when none of lookedFor exists
    QStringList lookedFor; ///< the candidates, in order: the path; for hf://, PATH inside the folder, the file in the Hugging
                           ///< Face cache holding the folder (when there), then its file name when no other entry shares it
};

/// A config.yaml (or any circuit-tracer .yaml) parsed, its entries resolved but no weights read.
struct CircuitTracerConfig {
    QString path;
    QString kind;               ///< model_kind, empty in the first format
    QString modelName;          ///< model_name
    QString input, output;      ///< feature_input_hook, feature_output_hook
    QString activation, scan;
    int k = 0;
    std::vector<CircuitTracerEntry> transcoders; ///< sorted by layer; empty when the config lists none
};

/// Parses a circuit-tracer config, both formats: the current one (model_kind, transcoders as a list of paths or
/// hf:// URIs, one per layer) and the first (circuit-tracer 0.1's circuit_tracer/configs/*.yaml: model_name and
/// transcoders as {id, layer, filepath}). Throws ModelError naming the file and the field: no YAML support in this
/// build, invalid YAML, a field of the wrong type, an unknown model_kind, missing hooks, an entry without layer or
/// filepath, two entries for one layer. A missing file is not an error here (CircuitTracerEntry::file is empty).
CircuitTracerConfig readCircuitTracerConfig(const QString& yamlPath);

/// Reads the set at `path`: a folder with config.yaml, or a circuit-tracer .yaml file itself (entries resolved beside
/// it). Throws ModelError naming the config or the layer file: a transcoder file that is not there (naming the entry,
/// its layer and where it was looked for), a missing layer (every layer 0 … max must be present), layers whose
/// d_transcoder or d_model differ, an unknown activation, k outside [1, d_transcoder], shapes that disagree; and
/// readCircuitTracerConfig's errors.
DictionarySet readCircuitTracerSet(const QString& path);

} // namespace attnscope
