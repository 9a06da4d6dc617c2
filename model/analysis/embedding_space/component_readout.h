#pragma once
// Per-prompt component readout: what one head or MLP writes at one position, read in embedding space.
// Dar et al. 2022 (arXiv:2209.02535) project a component's output x [d_model] directly through the
// unembedding, x·W_U — no ln_final and no b_U (the bias belongs to no component) — and read the
// promoted (highest) and suppressed (lowest) tokens. The same as direct logit attribution without
// the final-norm scale.

#include "model/analysis/common/topk_accumulator.h"
#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"

#include <vector>

namespace attnscope {

struct ComponentReadout {
    std::vector<ScoredToken> promoted;   ///< highest x·W_U first
    std::vector<ScoredToken> suppressed; ///< lowest x·W_U first
};

/// A head's output at a position: result_h[p] = z_h[p]·W_O^h [d_model], from the cached z (kept in every
/// cache layout, so full and residuals-only caches give the same bits). Throws InputError for bad
/// layer/head/position.
RowVector headOutput(const Model& model, const ActivationCache& cache, int layer, int head, int position);
/// The MLP's output at a position: mlp_out[p] [d_model]. Throws InputError for bad layer/position.
RowVector mlpOutput(const Model& model, const ActivationCache& cache, int layer, int position);

/// x·W_U [d_vocab] for x [d_model] (W_U = W_U_Tᵀ; no norm, no bias).
RowVector projectToVocab(const Model& model, const Eigen::Ref<const RowVector>& x);
/// Top-k promoted and bottom-k suppressed tokens of x·W_U.
ComponentReadout readout(const Model& model, const Eigen::Ref<const RowVector>& x, int k);

/// readout(headOutput(...)).
ComponentReadout readHead(const Model& model, const ActivationCache& cache, int layer, int head, int position, int k);
/// readout(mlpOutput(...)).
ComponentReadout readMlp(const Model& model, const ActivationCache& cache, int layer, int position, int k);

} // namespace attnscope
