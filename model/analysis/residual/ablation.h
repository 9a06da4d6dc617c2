#pragma once
// Ablation preview: rerun the forward pass with some heads knocked out (zero- or mean-ablated z,
// ForwardOptions::ablations) and compare the target logit (difference) and the top next tokens with the
// clean run. Zero ablation: z_h := 0; mean ablation: z_h := its mean over the prompt's positions
// (TransformerLens-style hook on hook_z; Wang et al. 2022, IOI, use mean ablation over a reference set).

#include "model/analysis/common/top_tokens.h"
#include "model/core/progress.h"
#include "model/transformer/forward.h"

#include <span>
#include <vector>

namespace attnscope {

struct AblationOptions {
    std::vector<HeadAblation> ablations; ///< heads to ablate (layer, head, Zero/Mean)
    int position = -1;                   ///< where logits are read; -1 = the last position
    int token = 0;                       ///< target token t
    int counterToken = -1;               ///< when >= 0: the logit difference logit[t] - logit[t']
    int topK = 10;                       ///< how many next tokens to list before and after
};

struct AblationPreview {
    int position = 0;
    double before = 0;                 ///< logit (difference) of the clean run at position
    double after = 0;                  ///< the same with the heads ablated
    double delta = 0;                  ///< after - before
    std::vector<TokenScore> topBefore; ///< top-k next tokens at position, clean
    std::vector<TokenScore> topAfter;  ///< top-k next tokens at position, ablated
    RowVector logitsBefore;            ///< [d_vocab] clean logits at position
    RowVector logitsAfter;             ///< [d_vocab] ablated logits at position
};

/// Runs `tokens` twice (clean and ablated) and compares the logits at options.position.
/// Throws InputError for a bad prompt (as runForward), a position outside the prompt, a token outside
/// [0, d_vocab) or an ablation naming a layer/head the model does not have; Cancelled via progress.
/// Progress: each forward pass reports its own layers (as runForward).
AblationPreview previewAblation(const Model& model, std::span<const int> tokens, const AblationOptions& options,
                                const Progress& progress = {});

/// As above but reuses an already computed clean cache of the same tokens (only the ablated run is done).
AblationPreview previewAblation(const Model& model, const ActivationCache& clean, const AblationOptions& options,
                                const Progress& progress = {});

} // namespace attnscope
