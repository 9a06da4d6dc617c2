#pragma once
// An independent float64 GPT-2 forward pass for the tests (LayerNorm with biased variance, learned
// positions, causal softmax attention scaled by 1/√d_head, gelu_new MLP; modeling_gpt2.py's conventions),
// written from the formulas with plain Eigen double matrices and loops, sharing nothing with
// model/transformer/forward.cpp but the weights (read through Weight::toMatrix). Slow; for small models.
// Also the stitching map from the SVD of the embedding (not the Gram matrix the library uses).

#include "model/transformer/model.h"

#include <Eigen/Core>
#include <vector>

namespace attnscope::test {

using Matrix64 = Eigen::MatrixXd;

/// embed + pos_embed [pos, d_model] of the tokens.
Matrix64 embeddings64(const Model& model, const std::vector<int>& tokens);
/// Blocks [first, last) applied to the residual x [pos, d_model].
Matrix64 blocks64(const Model& model, Matrix64 x, int first, int last);
/// ln_final then W_U (+ b_U): logits [pos, d_vocab].
Matrix64 logits64(const Model& model, const Matrix64& x);
/// ln_final alone.
Matrix64 finalNorm64(const Model& model, const Matrix64& x);

/// M = E_Aᵀ·(E_Bᵀ)⁺ with (E_Bᵀ)⁺ = U·Σ⁺·Vᵀ from the thin SVD E_B = U·Σ·Vᵀ in float64 (singular values at or
/// below rcond·σ_max dropped), or E_Aᵀ·E_B when `transpose`. E = W_E, or W_U_T when `unembedding`.
Matrix64 stitchMap64(const Model& a, const Model& b, bool transpose, double rcond, bool unembedding = false);

} // namespace attnscope::test
