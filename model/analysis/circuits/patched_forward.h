#pragma once
// Patched forward passes: a base run (a cached forward pass) rerun with activations substituted at named
// hook points, computing only what the substitution can change. The engine under activation patching,
// ablation sweeps and path patching (activation_patching.h, path_patching.h).
//
// What is recomputed. A substitution at layer l and position p cannot change anything before layer l, nor,
// causal attention being what it is, any position before p: those keep the base run's values. So a run
// starts at the first (layer, position) where a substituted value differs from the base's (bitwise), and
// from there on recomputes only positions ≥ p of every later layer, reading the earlier positions' keys
// and values from the base cache. Positions after the metric position never reach it and are skipped; the
// last layer computes its attention output and MLP for the metric position only. A run whose substitutions
// all equal the base's computes nothing and returns the base run's logits.
//
// Batching. The runs of one call share each weight read: their recomputed rows are stacked into one
// matrix for every projection and MLP (so a sweep of 144 heads reads each weight matrix a few times, not
// 144 times), attention runs per (run, head) on the OpenMP threads.
//
// Bitwise. Every recomputed row is computed by the forward pass's own kernels in the forward pass's order
// (headAttentionRows, applyNorm, weightGemm with the row count class of the full pass): a row whose inputs
// equal the full pass's gets the full pass's bits. So substituting a run's own values changes nothing, and
// substituting every position of resid_pre at layer 0 with another run's gives that run's logits bitwise
// (for d_model a multiple of 16, the alignment under which Eigen's row reductions order their sums alike).
// Any other substitution equals runForward with the same substitution made by a hook (forward_hooks.h)
// within float rounding. Logits are computed as runForward computes the last position's (one row).

#include "model/core/progress.h"
#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"

#include <QString>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace attnscope {

/// The hook points a patch can substitute (TransformerLens names: blocks.l.hook_resid_pre, hook_attn_out,
/// hook_mlp_out, attn.hook_z, hook_q, hook_k, hook_v, hook_pattern).
enum class PatchHook { ResidPre, AttnOut, MlpOut, Z, Q, K, V, Pattern };

/// "resid_pre", "attn_out", "mlp_out", "z", "q", "k", "v", "pattern".
QString patchHookName(PatchHook hook);
/// Inverse of patchHookName; also "resid" for resid_pre. nullopt for anything else.
std::optional<PatchHook> patchHookFromName(const QString& name);
/// True for the per-head hooks z, q, k, v, pattern.
bool isHeadHook(PatchHook hook);

/// One substitution: at `hook` of `layer` the rows `positions` of the activation take the same rows of
/// `values`. Shapes of `values` (the activation's layout in LayerCache):
///   resid_pre, attn_out, mlp_out  [pos, d_model];
///   z, q, k, v                    [pos, n_heads·d_head], head h in columns h·d_head…; q/k before rotary
///                                 embeddings, k/v repeated for grouped-query attention (query head h's copy);
///   pattern                       [query pos, key pos] of head `head` (row i replaced as a whole).
struct ActivationPatch {
    PatchHook hook = PatchHook::ResidPre;
    int layer = 0;
    int head = -1;              ///< z, q, k, v: the head whose columns are replaced, -1 = every head; pattern: required
    std::vector<int> positions; ///< query positions replaced, ascending; empty = every position
    const Matrix* values = nullptr;    ///< must outlive the call (a cache's matrix, or kept by `owner`)
    std::shared_ptr<const void> owner; ///< keeps `values` alive when it is not a cache's
};

/// An activation to read out of a patched run: head `head`'s q, k or v input at `layer` (hook_q/k/v, before
/// rotary embeddings), every position: [pos, d_head]. Positions the run did not recompute hold the base's.
struct ActivationCapture {
    PatchHook hook = PatchHook::Q; ///< Q, K or V
    int layer = 0;
    int head = 0;
};

/// One patched run.
struct PatchedRun {
    std::vector<ActivationPatch> patches;
    std::vector<ActivationCapture> captures;
};

struct PatchedResult {
    RowVector logits;              ///< [d_vocab] at the options' position
    std::vector<Matrix> captured;  ///< one per capture, [pos, d_head]
    int firstLayer = -1;           ///< where the rerun started; -1 = nothing differed, logits are the base's
    int firstPosition = -1;
};

struct PatchedForwardOptions {
    int position = -1; ///< the position whose logits are returned; -1 = the last
};

/// Runs every run of `runs` as the base run with its patches, sharing weight reads (see the file comment).
/// base: a cache of the run patched into (any layout: layers are fetched with base.layer(l)); the base's
/// own tokens are not rerun. Progress units: layers done out of n_layers; throws Cancelled.
/// Throws InputError for a patch naming a layer, head or position the model or prompt does not have, values
/// of the wrong shape, a capture of another hook than q/k/v, or a position outside the prompt.
std::vector<PatchedResult> runPatched(const Model& model, const ActivationCache& base, std::span<const PatchedRun> runs,
                                      const PatchedForwardOptions& options = {}, const Progress& progress = {});

/// The logits at `position` of a cached run, as runPatched computes them (ln_final of the final residual's
/// row, then the unembedding of one row, as runForward computes the last position's): [d_vocab].
RowVector positionLogits(const Model& model, const ActivationCache& cache, int position);

/// Bytes of per-run state a batch of runPatched holds for a prompt of S positions (to size batches).
qint64 patchedRunBytes(const ModelConfig& cfg, int S);

/// The activation `hook` of a cached layer ([pos, …] as in ActivationPatch; pattern: head `head`'s).
const Matrix& hookActivation(const LayerCache& layer, PatchHook hook, int head);

} // namespace attnscope
