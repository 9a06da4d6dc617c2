#pragma once
// Gemma Scope 2's multi-layer dictionaries: cross-layer transcoders (clt/width_W_l0_S[_affine]/) and crosscoders
// (crosscoder/layer_A_B_…_width_W_l0_S/), both saved as Google's JumpReLUMultiLayerSAE split into one file per layer,
// params_layer_{i}.safetensors (Google's Gemma Scope 2 tutorial, which stacks the files along a leading layer axis):
//   w_enc [d_in, d_sae], b_enc [d_sae], threshold [d_sae], b_dec [d_in],
//   w_dec [d_sae, n_layers, d_in]          source layer i's features into every layer's output slot j
//   affine_skip_connection [d_in, d_in]    optional, layer i's input into layer i's output only, as x·A
//   f_i = ReLU(pre_i)·(pre_i > θ_i),  pre_i = x_i·w_enc_i + b_enc_i;   x̂_j = Σ_i f_i·w_dec_i[:, j, :] + b_dec_j (+ x_j·A_j)
// A CLT reads pre_feedforward_layernorm.output and writes post_feedforward_layernorm.output of every layer
// (blocks.L.ln2.hook_normalized → blocks.L.hook_mlp_out) and, as circuit-tracer's load_gemma_scope_2_clt does
// (w_dec[i, :, i:, :]), only the slots j ≥ i of source layer i are read: a feature writes into its own layer and
// those above (the tutorial's decode would add the slots below too, which training leaves near zero).
// A crosscoder reads and writes the residual stream after each of its layers (blocks.L.hook_resid_post): every
// slot is used, each layer's features reconstructing all of its layers.

#include "model/features/dictionary_set.h"

#include <QString>
#include <vector>

namespace attnscope {

/// Reads `files` (file k is layer k of the dictionary, in order) with `hooks[k]` = {hookIn, hookOut} of layer k, as a
/// cross-layer transcoder (`crosscoder` false: kind cross_layer_transcoder, file i is model layer i) or a crosscoder
/// (kind crosscoder). DictionarySet::crossLayerDecoders[i] holds slots i … n − 1 of a CLT's w_dec_i (as for circuit-tracer's
/// own CLT files: [i][j − i] decodes into layer j), and every slot 0 … n − 1 of a crosscoder's ([k][m] into its layer m);
/// coders[i].W_dec is slot i and coders[i].W_skip the affine skip (x·A). Throws ModelError naming the file and tensor:
/// shapes that disagree between files or with n, a missing tensor, NaN thresholds.
DictionarySet readGemmaScope2MultiLayer(const std::vector<QString>& files, const std::vector<std::pair<QString, QString>>& hooks,
                                        bool crosscoder);

} // namespace attnscope
