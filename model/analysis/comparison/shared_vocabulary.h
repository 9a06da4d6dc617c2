#pragma once
// Whether two models share a vocabulary, the premise of every embedding-space comparison between
// models (Dar et al. 2022, "Analyzing Transformers in Embedding Space", sections "Aligning models in
// embedding space" and "Zero-shot stitching"): row t of E_A and row t of E_B must stand for the same token.

#include "model/transformer/model.h"

namespace attnscope {

/// Throws InputError unless A and B have the same d_vocab (rows of W_E and W_U), tokenizers of the same
/// size, and the same bytes for every token id (Tokenizer::tokenBytes). The message names both models and
/// sizes ("The models do not share a tokenizer: d_vocab is 4096 in model A (demo) vs 512 in model B
/// (tiny-gpt2).") or, when the sizes agree, the first id whose token differs and both tokens as displayed.
/// Cost: one pass over the vocabulary (waits for a tokenizer still loading in the background).
void requireSharedVocabulary(const Model& a, const Model& b);

} // namespace attnscope
