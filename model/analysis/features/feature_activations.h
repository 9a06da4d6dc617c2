#pragma once
// A dictionary run on one prompt: the activation at its input hook, the features it fires, and its
// reconstruction of the output hook (sparse_coder.h for the formulas).

#include "model/features/hook_point.h"
#include "model/features/sparse_coder.h"
#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"

#include <vector>

namespace attnscope {

struct FeatureRun {
    HookPoint hookIn, hookOut;
    Matrix x;       ///< [pos, d_in] the activation at hookIn
    Matrix f;       ///< [pos, d_sae] feature activations
    Matrix xhat;    ///< [pos, d_out] the reconstruction
    Matrix target;  ///< [pos, d_out] the activation at hookOut (== x for an SAE)

    /// The firing features of one position, largest first, at most `top` (≤ 0: all).
    std::vector<FeatureValue> firing(int position, int top) const { return firingFeatures(f.row(position), top); }
    /// Features that fire at some position.
    int aliveCount() const;
};

/// Encodes the cache's activation at the coder's input hook and decodes it. Throws InputError when the hooks
/// are not in the model or the widths differ (requireHook).
FeatureRun runDictionary(const Model& model, const ActivationCache& cache, const SparseCoder& sae);

} // namespace attnscope
