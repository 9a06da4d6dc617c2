#pragma once
// Input attribution: how much each input token's embedding contributes to a metric (patching_metric.h).
//  - gradient × input: Σ_d (e_p − b_p)_d · ∂metric/∂e_p,d at the input, per position p;
//  - integrated gradients (Sundararajan et al. 2017, "Axiomatic Attribution for Deep Networks", §3):
//    Σ_d (e_p − b_p)_d · mean over α of ∂metric/∂e_p,d at b + α·(e − b), α at the midpoints of `steps` equal
//    intervals (the Riemann midpoint rule, Captum's riemann_middle). Completeness: the attributions sum to
//    metric(e) − metric(b), up to the rule's error, which the result reports. In a model without learned
//    positions or biases (Llama family) the zero baseline makes every activation zero, and the path crosses the
//    norms' √eps floor, where the integrand spikes: stories260K's error stays ≥ 0.09 up to 1024 steps there.
//    A token baseline avoids it.
// e is the token embedding W_E[tokens] (hook_embed); positions keep their learned or rotary positions. The
// baseline b is the zero embedding or one token's embedding at every position.

#include "model/analysis/circuits/patching_metric.h"
#include "model/core/progress.h"
#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"

#include <span>
#include <vector>

namespace attnscope {

enum class SaliencyMethod { GradientTimesInput, IntegratedGradients };

/// "grad-x-input", "ig".
QString saliencyMethodName(SaliencyMethod m);

struct InputAttributionOptions {
    SaliencyMethod method = SaliencyMethod::IntegratedGradients;
    int steps = 32;          ///< integrated gradients: interpolation points (≥ 1)
    int baselineToken = -1;  ///< −1: the zero embedding; else this token's embedding at every position
    PatchingMetric metric;   ///< logit_diff, logit, prob or logprob (kl has no reference distribution here)
};

struct InputAttribution {
    InputAttributionOptions options;
    int position = 0;                  ///< where the metric reads the logits
    std::vector<double> attributions;  ///< [pos] one number per input token
    double metricInput = 0;            ///< metric(e)
    double metricBaseline = 0;         ///< metric(b)
    double sum = 0;                    ///< Σ attributions
    /// |sum − (metricInput − metricBaseline)| / max(|metricInput − metricBaseline|, 1e-12): how far the
    /// attributions are from completeness (integrated gradients; for gradient × input it says how far the
    /// model is from linear).
    double completenessError = 0;
};

/// The forward pass of `tokens` with the token embedding (hook_embed) replaced by `embedding` [pos, d_model] and the
/// positions kept (posEmbed [pos, d_model]: the run's pos_embed, zeros for rotary models): a hook sets layer 0's
/// resid_pre to embedding + posEmbed. A full cache without per-head results, with the logits of every position or
/// (allLogits false) of the last only. Throws as runForward.
ActivationCache runWithTokenEmbedding(const Model& model, std::span<const int> tokens, const Matrix& embedding, const Matrix& posEmbed,
                                      bool allLogits = true);

/// The attribution of `tokens` (ids in [0, d_vocab)). Progress units: forward + backward passes (1 + steps for
/// integrated gradients, 2 for gradient × input). Throws InputError for a kl metric, a metric token or baseline
/// token outside the vocabulary, steps < 1, a position outside the prompt, and as runForward/runBackward;
/// Cancelled between passes.
InputAttribution attributeInput(const Model& model, std::span<const int> tokens, const InputAttributionOptions& options,
                                const Progress& progress = {});

} // namespace attnscope
