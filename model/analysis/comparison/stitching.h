#pragma once
// Zero-shot stitching through embedding space (Dar et al. 2022, "Analyzing Transformers in Embedding
// Space", arXiv:2209.02535, section "Zero-shot stitching"): model A's first k blocks run on a text, A's
// hidden state h_k is mapped into model B's feature space with M = E_Aᵀ·(E_Bᵀ)⁺ (model/analysis/comparison/stitch_map.h),
// and model B's blocks k … n_layers_B − 1, its final norm and its unembedding finish the pass:
//     h_0 = embed + pos_embed of A (k = 0: A's embeddings only), h_k = resid_post of A's block k − 1,
//     x = h_k·M  [pos, d_model_B]   (or ln_final_A(h_k)·M: the variant that normalises first),
//     x ← block_l of B (l = k … n_layers_B − 1; none when k ≥ n_layers_B),
//     logits = ln_final_B(x)·W_U_B + b_U_B.
// k counts A's blocks that ran: 0 … n_layers_A. The two models share the vocabulary; d_model may differ,
// and so may the family (GPT-2 with learned positions, the Llama family with rotary ones: B's rotary
// positions are applied inside its attention, A's learned positions travel in h). Stitching a model onto
// itself with the pseudo-inverse of a full-rank E gives M = I and so its own logits, within float rounding.

#include "model/analysis/comparison/next_token_loss.h"
#include "model/analysis/comparison/stitch_map.h"

#include <memory>
#include <span>
#include <vector>

namespace attnscope {

/// One recipe: the map (pseudo-inverse or transpose, embedding side, rcond) and whether A's final norm is
/// applied to h before projecting. Every result carries its variant.
struct StitchVariant {
    StitchMapOptions map;
    bool finalNormA = false; ///< x = ln_final_A(h_k)·M instead of h_k·M
    bool operator==(const StitchVariant&) const = default;
    /// Short id for JSON and files: "pinv" or "transpose", then "+ln_final_A" and "@W_U" when they apply.
    QString id() const;
    /// What it computes, for legends: "h·E_Aᵀ·(E_Bᵀ)⁺ (rcond 1e-05)", "ln_final_A(h)·E_Aᵀ·E_B", ….
    QString label() const;
};

/// The paper's four variants on one side: pseudo-inverse and transpose, each without and with A's final norm.
std::vector<StitchVariant> paperStitchVariants(EmbeddingSide side = EmbeddingSide::Input, double rcond = kDefaultStitchRcond);

/// A's and B's own passes over the text, shared by every k and variant.
struct StitchBase {
    std::vector<int> tokens;    ///< [pos] (BOS included when prepended)
    std::vector<Matrix> residA; ///< [k = 0 … n_layers_A][pos, d_model_A]: h_k (embed + pos_embed, then each resid_post)
    NextTokenPredictions a, b;  ///< model A's and model B's own predictions over the text
    int topK = 10;
};

/// Runs A (every residual stream, all logits) and B (all logits) on `tokens`. Throws InputError when the
/// vocabularies differ (requireSharedVocabulary), for fewer than 2 tokens (the loss needs a next token), for
/// a text longer than either context (naming both n_ctx), or an out-of-range id. Progress: both passes'
/// layers; throws Cancelled.
StitchBase stitchBase(const Model& a, const Model& b, std::span<const int> tokens, int topK = 10,
                      const Progress& progress = {});

/// The stitched state entering B's block k: h_k·M (or ln_final_A(h_k)·M) [pos, d_model_B]. Throws InputError for
/// k outside [0, n_layers_A] or a map of another shape.
Matrix stitchedInput(const Model& a, const StitchBase& base, const StitchMap& map, bool finalNormA, int k);

/// The stitched model's logits [pos, d_vocab] at stitch layer k (all positions). Throws as stitchedInput;
/// polls cancellation between B's blocks.
Matrix stitchedLogits(const Model& a, const Model& b, const StitchBase& base, const StitchMap& map,
                      const StitchVariant& variant, int k, const Progress& progress = {});

/// The stitched model at one k against A and B.
struct StitchPoint {
    int k = 0;
    double loss = 0;       ///< stitched next-token cross-entropy on the text (nats, mean over positions 0 … S − 2)
    double lossA = 0;      ///< model A's own loss on the text
    double lossB = 0;      ///< model B's own loss
    double agreeA = 0;     ///< fraction of those positions where the stitched top-1 token is A's
    double agreeB = 0;     ///< … is B's
    double normRatio = 0;  ///< mean over positions of ‖x_p‖ / ‖input_p‖: the gain of M on this text's states
    NextTokenPredictions predictions; ///< the stitched model's, per position
};

/// stitchedLogits summarised (the logits are unembedded in chunks of rows, never all at once).
StitchPoint stitchAt(const Model& a, const Model& b, const StitchBase& base, const StitchMap& map,
                     const StitchVariant& variant, int k, const Progress& progress = {});

/// One variant over several stitch layers (the paper's figure: loss and agreement against k).
struct StitchSweep {
    StitchVariant variant;
    std::shared_ptr<const StitchMap> map;
    std::vector<StitchPoint> points; ///< in the order of `ks`
};

/// stitchAt for each k in ks. Progress units: ks done; throws Cancelled.
StitchSweep stitchSweep(const Model& a, const Model& b, const StitchBase& base, std::shared_ptr<const StitchMap> map,
                        const StitchVariant& variant, std::span<const int> ks, const Progress& progress = {});

/// Every stitch layer of A: 0 … n_layers_A.
std::vector<int> allStitchLayers(const Model& a);

} // namespace attnscope
