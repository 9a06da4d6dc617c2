#pragma once
// How well a dictionary reconstructs what it replaces on one prompt, as SAELens's evals.py reports it:
// per position the squared error, over the prompt the fraction of variance unexplained, and the
// next-token loss with the reconstruction spliced in against the clean loss and the loss with the hook
// zero-ablated.

#include "model/analysis/features/feature_activations.h"

#include <vector>

namespace attnscope {

struct ReconstructionQuality {
    std::vector<double> squaredError; ///< [pos] ‖target − x̂‖²
    std::vector<double> mse;          ///< [pos] ‖target − x̂‖² / d_out
    /// Σ_pos ‖target − x̂‖² / Σ_pos ‖target − t̄‖², t̄ the mean of target over positions (BOS included).
    double fvu = 0;
    double lossClean = 0;          ///< mean next-token cross-entropy (nats) over positions 0 … S − 2
    double lossSpliced = 0;        ///< with the output hook replaced by x̂ at every position (NaN when not editable)
    double lossZeroAblated = 0;    ///< with the output hook set to 0 at every position (NaN when not editable)
};

/// The error terms from `run`, and the three losses from two hooked forward passes over `tokens` (the prompt
/// `cache` was made from: its logits give the clean loss when they cover every position). Throws Cancelled.
ReconstructionQuality reconstructionQuality(const Model& model, const std::vector<int>& tokens, const ActivationCache& cache,
                                            const FeatureRun& run, const Progress& progress = {});

/// The three mean losses only of a hooked pass, for tests: mean next-token cross-entropy of `tokens` with `hooks`.
double promptLoss(const Model& model, const std::vector<int>& tokens, std::shared_ptr<const ForwardHooks> hooks);

} // namespace attnscope
