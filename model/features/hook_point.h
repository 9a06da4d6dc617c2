#pragma once
// Where a dictionary reads and writes: TransformerLens hook names ("blocks.3.hook_resid_post",
// "blocks.3.ln2.hook_normalized", "blocks.3.attn.hook_z", circuit-tracer's "mlp.hook_in" / "mlp.hook_out")
// mapped to the fields of our ActivationCache, and edits of the activation at a hook during a forward
// pass (forward_hooks.h) for splicing a reconstruction in, ablating or steering.
//
// TransformerLens loads models with fold_ln, so its ln2.hook_normalized is the MLP's input (the norm's gain
// folded into W_in): here LayerCache::ln2, the normalised value times the gain (+ bias), which is what the
// files trained on it read. With Gemma 2's post-norms hook_attn_out / hook_mlp_out are the normed outputs.

#include "model/transformer/activation_cache.h"
#include "model/transformer/forward_hooks.h"
#include "model/transformer/model_config.h"

#include <QString>
#include <functional>
#include <optional>

namespace attnscope {

enum class HookSite {
    Embed,     ///< hook_embed [pos, d_model] (no layer)
    ResidPre,  ///< blocks.L.hook_resid_pre
    ResidMid,  ///< blocks.L.hook_resid_mid (also hook_mlp_in, TransformerLens's copy of it before ln2)
    ResidPost, ///< blocks.L.hook_resid_post
    AttnOut,   ///< blocks.L.hook_attn_out
    MlpOut,    ///< blocks.L.hook_mlp_out (circuit-tracer: mlp.hook_out)
    MlpIn,     ///< blocks.L.ln2.hook_normalized (circuit-tracer: mlp.hook_in): the MLP's input [pos, d_model]
    Z,         ///< blocks.L.attn.hook_z [pos, n_heads·d_head] (heads concatenated, SAELens hook_z reshaping)
    MlpPost,   ///< blocks.L.mlp.hook_post [pos, d_mlp]
};

struct HookPoint {
    int layer = -1;
    HookSite site = HookSite::ResidPost;

    /// The canonical TransformerLens name ("blocks.3.hook_resid_post", "hook_embed").
    QString name() const;
    /// Values per position at this hook for `cfg`.
    int width(const ModelConfig& cfg) const;
    bool operator==(const HookPoint&) const = default;
};

/// Parses a TransformerLens hook name; nullopt when it is not one this file knows. A name without
/// "blocks.L." (circuit-tracer's config.yaml) takes `defaultLayer`.
std::optional<HookPoint> parseHookName(const QString& name, int defaultLayer = -1);

/// parseHookName checked against the model: throws InputError "FILE: hook NAME …" (naming `fileLabel`)
/// for an unknown name (listing the known ones), a layer outside [0, n_layers), or `width` ≠ the hook's width
/// when width ≥ 0 ("… reads 768 values per position but blocks.3.hook_resid_post has 512 (d_model)").
HookPoint requireHook(const ModelConfig& cfg, const QString& name, int width, const QString& fileLabel, int defaultLayer = -1);

/// The activation at `hook` in a cache [pos, width] (a copy; recomputes a residuals-only layer).
Matrix hookActivation(const ActivationCache& cache, const HookPoint& hook);

/// True when a forward pass can replace the activation at this hook (residual streams, attention and MLP
/// outputs, z): addHookEdit accepts it.
bool hookIsEditable(const HookPoint& hook);

/// Throws InputError "NAME cannot be edited during a forward pass (editable: …)" unless hookIsEditable(hook).
void requireEditable(const HookPoint& hook);

/// Chains `edit` into `hooks` at `hook` (after any callback already there): it gets the activation of every
/// position [pos, width] as computed and changes it in place; downstream uses what it leaves
/// (resid_mid / resid_post are recomputed from edited attn_out / mlp_out). Throws InputError for a hook
/// that is not editable (hook_embed, ln2.hook_normalized, mlp.hook_post).
void addHookEdit(ForwardHooks& hooks, const HookPoint& hook, std::function<void(Matrix& x)> edit);

} // namespace attnscope
