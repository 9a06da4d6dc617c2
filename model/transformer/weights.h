#pragma once
// Canonical, role-named weights (TransformerLens names), independent of the file layout.
// All matrices are [in, out] so a block computes y = x·W + b (GPT-2 Conv1D layout).
// Views point into the memory-mapped file (F32) or into per-layer buffers converted lazily
// from F16/BF16; nothing here owns memory.

#include "model/core/tensor.h"

#include <vector>

namespace attnscope {

struct LayerWeights {
    Weight ln1_w, ln1_b;   ///< [1, d_model]; ln1_b empty for RMSNorm
    Weight W_Q, W_K, W_V;  ///< [d_model, n_heads*d_head] (W_K/W_V: n_kv_heads*d_head); head h = columns h*d_head..
    Weight b_Q, b_K, b_V;  ///< [1, n_heads*d_head] or empty
    Weight q_norm_w, k_norm_w; ///< [1, d_head]: the per-head RMSNorm of q and k (ModelConfig::qkNorm), else empty
    Weight W_O;            ///< [n_heads*d_head, d_model]; W_O^h = rows h*d_head .. (h+1)*d_head-1
    Weight b_O;            ///< [1, d_model] or empty
    Weight ln1_post_w;     ///< [1, d_model] the post-attention norm's (1 + w) (ModelConfig::postNorms), else empty
    Weight ln2_w, ln2_b;   ///< [1, d_model]
    Weight W_in, b_in;     ///< [d_model, d_mlp], [1, d_mlp]
    Weight W_gate;         ///< [d_model, d_mlp], gated MLPs only
    Weight W_out, b_out;   ///< [d_mlp, d_model], [1, d_model]
    Weight ln2_post_w;     ///< [1, d_model] the post-MLP norm's (1 + w) (ModelConfig::postNorms), else empty

    Weight W_Q_head(int h, int d_head) const { return W_Q.colBlock(Eigen::Index(h) * d_head, d_head); }
    Weight W_K_head(int h, int d_head) const { return W_K.colBlock(Eigen::Index(h) * d_head, d_head); }
    Weight W_V_head(int h, int d_head) const { return W_V.colBlock(Eigen::Index(h) * d_head, d_head); }
    Weight W_O_head(int h, int d_head) const { return W_O.rowBlock(Eigen::Index(h) * d_head, d_head); }
};

/// Weights outside the layers.
struct GlobalWeights {
    Weight W_E;              ///< [d_vocab, d_model] token embedding (wte)
    Weight W_pos;            ///< [n_ctx, d_model] learned positions (wpe); empty for rotary
    Weight ln_final_w, ln_final_b; ///< [1, d_model]; ln_final_b empty for RMSNorm
    Weight W_U_T;            ///< [d_vocab, d_model]: the unembedding transposed (wte when tied, else lm_head.weight)
    Weight b_U;              ///< [1, d_vocab] or empty
};

/// Produces canonical weight views from a file format. Implemented per format/family by the
/// loader; called at most once per layer (F16/BF16 are converted to F32 there, lazily).
class WeightResolver {
public:
    virtual ~WeightResolver() = default;
    virtual GlobalWeights globals() = 0;
    virtual LayerWeights layer(int l) = 0;
};

} // namespace attnscope
