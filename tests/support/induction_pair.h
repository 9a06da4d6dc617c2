#pragma once
// The demo model's induction experiment (tst_activation_patching, tst_gui_circuits): [BOS] + R + R[0..T−2] as
// the clean prompt and the same with R replaced in its first copy as the corrupted one, R a repeated random
// token sequence (repeatedRandomSequence, seeds 11 and 12). The clean run's induction heads predict R[T−1] at
// the last position; the corrupted run has nothing to copy.

#include "model/transformer/model_config.h"

#include <vector>

namespace attnscope::test {

struct InductionPair {
    std::vector<int> clean, corrupt;
    int answer = 0;        ///< R[T−1]
    int corruptAnswer = 0; ///< R'[T−1], what the corrupted run's copy would predict
};

/// The pair for repeat length T. Throws as repeatedRandomSequence.
InductionPair inductionPair(const ModelConfig& cfg, int T);

} // namespace attnscope::test
