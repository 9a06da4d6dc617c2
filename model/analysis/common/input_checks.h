#pragma once
// Argument checks shared by the analyses; each throws InputError with a message for the user.

#include "model/transformer/model_config.h"

namespace attnscope {

/// Throws InputError "Position p is outside the prompt's positions [0, n)." unless 0 <= p < nPositions.
void requirePosition(int position, int nPositions);
/// A metric's or an analysis's position: a negative one means the last (nPositions − 1); then as requirePosition.
int resolvePosition(int position, int nPositions);
/// Throws InputError "Token id t is outside the vocabulary [0, d_vocab)." unless 0 <= t < d_vocab.
void requireToken(const ModelConfig& cfg, int token);

} // namespace attnscope
