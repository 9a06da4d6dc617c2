#pragma once
// A float64 forward pass of any model the library opens (GPT-2 and Llama families: LayerNorm/RMSNorm, learned or
// rotary positions in both layouts, grouped-query heads, sliding windows, gelu_new/GELU/SiLU/ReLU, gated MLPs,
// tied or untied unembedding), written from the formulas in plain loops and Eigen double matrices. It shares
// nothing with model/transformer/forward.cpp or backward.cpp but the weights (Weight::toMatrix) and the
// config's numbers. For the backward pass's finite-difference tests:
//  - a perturbation can be added at any hook point (TransformerLens names, the cache's layouts);
//  - the nonlinearities a backward can stop the gradient through can be frozen at a base run's values
//    (norm divisors, attention patterns, MLP slopes), which is what "detached" means for a difference quotient.
// Slow; for tiny models.

#include "model/transformer/model.h"

#include <Eigen/Core>
#include <QString>
#include <map>
#include <vector>

namespace attnscope::test {

using Matrix64 = Eigen::MatrixXd;

/// What a base run records and a frozen run reuses.
struct Frozen64 {
    std::map<QString, Eigen::VectorXd> divisors;  ///< per norm ("blocks.l.ln1", "blocks.l.ln2", "ln_final"): [pos]
    std::map<int, std::vector<Matrix64>> patterns; ///< [layer][head] softmax patterns
    std::map<int, Matrix64> mlpFactors;            ///< [layer]: act(pre)/pre (ungated) or act(gate) (gated)
};

struct Hooked64Options {
    bool freezeNorm = false, freezePattern = false, freezeMlp = false; ///< read from `frozen` instead of computing
    bool freezePostAttentionNorm = false; ///< only the post-attention norms' divisors ("blocks.l.ln1_post") from `frozen`
    const Frozen64* frozen = nullptr;
    Frozen64* record = nullptr; ///< filled with this run's values when set
    /// Added at one hook point: "hook_embed", "blocks.l.hook_resid_pre", "…hook_resid_mid", "…hook_resid_post",
    /// "…hook_attn_out", "…hook_mlp_out", "…mlp.hook_pre" (the cache's mlp_pre), "…mlp.hook_post",
    /// "…attn.hook_q/k/v/z" ([pos, n_heads·d_head], k and v per query head, before rotary),
    /// "…attn.hook_pattern.h" (head h: [query, key], masked cells ignored); and the receivers of edge attribution
    /// (TransformerLens's split inputs, [pos, d_model]): "…hook_q_input.h", "…hook_k_input.h", "…hook_v_input.h"
    /// (the copy of resid_pre that only head h's query, key or value projection reads; a grouped-query head's
    /// key and value read its group's weights) and "…hook_mlp_in" (the MLP's copy of resid_mid).
    QString hook;
    Matrix64 delta;
    std::vector<std::pair<QString, Matrix64>> more; ///< further (hook, delta) pairs, each as hook/delta
};

/// Logits [pos, d_vocab] of `tokens`, in float64.
Matrix64 hookedLogits64(const Model& model, const std::vector<int>& tokens, const Hooked64Options& options = {});

} // namespace attnscope::test
