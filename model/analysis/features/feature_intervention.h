#pragma once
// Interventions on features during a forward pass, through ForwardHooks at the dictionary's output hook:
//  - steer: add α·W_dec[f] at the chosen positions (Turner et al. 2023 activation addition, with a feature's
//    decoder direction, as Neuronpedia's steering does);
//  - ablate / clamp: set the feature's activation to 0 / to a value and add the change it makes to the
//    reconstruction, decode(f') − decode(f), keeping the dictionary's error term — SAELens
//    HookedSAETransformer with use_error_term, so the pass without an edit is the clean pass exactly.
// f is encoded from the activation at the input hook during the hooked pass itself (a transcoder reading
// ln2.hook_normalized gets it as ln_2 of the edited resid_mid), so edits compose and last through generation.

#include "model/features/hook_point.h"
#include "model/features/sparse_coder.h"
#include "model/transformer/forward_hooks.h"
#include "model/transformer/model.h"

#include <QString>
#include <memory>
#include <vector>

namespace attnscope {

enum class FeatureEditKind { Steer, Ablate, Clamp };

struct FeatureEdit {
    int feature = 0;
    FeatureEditKind kind = FeatureEditKind::Steer;
    double value = 0;            ///< α for Steer, the clamped activation for Clamp
    std::vector<int> positions;  ///< empty = every position (also those generated later)
};

/// Parses "F=α[@p1,p2,…]" (steer), "F=ablate[@…]" or "F=clamp:V[@…]". Throws InputError with the syntax.
FeatureEdit parseFeatureEdit(const QString& text);

/// Hooks applying `edits` of one dictionary. Throws InputError for a feature out of range, an output hook
/// that cannot be edited, or an input hook that cannot be read during a pass (mlp.hook_post).
std::shared_ptr<ForwardHooks> featureEditHooks(const Model& model, const SparseCoder& sae, const std::vector<FeatureEdit>& edits);

} // namespace attnscope
