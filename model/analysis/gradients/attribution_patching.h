#pragma once
// Attribution patching (Nanda 2023, "Attribution Patching: Activation Patching At Industrial Scale"; Syed et al.
// 2023 §2): every cell of an activation-patching sweep estimated to first order from one backward pass,
//   metric(base with a patched in) ≈ metric(base) + Σ (a_other − a_base)·∂metric/∂a |base,
// where base is the run patched into (the corrupted run when denoising, the clean run when noising) and the sum
// runs over the cell's entries (one head's columns, one position's row, one query row of a pattern).
// AtP* (Kramár et al. 2024, "AtP*: An efficient and scalable method for localizing LLM behaviour to components",
// §3.1, the QK fix): q and k cells recompute the patched head's softmax exactly and stay linear only in the
// pattern, Σ (pattern_patched − pattern_base)·∂metric/∂pattern; a key position's patch changes the column
// every later query reads it by, so its sum runs over those queries.
// The cells, directions, metric, normalisation and JSON are those of runPatchingSweep (activation_patching.h).

#include "model/analysis/circuits/activation_patching.h"

namespace attnscope {

/// Every cell of the sweep `options` describes (patchingCells), estimated by attribution patching (AtP* for q
/// and k cells when `atpStar`). options.ablation must be None. Progress units: layers of the backward pass.
/// Throws InputError as runPatchingSweep (metric, position, missing corrupted run, lengths), for an ablation,
/// and as runBackward (memory budget); Cancelled.
PatchingSweep runAttributionPatching(const Model& model, const PatchingRuns& runs, const PatchingOptions& options,
                                     bool atpStar = false, const Progress& progress = {});

} // namespace attnscope
