#pragma once
// Hand-built GPT-2-style models held in memory, for tests that need weights chosen by hand (a head that
// attends exactly to the previous token, a head with a zero W_O slice, ...). The weights live in
// Eigen matrices owned by the model's WeightResolver; no file is written.

#include "model/transformer/model.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace attnscope::test {

/// One layer's weights in the canonical [in, out] layout (see model/transformer/weights.h).
/// A 0×0 bias means "absent".
struct HandmadeLayer {
    Matrix ln1_w, ln1_b;   ///< [1, d_model]
    Matrix W_Q, W_K, W_V;  ///< [d_model, n_heads*d_head]
    Matrix b_Q, b_K, b_V;  ///< [1, n_heads*d_head]
    Matrix W_O, b_O;       ///< [n_heads*d_head, d_model], [1, d_model]
    Matrix ln2_w, ln2_b;   ///< [1, d_model]
    Matrix W_in, b_in;     ///< [d_model, d_mlp], [1, d_mlp]
    Matrix W_out, b_out;   ///< [d_mlp, d_model], [1, d_model]
};

struct HandmadeWeights {
    ModelConfig cfg;
    Matrix W_E;                    ///< [d_vocab, d_model]
    Matrix W_pos;                  ///< [n_ctx, d_model]
    Matrix ln_final_w, ln_final_b; ///< [1, d_model]
    Matrix W_U_T;                  ///< [d_vocab, d_model]
    Matrix b_U;                    ///< [1, d_vocab] or 0×0
    std::vector<HandmadeLayer> layers;
};

/// A GPT-2 config (LayerNorm, learned positions, gelu_new, d_head = d_model / n_heads, d_mlp = 4·d_model).
ModelConfig gpt2Config(int n_layers, int n_heads, int d_model, int n_ctx, int d_vocab);

/// All weights zero except the LayerNorm gains (1). Every attention pattern is uniform.
HandmadeWeights zeroWeights(const ModelConfig& cfg);

/// Normal(0, stddev) weights (std::mt19937 seeded with `seed`), LayerNorm gains 1 + N(0, stddev), an
/// untied W_U_T and a b_U, so every term of the forward pass and of DLA is exercised.
HandmadeWeights randomWeights(const ModelConfig& cfg, std::uint32_t seed, float stddev = 0.5f);

/// A two-layer, two-head model with a planted induction circuit (Olsson et al. 2022), every block of the
/// residual stream an orthogonal subspace of signed pairs (+a, −a: every embedding has mean 0, so LayerNorm
/// only rescales): tokens (8), positions (16), "previous token" and "output" (8 each), d_model 80, d_head 40.
///   L0H0  previous-token head: queries read the position, keys the position + 1; its OV writes the attended
///         token into the previous-token subspace;
///   L1H0  induction head: queries read the current token, keys the previous-token subspace (K-composition
///         with L0H0); its OV writes the attended token into the output subspace, which W_U reads;
///   L0H1, L1H1 distractors with small random weights; MLPs zero. No BOS; vocabulary 8, n_ctx 16.
/// On R + R (R distinct tokens) the second copy is predicted token by token.
HandmadeWeights plantedInductionWeights();

/// A Model over `weights` (moved into it). Its tokenizer only names ids ("t12") and has bosId() =
/// cfg.bos_token_id when that is >= 0.
std::shared_ptr<const Model> makeModel(HandmadeWeights weights);

} // namespace attnscope::test
