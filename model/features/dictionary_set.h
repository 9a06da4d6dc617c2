#pragma once
// What a user opens as "features": one SAE or transcoder, or a set of transcoders (one per layer, or a
// cross-layer transcoder whose features write to every later layer), from any of the formats of
// model/features/*, found by what a path holds (openDictionaries).

#include "model/features/sparse_coder.h"
#include "model/transformer/model_config.h"

#include <QString>
#include <vector>

namespace attnscope {

struct DictionarySet {
    QString path;
    QString format;   ///< "SAELens", "Gemma Scope", "Gemma Scope 2", "circuit-tracer", "Llama Scope"
    QString kind;     ///< "sae", "transcoder", "transcoder_set", "cross_layer_transcoder", "crosscoder" (Gemma Scope 2's)
    QString scan;     ///< circuit-tracer's config.yaml "scan" (the model and set, for Neuronpedia), else empty
    std::vector<SparseCoder> coders; ///< one, or one per layer (coders[l] reads layer l) for sets
    /// Cross-layer transcoders only: crossLayerDecoders[i][j − i] is W_dec_i[:, j − i, :] [d_transcoder, d_model],
    /// the decoder of source layer i's features into layer j ≥ i (a strided view of the mapped W_dec_i file;
    /// coders[i].W_dec is the j = i slice). Read lazily: only the rows used are ever paged in.
    /// Crosscoders: crossLayerDecoders[k][m] decodes layer k's features into layer m, every m (gemma_scope2_multilayer.h).
    std::vector<std::vector<Weight>> crossLayerDecoders;
};

/// A set of one SAE or transcoder read from `path`: its format, kind "sae" or "transcoder".
DictionarySet singleDictionary(SparseCoder sae, const QString& path);

/// Opens the dictionaries at `path` (read-only, memory-mapped):
///  - a folder with cfg.json + sae_weights.safetensors (SAELens; saelens_folder.h),
///  - params.npz / params.safetensors, or a folder holding one (Gemma Scope; gemma_scope_params.h),
///  - Gemma Scope 2's repository layout: a site folder, a <site>/width_W_l0_S[_affine] variant (every layer of it), a
///    CLT or crosscoder folder, the repository root (gemma_scope2_layout.h),
///  - a folder with config.yaml, or a circuit-tracer .yaml of any name, or a folder holding one (circuit_tracer_set.h),
///  - a folder with hyperparams.json + checkpoints/final.safetensors (Llama Scope; llama_scope_folder.h);
///  a file inside such a folder opens the folder. `hookOverride` replaces the hook of a single SAE.
/// Python pickles (.pt, .pth, .pkl: OpenAI's GPT-2 SAEs) are refused, never unpickled. Throws ModelError
/// naming the file and what is wrong.
DictionarySet openDictionaries(const QString& path, const QString& hookOverride = {});

/// Throws InputError "PATH: a crosscoder …" for a crosscoder: its features at one layer reconstruct every one of its
/// layers, which a view of one dictionary on one hook (the Features tab, --sae) cannot show; crosscoderReconstruction
/// (gemma_scope2_multilayer.h) computes it.
void requireOneHookPerDictionary(const DictionarySet& set);

/// Checks every coder against the model: its hooks exist in it and d_in / d_out equal their widths.
/// Throws InputError "PATH: …" (hook_point.h requireHook).
void requireFitsModel(const DictionarySet& set, const ModelConfig& cfg);

} // namespace attnscope
