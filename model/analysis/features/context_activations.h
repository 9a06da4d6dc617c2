#pragma once
// A feature's activation at every token of a stored corpus context: the contexts database (context_store.h)
// keeps per context only the window's token ids and the max-activating position, so the dashboard's tinted
// contexts recompute the rest: the model runs on the window and the dictionary encodes its input hook, as
// runFeatureContexts did when it wrote the record.

#include "model/core/tensor.h"
#include "model/features/sparse_coder.h"
#include "model/transformer/model.h"

#include <vector>

namespace attnscope {

/// [pos] feature `feature`'s activation at each token of `ids` (a window as stored: [BOS] + chunk), i.e.
/// encodeFeatures(sae, hook_in activation of runForward(ids))[:, feature]. Throws InputError when the coder's
/// input hook is not in the model or its width differs (requireHook), when feature is outside [0, d_sae), or
/// when ids is empty.
Eigen::VectorXf contextActivations(const Model& model, const SparseCoder& sae, const std::vector<int>& ids, int feature);

} // namespace attnscope
