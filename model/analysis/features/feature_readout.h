#pragma once
// One feature read in embedding space (Dar et al. 2022, arXiv:2209.02535, §"Parameter Projection", applied to
// dictionary directions as Neuronpedia's logit tables and SAELens's logit-weight analysis do) and its direct
// effect on a logit:
//  - decoder: W_dec[f] through ln_final's linear part — centred (LayerNorm) and times its gain, without the
//    per-position scale a direction does not have — then W_U: the tokens the feature promotes and suppresses;
//  - encoder: W_E·W_enc[:, f] [d_vocab]: the token embeddings that excite / inhibit the feature directly;
//  - direct logit attribution at a position p (direct_logit_attribution.h's rule): a·(centred W_dec[f]) ⊙
//    w_final / σ_p · W_U[:, t], the logit (before any final soft-cap) the feature's write adds to t through the
//    residual stream, for dictionaries that write it (resid_*, attn_out, mlp_out; zero-to-the-stream for z).

#include "model/analysis/common/topk_accumulator.h"
#include "model/analysis/features/feature_activations.h"

#include <vector>

namespace attnscope {

struct FeatureReadout {
    int feature = 0;
    std::vector<ScoredToken> decoderTop, decoderBottom; ///< highest / lowest first
    std::vector<ScoredToken> encoderTop, encoderBottom;
};

/// Top and bottom k tokens of the feature's decoder and encoder directions. The encoder side needs
/// d_in = d_model (NaN-free empty lists otherwise, e.g. hook_z); so does the decoder side with d_out.
/// Throws InputError for a feature out of range.
FeatureReadout readFeature(const Model& model, const SparseCoder& sae, int feature, int k);

/// The feature's direct logit attribution to `token` at `position` in `run` (activation × direction, see the
/// file comment); 0 where it does not fire. Throws InputError for bad indices or a dictionary whose output is
/// not in the residual stream's space (d_out ≠ d_model or hook_z).
double featureLogitAttribution(const Model& model, const ActivationCache& cache, const SparseCoder& sae, const FeatureRun& run,
                               int feature, int position, int token);

} // namespace attnscope
