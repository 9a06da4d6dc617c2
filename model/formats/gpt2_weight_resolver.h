#pragma once
// GPT-2 checkpoint tensor names (transformers GPT2LMHeadModel) -> canonical role-named weights.

#include "model/core/progress.h"
#include "model/formats/tensor_set.h"
#include "model/transformer/model_config.h"
#include "model/transformer/weights.h"

#include <QString>
#include <vector>

namespace attnscope {

/// Maps GPT-2 names (with or without the "transformer." prefix) to LayerWeights/GlobalWeights:
///   wte.weight [d_vocab, d_model] -> W_E (and W_U_T unless lm_head.weight [d_vocab, d_model] exists)
///   wpe.weight [n_ctx, d_model] -> W_pos;  ln_f.{weight,bias} [d_model] -> ln_final_w/b
///   h.{l}.ln_1 / ln_2 .{weight,bias} [d_model] -> ln1_w/b, ln2_w/b
///   h.{l}.attn.c_attn.weight [d_model, 3*d_model] -> W_Q | W_K | W_V (column blocks, Conv1D [in, out])
///   h.{l}.attn.c_attn.bias [3*d_model] -> b_Q | b_K | b_V
///   h.{l}.attn.c_proj.{weight [d_model, d_model], bias} -> W_O, b_O
///   h.{l}.mlp.c_fc.{weight [d_model, d_mlp], bias [d_mlp]} -> W_in, b_in
///   h.{l}.mlp.c_proj.{weight [d_mlp, d_model], bias} -> W_out, b_out
/// The buffers h.{l}.attn.bias / attn.masked_bias and any other tensor are ignored.
/// Tensors are viewed in place in the mapped file in their own element type (F32, F16, BF16: the
/// kernels widen 16-bit weights as they read them; safetensors_weights.h). Different layers may be
/// resolved concurrently.
class Gpt2WeightResolver : public WeightResolver {
public:
    /// Checks every tensor the model needs: present, dtype F32/F16/BF16, shape implied by `config`.
    /// `sourceLabel` names the checkpoint in "missing tensor" errors; `configLabel` names the config in
    /// shape errors ("model.safetensors: tensor h.0.attn.c_attn.weight has shape [64, 190] but
    /// config.json implies [64, 192]"). Progress: one step per tensor, out of tensorCount.
    /// Throws ModelError or Cancelled.
    Gpt2WeightResolver(const ModelConfig& config, TensorSet tensors, const QString& sourceLabel,
                       const QString& configLabel = QStringLiteral("config.json"), const Progress& progress = {},
                       qint64 progressDone = 0, qint64 progressTotal = 0);

    /// Progress units the constructor reports for `config`: one per tensor, plus one for lm_head
    /// (checked, or found absent and tied to wte).
    static int tensorCount(const ModelConfig& config);

    GlobalWeights globals() override;
    LayerWeights layer(int l) override;

    /// "F32", "F16", "BF16" or "mixed", over the tensors used.
    QString storageDtype() const;
    const TensorSet& tensors() const { return tensors_; }

private:
    struct LayerRefs {
        TensorRef ln1_w, ln1_b, c_attn_w, c_attn_b, c_proj_w, c_proj_b, ln2_w, ln2_b, fc_w, fc_b, mlp_proj_w, mlp_proj_b;
    };
    /// A view of `ref` as [rows, cols] (tensorWeight; a misaligned tensor copied into `buffers`).
    static Weight view(const TensorRef& ref, Eigen::Index rows, Eigen::Index cols,
                       std::vector<std::vector<unsigned char>>& buffers);

    ModelConfig config_;
    TensorSet tensors_;
    QString storageDtype_;

    TensorRef wte_, wpe_, lnf_w_, lnf_b_, lm_head_;
    std::vector<LayerRefs> layers_;
    std::vector<std::vector<unsigned char>> globalBuffers_;
    std::vector<std::vector<std::vector<unsigned char>>> layerBuffers_; ///< one slot per layer, so layers resolve independently
};

} // namespace attnscope
