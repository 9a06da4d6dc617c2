#pragma once
// Features as nodes of a patching experiment: which features, at which positions, carry the difference between a
// clean and a corrupted prompt (same token length) for a metric (patching_metric.h). Denoising, as the patching sweeps:
// the corrupted run with one feature's activation at one position set to its clean value.
//  - attribution (Syed et al. 2023 attribution patching, per feature as Marks et al. 2024 "Sparse Feature Circuits"):
//    (f_clean − f_corrupt)·(∂x̂/∂f · ∂metric/∂hook_out), from one backward pass of the corrupted run — every cell where the
//    feature fires in either run;
//  - activation: the patched forward itself (ablate/clamp with the error term kept, feature_intervention.h) for the
//    `exactTop` cells of largest |attribution|.

#include "model/analysis/circuits/activation_patching.h"
#include "model/analysis/circuits/patching_metric.h"
#include "model/features/sparse_coder.h"

#include <vector>

namespace attnscope {

struct FeaturePatchingCell {
    int feature = 0;
    int position = 0;
    float clean = 0, corrupt = 0; ///< the feature's activation in each run
    double attribution = 0;       ///< estimated metric change
    double patched = 0;           ///< the patched run's metric change (NaN when not run)
};

struct FeaturePatching {
    QString hook;                  ///< the dictionary's output hook
    double metricClean = 0, metricCorrupt = 0;
    std::vector<FeaturePatchingCell> cells; ///< largest |attribution| first (ties: position, then feature)
};

/// Throws InputError for a missing corrupted run, different lengths, a hook that cannot be edited, and as
/// metricGradients; Cancelled. Progress: the backward pass, then one step per patched run.
FeaturePatching featurePatching(const Model& model, const PatchingRuns& runs, const SparseCoder& sae, const PatchingMetric& metric,
                                int exactTop, const Progress& progress = {});

} // namespace attnscope
