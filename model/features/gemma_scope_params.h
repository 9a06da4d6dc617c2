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
// for transcoders, affine_skip_connection [d_in, d_out] added as x·A (Google's Gemma Scope 2 tutorial);
// its folders are named resid_post/, mlp_out/, attn_out/, transcoder/ with layer_L_… subfolders.

#include "model/features/sparse_coder.h"

namespace attnscope {

/// True for a file named params.npz or params.safetensors (with w_enc inside for the latter).
bool isGemmaScopeFile(const QString& path);

/// The hook(s) a Gemma Scope path implies: {in, out}; empty strings when the path does not say.
std::pair<QString, QString> gemmaScopeHooksFromPath(const QString& path);

/// Reads params.npz or params.safetensors. `hookOverride` (a TransformerLens name) replaces the hook
/// derived from the path; without either, throws ModelError saying to pass --hook. Other errors name the
/// file and the array (shapes that disagree, NaN thresholds, the .npy and zip checks of npz_archive.h).
SparseCoder readGemmaScopeFile(const QString& path, const QString& hookOverride = {});

} // namespace attnscope
