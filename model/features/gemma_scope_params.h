#pragma once
// Gemma Scope dictionaries (Lieberum et al. 2024, "Gemma Scope", and its Hugging Face repositories
// google/gemma-scope-2b-pt-{res,mlp,att,transcoders} …): one params.npz per dictionary, a zip of
// .npy arrays W_enc [d_in, d_sae], W_dec [d_sae, d_in], b_enc [d_sae], b_dec [d_in], threshold [d_sae].
// JumpReLU, no b_dec subtracted from the input (SAELens gemma_2_sae_huggingface_loader: apply_b_dec_to_input
// false). The hook is not in the file; it comes from the path as SAELens derives it:
//   …-res…/layer_L/width_W/average_l0_N      blocks.L.hook_resid_post
//   …-mlp…/layer_L/…                         blocks.L.hook_mlp_out
//   …-att…/layer_L/…                         blocks.L.attn.hook_z
//   …transcoders…/layer_L/…                  reads blocks.L.ln2.hook_normalized, writes blocks.L.hook_mlp_out
// Gemma Scope 2 ships params.safetensors with lower-case keys (w_enc, w_dec, b_enc, b_dec, threshold) and,
// for transcoders, affine_skip_connection [d_in, d_out] added as x·A: Google's Gemma Scope 2 tutorial
// (recon + x @ affine_skip_connection) and circuit-tracer (load_gemma_scope_2_transcoder: W_skip = Aᵀ, added as
// x @ W_skipᵀ) agree; SAELens's loader applies x·Aᵀ. tests/features/tst_gemma_scope2 decides it on a transcoder whose
// target is known (docs/features.md, "Gemma Scope 2"). Its folders (gemma_scope2_layout.h) are
// <site>[_all]/layer_L_width_W_l0_S[_affine]/, the site naming the hooks, each with a config.json next to
// params.safetensors (the keys SAELens's Gemma Scope 2 loader reads):
//   {"hf_hook_point_in": "model.layers.12.output", "hf_hook_point_out": …, "width": 16384, "l0": 20,
//    "model_name": "google/gemma-3-1b-pt", "architecture": "jump_relu", "affine_connection": false, "type": "sae"}

#include "model/features/sparse_coder.h"

namespace attnscope {

/// True for a file named params.npz or params.safetensors (with w_enc inside for the latter).
bool isGemmaScopeFile(const QString& path);

/// The hook(s) a Gemma Scope path implies: {in, out}; empty strings when the path does not say.
std::pair<QString, QString> gemmaScopeHooksFromPath(const QString& path);

/// A Gemma Scope 2 config.json.
struct GemmaScope2Config {
    QString hfHookIn, hfHookOut;  ///< Hugging Face module names ("model.layers.12.output"); "" when absent
    QString hookIn, hookOut;      ///< their TransformerLens hooks (gemmaScope2Hook); "" when not one AttnScope knows
    qint64 width = 0;             ///< d_sae; 0 when absent
    QString architecture;         ///< "jump_relu" (the only one); "" when absent
    bool affineConnection = false;
    QString type;                 ///< "sae" or "transcoder"; "" when absent
};

/// The TransformerLens hook of a Gemma 3 module name as Gemma Scope 2 writes it: model.layers.L.output →
/// blocks.L.hook_resid_post, ….pre_feedforward_layernorm.output → blocks.L.ln2.hook_normalized,
/// ….post_feedforward_layernorm.output → blocks.L.hook_mlp_out, ….self_attn.o_proj.input → blocks.L.attn.hook_z;
/// "" for any other.
QString gemmaScope2Hook(const QString& hfName);

/// Reads a Gemma Scope 2 config.json. Every member's JSON type is checked (config_fields.h: InputError naming
/// the file and the field); architecture must be jump_relu, width positive, type sae or transcoder (ModelError).
GemmaScope2Config readGemmaScope2Config(const QString& path);

/// Reads params.npz or params.safetensors (with the config.json next to it, when there, for the hooks and
/// checked against the tensors: width = d_sae, affine_connection = has affine_skip_connection; in a Gemma Scope 2 folder
/// the site names the hooks and the folder's width and _affine must match the tensors: ModelError naming the folder
/// name otherwise). `hookOverride` (a TransformerLens name) replaces the hook
/// derived from the path; without either, throws ModelError saying to pass --hook. Other errors name the
/// file and the array (shapes that disagree, NaN thresholds, the .npy and zip checks of npz_archive.h).
SparseCoder readGemmaScopeFile(const QString& path, const QString& hookOverride = {});

} // namespace attnscope
