#pragma once
// Interventions on transcoder features, as circuit-tracer's ReplacementModel.feature_intervention does them
// (replacement_model.py; Ameisen et al. 2025 §3, "validating mechanisms with interventions"): set some features of
// the prompt to chosen values (0 ablates; a·k scales) and see what the model predicts then.
//   Live (circuit-tracer's defaults, freeze_attention=True): the attention patterns of the prompt are the clean run's;
//     the norms and the real MLPs run on the intervened stream, so downstream features respond. At each layer with an
//     intervention, the MLP output gets Σ (value − current activation)·W_dec[f], the current activation read from
//     the transcoder on this run's MLP input (zero at BOS); with a cross-layer set, every layer from there up gets
//     its decoder slice's share. Features of later layers are read the same way.
//   Frozen (direct_effects=True): patterns, norm divisors and every other feature are held at the clean run
//     (replacementLogits with the edited activations and the error nodes). Then a logit's change is exactly the sum
//     of the graph's edges from the edited features (× −1 for an ablation), which the tests check.
// Axis names: pos, d_vocab, d_transcoder.

#include "model/analysis/graphs/attribution_graph.h"

#include <span>
#include <vector>

namespace attnscope {

struct FeatureIntervention {
    int layer = 0;
    int position = 0;
    int feature = 0;
    float value = 0; ///< the activation the feature is set to
};

enum class InterventionMode {
    Live,   ///< patterns frozen; norms, MLPs and later features live (circuit-tracer's default)
    Frozen, ///< direct effects only: patterns, norm divisors and all other features frozen
};

struct InterventionOptions {
    InterventionMode mode = InterventionMode::Live;
    int continuationTokens = 0; ///< Live only: greedy tokens written after the prompt with the intervention held
                                ///< (the prompt's patterns stay frozen; new positions attend freely)
};

struct InterventionResult {
    Matrix logits;                   ///< [pos, d_vocab] after the intervention (before the final soft-cap in Frozen mode)
    std::vector<Matrix> activations; ///< [layer] [pos, d_transcoder] the features as this run reads them, edits included
    int activeFeatures = 0;          ///< non-zero entries of `activations` (BOS excluded)
    std::vector<int> continuation;   ///< the greedy continuation's ids (options.continuationTokens of them, fewer at n_ctx)
};

/// Runs the prompt of `rm` with `interventions` applied. Throws InputError when an intervention names a layer,
/// position or feature outside the model, the prompt or the transcoder, or sets a non-finite value; Cancelled when
/// `progress` says so (progress units: passes, 1 + continuationTokens).
InterventionResult interveneOnFeatures(const ReplacementModel& rm, std::span<const FeatureIntervention> interventions,
                                       const InterventionOptions& options = {}, const Progress& progress = {});

/// One intervention written as text: "LAYER:POS:FEATURE=VALUE" sets the feature to VALUE, "LAYER:POS:FEATURE*FACTOR" to
/// FACTOR × its activation in `rm` (×0 ablates). Throws InputError quoting `text` when it is neither (the numbers are
/// checked by interveneOnFeatures).
FeatureIntervention parseFeatureIntervention(const ReplacementModel& rm, const QString& text);

/// The interventions that set every feature node in `nodes` (indices into graph.nodes; other kinds are skipped) to
/// factor × its activation: 0 ablates the group, 2 doubles it (the GUI's supernode actions).
std::vector<FeatureIntervention> scaleFeatureNodes(const AttributionGraph& graph, std::span<const int> nodes, float factor);

} // namespace attnscope
