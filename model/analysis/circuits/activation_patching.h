#pragma once
// Activation patching (causal tracing; Meng et al. 2022 "ROME" §2.1, Vig et al. 2020, Wang et al. 2022 "IOI"
// §3; conventions of Zhang & Nanda 2023, "Towards Best Practices of Activation Patching"): run a corrupted
// prompt with one activation taken from the clean prompt (denoising; noising swaps the roles) and measure how
// much of the clean behaviour comes back, for every layer × position or every head. Ablations alongside:
// the activation replaced by zero, by its mean over positions, by its mean over reference prompts, or by the
// corrupted run's (resample) — in the clean run.
//
// Every sweep cell is one patched run of the engine (patched_forward.h), so each recomputes only the layers
// and positions its patch can change; cells are batched layer by layer and reported as they finish.

#include "model/analysis/circuits/patched_forward.h"
#include "model/analysis/circuits/patching_metric.h"

#include <functional>
#include <limits>

namespace attnscope {

enum class PatchDirection {
    Denoise, ///< clean activations patched into the corrupted run (the default)
    Noise    ///< corrupted activations patched into the clean run
};

enum class AblationKind {
    None,          ///< patching: the other run's activation (see PatchDirection)
    Zero,          ///< the activation := 0
    Mean,          ///< := its mean over the clean prompt's positions (every position gets the same vector)
    ReferenceMean, ///< := its mean over the reference prompts, per position when they have the clean prompt's length
                   ///< (else over all their positions)
    Resample       ///< := the corrupted run's activation (resample ablation)
};

/// "denoise", "noise"; "none", "zero", "mean", "reference-mean", "resample".
QString patchDirectionName(PatchDirection d);
QString ablationKindName(AblationKind k);
std::optional<AblationKind> ablationKindFromName(const QString& name);

struct PatchingOptions {
    PatchHook hook = PatchHook::Z;
    bool byPosition = false;   ///< heads (z, q, k, v, pattern): one cell per (layer, head, position); resid_pre,
                               ///< attn_out and mlp_out are always by position
    PatchDirection direction = PatchDirection::Denoise;
    AblationKind ablation = AblationKind::None; ///< not None: ablate in the clean run instead of patching
    PatchingMetric metric;
};

/// One cell of a sweep: which activation was replaced and the metric that followed.
struct PatchingCell {
    int layer = 0;
    int head = -1;     ///< -1 for resid_pre, attn_out, mlp_out
    int position = -1; ///< -1 = every position (head sweeps without byPosition)
    double metric = std::numeric_limits<double>::quiet_NaN();
    double normalised = std::numeric_limits<double>::quiet_NaN();
    bool done = false;
    bool recomputed = false; ///< false: the replacement equals the base run's activation, nothing was rerun
};

/// The runs a sweep reads: the clean and corrupted prompts' caches (and reference prompts' for ReferenceMean).
struct PatchingRuns {
    std::shared_ptr<const ActivationCache> clean, corrupt; ///< corrupt may be null for Zero/Mean/ReferenceMean ablations
    std::vector<std::shared_ptr<const ActivationCache>> reference;
};

/// How a sweep's cells were obtained: one patched run each, or estimated from gradients
/// (model/analysis/gradients/attribution_patching.h).
enum class PatchingMethod {
    Activation,  ///< one patched forward per cell
    Attribution, ///< metric(base) + (a_other − a_base)·∂metric/∂a, one backward for every cell
    AtpStar      ///< Attribution, with q and k cells through the patched head's exact softmax (Kramár et al. 2024)
};
/// "activation", "attribution", "atp_star".
QString patchingMethodName(PatchingMethod m);

struct PatchingSweep {
    PatchingOptions options;
    PatchingMethod method = PatchingMethod::Activation;
    int position = 0;            ///< the metric position
    double clean = 0, corrupt = std::numeric_limits<double>::quiet_NaN(); ///< the metric on each run
    std::vector<PatchingCell> cells;
    int cellsDone = 0;
};

/// Throws InputError unless the two prompts have the same number of tokens; the message shows both
/// tokenizations ("the clean prompt has 15 tokens [<|endoftext|>|When|␣Mary|…], the corrupted 14 […]").
void requireSameTokenLength(const Tokenizer& tokenizer, std::span<const int> clean, std::span<const int> corrupt);

/// Runs the forward passes a sweep reads (full caches, per-head results off). corrupt/reference may be
/// empty. Throws as runForward and requireSameTokenLength; Cancelled.
PatchingRuns preparePatchingRuns(const Model& model, std::span<const int> clean, std::span<const int> corrupt,
                                 const std::vector<std::vector<int>>& reference = {}, const Progress& progress = {});

/// The cells of a sweep, without values, in the order they are computed and reported: layer-major; then
/// position (resid_pre, attn_out, mlp_out: layer × position), head (heads), or head then position (byPosition).
std::vector<PatchingCell> patchingCells(const ModelConfig& cfg, int nPositions, const PatchingOptions& options);

/// Runs every cell of the sweep. `onCells(sweep, first, count)` (optional) is called on the calling thread
/// each time a batch of cells [first, first + count) is done, with the sweep so far. Progress units: cells.
/// Throws InputError for a metric token outside the vocabulary, a metric position outside the prompt, a
/// missing corrupted run (patching, resample), missing reference runs, or reference prompts of another
/// length than the clean prompt for the pattern; Cancelled.
PatchingSweep runPatchingSweep(const Model& model, const PatchingRuns& runs, const PatchingOptions& options,
                               const Progress& progress = {},
                               const std::function<void(const PatchingSweep&, size_t first, size_t count)>& onCells = {});

/// The sweep as a matrix for a heatmap: resid_pre/attn_out/mlp_out [layer, position]; heads [layer, head];
/// heads by position [layer·n_heads + head, position]. `normalised` picks the value (else the raw metric);
/// cells not done yet are NaN.
Matrix patchingGrid(const ModelConfig& cfg, int nPositions, const PatchingSweep& sweep, bool normalised);

} // namespace attnscope
