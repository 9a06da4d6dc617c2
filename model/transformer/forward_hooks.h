#pragma once
// Hooks of the forward pass: callbacks at TransformerLens's hook points that see — and may replace — an
// activation as it is computed, like HookedTransformer.run_with_hooks. For interventions that must run
// the whole model with an activation substituted outright (the reference of activation patching, path
// patching's two passes, stitching experiments); the patching sweeps of model/analysis use their own
// batched, partial reruns (patched_forward.h) and are checked against a hooked runForward.
//
// Every callback gets the layer and the activation of every position as computed ([pos, …], the same
// layout as LayerCache) and changes it in place; what it leaves is cached and used downstream.
// Unset callbacks cost nothing; a pass without hooks is bitwise the pass it always was.

#include "model/core/tensor.h"

#include <functional>

namespace attnscope {

struct ForwardHooks {
    using Activation = std::function<void(int layer, Matrix& x)>;
    Activation resid_pre; ///< blocks.l.hook_resid_pre [pos, d_model], before ln_1
    /// hook_q, hook_k, hook_v [pos, n_heads·d_head] after the bias, k/v already repeated for grouped-query
    /// attention (head h's columns are what query head h reads; TransformerLens keeps n_kv_heads there), and
    /// before rotary embeddings: q_rot/k_rot are recomputed from what the hook leaves.
    Activation q, k, v;
    /// hook_pattern of one head [query pos, key pos] after the softmax. Return true when it changed the
    /// pattern: that head's z is then recomputed as pattern·V (full product, not the causal blocks).
    std::function<bool(int layer, int head, Matrix& pattern)> pattern;
    Activation z;        ///< hook_z [pos, n_heads·d_head], after ForwardOptions::ablations
    Activation attn_out; ///< hook_attn_out [pos, d_model]; resid_mid is recomputed from it
    Activation resid_mid; ///< hook_resid_mid [pos, d_model], after attn_out's hook; ln_2 reads what it leaves
    Activation mlp_out;  ///< hook_mlp_out [pos, d_model]; resid_post is recomputed from it
    Activation resid_post; ///< hook_resid_post [pos, d_model], after mlp_out's hook; the next layer (or ln_final) reads it

    bool any() const { return resid_pre || q || k || v || pattern || z || attn_out || resid_mid || mlp_out || resid_post; }
};

} // namespace attnscope
