#pragma once
// A Gemma Scope 2 crosscoder (gemma_scope2_multilayer.h, kind "crosscoder") decoding every one of its layers from the
// features of all of them. Apart from the reader so that reading a dictionary file does not pull in the decode's GEMM.

#include "model/core/tensor.h"
#include "model/features/dictionary_set.h"

#include <vector>

namespace attnscope {

/// The crosscoder's reconstruction of each of its layers from the features of every one: x̂_m = Σ_k f_k·W_dec_k[:, m, :]
/// + b_dec_m, [pos, d_in] for each m. `features[k]` = encodeFeatures(set.coders[k], x_k) [pos, d_sae]. Throws
/// InputError unless `set` is a crosscoder and `features` has one matrix per layer of the same positions.
std::vector<Matrix> crosscoderReconstruction(const DictionarySet& set, const std::vector<Matrix>& features);

} // namespace attnscope
