#pragma once
// Fitting a too-long prompt into the model's context window, when the user chooses to.

#include <vector>

namespace attnscope {

/// The last `nCtx` ids of `ids` (all of them if they fit). With keepFirst (a prepended BOS) and a
/// prompt longer than nCtx, ids[0] stays at position 0 followed by the last nCtx − 1 ids, so the
/// model still sees its BOS. nCtx ≤ 0 gives an empty vector.
std::vector<int> keepLastTokens(const std::vector<int>& ids, int nCtx, bool keepFirst);

} // namespace attnscope
