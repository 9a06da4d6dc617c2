#pragma once
// A sparse dictionary over one hook point of a model: a sparse autoencoder (SAE) or a transcoder, as the
// files users download define it (SAELens, Gemma Scope, circuit-tracer, Llama Scope; model/features/*_file.h
// read them). One description covers every architecture (SAELens keeps one class per architecture,
// sae_lens/saes/*.py; here they differ only in `activation` and the optional tensors):
//   x_in  = normalise(x)                                        (normalize_activations, SAELens sae.py)
//   pre   = (x_in − b_dec·apply_b_dec_to_input)·W_enc + b_enc   [pos, d_sae]
//   f     = ReLU(pre)                         standard, transcoder, skip_transcoder
//         = ReLU(pre)·(pre > θ)               jumprelu (strict >; BatchTopK SAEs are saved as jumprelu;
//                                             circuit-tracer's JumpReLU is pre·(pre > θ), no ReLU)
//         = top k of pre, ReLU'd; rest 0      topk (× ‖W_dec[f]‖ first with rescale_acts_by_decoder_norm,
//                                             ÷ it again before decoding; circuit-tracer's TopK has no ReLU)
//         = 1[x_in·W_enc + b_gate > 0] · ReLU((x_in·W_enc)⊙exp(r_mag) + b_mag)      gated (gated_sae.py)
//         = greedy pursuit of x_in − b_dec over the rows of W_dec                  matching_pursuit (no W_enc, b_enc;
//                                             x̂ = f·W_dec + b_dec·apply_b_dec_to_input; matching_pursuit_sae.py)
//   x̂     = denormalise(f·W_dec + b_dec) + x·W_skip             [pos, d_out]
// Shapes use axis names: pos (S), d_in, d_sae (features), d_out (= d_in for an SAE).
// Weights are views of the mapped files in their own element type (F32, F16, BF16); nothing is written.

#include "model/core/tensor.h"

#include <QString>
#include <memory>
#include <vector>

namespace attnscope {

enum class FeatureActivation {
    ReLU,      ///< f = max(pre, 0)
    JumpReLU,  ///< f = ReLU(pre)·(pre > θ) (without the ReLU when relu is false)
    TopK,      ///< the k largest pre kept (ReLU'd unless relu is false), the rest 0
    Gated,     ///< gate·magnitude, SAELens GatedSAE
    MatchingPursuit, ///< greedy pursuit over the rows of W_dec (tied: W_enc = W_decᵀ), SAELens matching_pursuit_sae.py
};

enum class InputNormalization {
    None,
    ConstantNormRescale, ///< x·(√d_in/‖x‖) in, ÷ that coefficient out (SAELens constant_norm_rescale)
    LayerNorm,           ///< (x − μ)/(σ + ε) with σ the unbiased std, ε = 1e-5; x̂·σ + μ out (SAELens layer_norm)
};

/// One sparse dictionary (see the file comment). `hookIn`/`hookOut` are TransformerLens hook names
/// ("blocks.3.hook_resid_post"); hookOut == hookIn for an SAE.
struct SparseCoder {
    QString path;          ///< the file or folder it was read from
    QString format;        ///< "SAELens", "Gemma Scope", "circuit-tracer", "Llama Scope"
    QString architecture;  ///< SAELens's name: standard, gated, topk, jumprelu, matching_pursuit, transcoder, skip_transcoder,
                           ///< jumprelu_transcoder, jumprelu_skip_transcoder
    QString hookIn, hookOut;
    int d_in = 0, d_sae = 0, d_out = 0;

    FeatureActivation activation = FeatureActivation::ReLU;
    int k = 0;                        ///< TopK
    bool relu = true;                 ///< TopK and JumpReLU take ReLU(pre); false for circuit-tracer's (x·(x > θ), raw top k)
    bool rescaleActsByDecoderNorm = false;
    /// MatchingPursuit's stopping rules (SAELens MatchingPursuitSAEConfig): a row stops when its residual's norm falls
    /// below residualThreshold (when > 0), when an iteration leaves its support unchanged (stopOnDuplicateSupport), or
    /// after maxIterations iterations (< 0: d_in, SAELens's default for max_iterations None).
    double residualThreshold = 1e-2;
    int maxIterations = -1;
    bool stopOnDuplicateSupport = true;
    bool applyBDecToInput = false;
    InputNormalization normalization = InputNormalization::None;
    /// A constant the input is multiplied by before encoding and the output divided by after decoding:
    /// SAELens's fold_activation_norm_scaling_factor (expected_average_only_in with a known factor; Llama
    /// Scope's √d_in / dataset_average_activation_norm.in), applied at run time instead of rewriting weights.
    double inputScale = 1.0;
    float thresholdScalar = 0;        ///< JumpReLU with one θ for every feature (Llama Scope) when threshold is empty

    Weight W_enc;      ///< [d_in, d_sae] (circuit-tracer and Llama Scope store it [d_sae, d_in]: transposed views)
    Weight b_enc;      ///< [d_sae] (1 × d_sae); absent for gated SAEs
    Weight W_dec;      ///< [d_sae, d_out]; may be a strided view (a cross-layer decoder's slice)
    Weight b_dec;      ///< [d_out]
    Weight threshold;  ///< [d_sae] JumpReLU
    Weight b_gate, b_mag, r_mag; ///< [d_sae] gated
    Weight W_skip;     ///< [d_in, d_out] skip transcoders (SAELens and circuit-tracer store [d_out, d_in]: transposed)

    /// Keeps the mapped files and any aligned copies alive as long as the coder.
    std::vector<std::shared_ptr<const void>> owners;

    bool isTranscoder() const { return hookOut != hookIn || d_out != d_in || !W_skip.empty(); }
};

/// Feature activations of x [pos, d_in] (the hook's activation): f [pos, d_sae]. Throws InputError when
/// x.cols() != d_in.
Matrix encodeFeatures(const SparseCoder& sae, const Matrix& x);
/// The reconstruction x̂ [pos, d_out] from f [pos, d_sae] and the input x [pos, d_in] it was encoded from
/// (needed by the input normalisations and W_skip; pass the same x given to encodeFeatures).
Matrix decodeFeatures(const SparseCoder& sae, const Matrix& f, const Matrix& x);

/// Throws InputError "feature F is out of range: the dictionary has N features (0..N−1)" unless 0 ≤ feature < d_sae.
void requireFeature(const SparseCoder& sae, int feature);
/// Row `feature` of W_dec as float32 [d_out] (the direction the feature writes, per unit activation).
RowVector decoderDirection(const SparseCoder& sae, int feature);
/// ∂x̂/∂f_feature [d_out] at one position whose input activation is `x` [d_in]: W_dec[feature] through what decoding
/// applies after the product (÷ ‖W_dec[f]‖ with rescale_acts_by_decoder_norm, ÷ the folded input scale, and the input
/// normalisation undone for that x). x̂ is affine in f at fixed x, so a change δ of the activation moves x̂ by δ times this.
RowVector decoderDirectionAt(const SparseCoder& sae, int feature, const Eigen::Ref<const RowVector>& x);
/// Column `feature` of W_enc as float32 [d_in] (the direction the feature reads).
RowVector encoderDirection(const SparseCoder& sae, int feature);

/// One firing feature.
struct FeatureValue {
    int feature = 0;
    float activation = 0;
};
/// The nonzero entries of one row of f, largest first (ties: lower id), at most `top` of them (≤ 0: all).
std::vector<FeatureValue> firingFeatures(const Eigen::Ref<const RowVector>& f, int top);

} // namespace attnscope
