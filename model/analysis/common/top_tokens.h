#pragma once
// Top-k tokens of a logit vector, with softmax probabilities.

#include "model/core/tensor.h"

#include <vector>

namespace attnscope {

struct TokenScore {
    int id = 0;
    float logit = 0;   ///< raw logit (or score)
    float prob = 0;    ///< softmax over the whole vocabulary, in [0, 1]
};

/// The k highest entries of logits [d_vocab], highest first (ties: lower id first), with
/// probabilities from a numerically stable softmax over all entries: p = exp(x − logZ),
/// logZ = m + log Σ exp(x_j − m) with m the maximum, the sum in double. k is clamped to d_vocab.
/// Cost: two vectorised passes over the row and no allocation beyond the result for k ≤ 64 (a
/// threshold scan keeping the best k so far); a partial sort of all ids for larger k. Thread-safe.
std::vector<TokenScore> topTokens(const Eigen::Ref<const RowVector>& logits, int k);

} // namespace attnscope
