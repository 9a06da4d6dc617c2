#pragma once
// What a model predicts at each position of a text and how well it predicts the text: per position the
// top-k next tokens with probabilities, the top-1 token and log p(actual next token); the mean next-token
// cross-entropy (nats) over the positions that have a next token; top-1 agreement between two models.
// Shared by the stitching analysis (model/analysis/comparison/stitching.h) for model A, model B and the stitched model.

#include "model/analysis/common/top_tokens.h"

#include <span>
#include <vector>

namespace attnscope {

struct NextTokenPredictions {
    std::vector<std::vector<TokenScore>> top; ///< [pos][top-k] highest logit first, softmax probabilities
    std::vector<int> argmax;                  ///< [pos] the top-1 token (ties: lower id)
    std::vector<double> targetLogProb;        ///< [pos] ln p(tokens[pos + 1]); NaN at the last position
    RowVector lastLogits;                     ///< [d_vocab] the logits of the last position

    int nPositions() const { return int(argmax.size()); }
    /// Mean next-token cross-entropy −ln p(tokens[p + 1]) over positions p = 0 … S − 2, in nats (NaN for S < 2).
    double loss() const;
};

/// Appends the predictions of logit rows [n, d_vocab] for positions firstPosition … firstPosition + n − 1 of
/// `tokens` (a caller unembedding in chunks calls it once per chunk, in order). ln p uses a stable
/// log-sum-exp (exps in float32 by the compute kernel, summed in double). The last row of the text also
/// sets lastLogits.
void appendPredictions(const Matrix& logitRows, int firstPosition, std::span<const int> tokens, int topK,
                       NextTokenPredictions& out);

/// The predictions of logits [pos, d_vocab] for the whole text (rows = positions of `tokens`).
NextTokenPredictions nextTokenPredictions(const Matrix& logits, std::span<const int> tokens, int topK);

/// Fraction of the positions p = 0 … S − 2 (those the loss is taken over) where x and y have the same top-1
/// token. NaN for fewer than two positions; the two must cover the same text.
double topOneAgreement(const NextTokenPredictions& x, const NextTokenPredictions& y);

} // namespace attnscope
