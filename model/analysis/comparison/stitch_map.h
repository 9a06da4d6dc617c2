#pragma once
// The linear map of zero-shot stitching (Dar et al. 2022, "Analyzing Transformers in Embedding Space",
// arXiv:2209.02535, section "Zero-shot stitching"): a hidden state h of model A [pos, d_model_A] is read
// in embedding space as h·E_Aᵀ [pos, d_vocab] and brought into model B's feature space with the right
// inverse of E_Bᵀ, so model B's remaining layers can run on it:
//     h_B = h·M,   M = E_Aᵀ·(E_Bᵀ)⁺   [d_model_A, d_model_B]
// with E = W_E [d_vocab, d_model] of each model (the paper's E; or each model's unembedding W_U when the
// reading of the output side is wanted and the models are untied). The variant the paper also discusses
// replaces the pseudo-inverse by the transpose: M = E_Aᵀ·E_B (no inverse; it also rescales h by about
// E_Bᵀ·E_B's eigenvalues).
//
// How (E_Bᵀ)⁺ is computed: (Xᵀ)⁺ = X·(XᵀX)⁺ for any X, so M = (E_Aᵀ·E_B)·(E_Bᵀ·E_B)⁺, from the
// [d_model, d_model] Gram matrices accumulated in float64 over row chunks of the embeddings (the SVD of
// E_B itself would need the whole [d_vocab, d_model] matrix in float64 — 0.3 GB for GPT-2, 4 GB for a
// 128k × 4096 vocabulary — and far more work), and the eigendecomposition of E_Bᵀ·E_B = V·Σ²·Vᵀ. Singular
// values σ_i = √λ_i with σ_i ≤ rcond·σ_max count as zero (rcond 1e-5 by default): forming the Gram squares
// the condition number, and its float64 rounding (about d_vocab·2⁻⁵³·σ_max², so √ of it ≈ 2–4·10⁻⁶·σ_max
// for 50k–128k tokens at worst) sets the smallest singular value that can be told from zero; 1e-5 is
// above that floor. The number of σ_i above the cut is the numerical rank, reported for both models.

#include "model/core/progress.h"
#include "model/transformer/model.h"

#include <Eigen/Core>
#include <limits>

namespace attnscope {

/// What stands in for the inverse of E_Bᵀ.
enum class StitchInverse {
    PseudoInverse, ///< (E_Bᵀ)⁺ (exact right inverse when E_B has full column rank)
    Transpose      ///< E_B, the paper's cheap approximation of the inverse
};

/// Which matrix defines a model's embedding space.
enum class EmbeddingSide {
    Input, ///< W_E, the token embedding (the paper's E)
    Output ///< W_U (stored as W_U_T [d_vocab, d_model]), the unembedding; the same as W_E for tied models
};

/// Default cut of the pseudo-inverse (see the file comment): σ_i ≤ rcond·σ_max counts as zero.
inline constexpr double kDefaultStitchRcond = 1e-5;

struct StitchMapOptions {
    StitchInverse inverse = StitchInverse::PseudoInverse;
    EmbeddingSide side = EmbeddingSide::Input;
    double rcond = kDefaultStitchRcond;
    bool operator==(const StitchMapOptions&) const = default;
};

/// Singular values of an embedding matrix E [d_vocab, d_model] and its numerical rank.
struct EmbeddingSpectrum {
    Eigen::VectorXd singularValues; ///< [d_model] descending, √ of E_ᵀE's eigenvalues (negative rounding → 0)
    int rank = 0;                   ///< number of σ_i > rcond·σ_max
    double rcond = kDefaultStitchRcond;
    int dModel() const { return int(singularValues.size()); }
    bool fullRank() const { return rank == dModel(); }
    double sigmaMax() const { return singularValues.size() ? singularValues(0) : 0.0; }
    double sigmaMin() const { return singularValues.size() ? singularValues(singularValues.size() - 1) : 0.0; }
};

/// The float64 products of two embeddings that every stitching map of the pair is made of.
struct EmbeddingGrams {
    EmbeddingSide side = EmbeddingSide::Input;
    bool sameModel = false;          ///< A and B are one Model object (then ab = E_Aᵀ·E_A and A's spectrum is B's)
    Eigen::MatrixXd ab;              ///< [d_model_A, d_model_B] E_Aᵀ·E_B
    Eigen::VectorXd eigenvaluesA;    ///< [d_model_A] of E_Aᵀ·E_A, ascending (for A's rank)
    Eigen::VectorXd eigenvaluesB;    ///< [d_model_B] of E_Bᵀ·E_B, ascending
    Eigen::MatrixXd eigenvectorsB;   ///< [d_model_B, d_model_B] their eigenvectors, as columns
};

/// Accumulates the Gram matrices of A's and B's embedding (side) in float64 over chunks of rows (any stored
/// type: F32, F16, BF16, block-quantized rows are converted chunk by chunk) and decomposes E_Bᵀ·E_B.
/// Cost ≈ d_vocab·(d_A² + d_A·d_B + d_B²)/2 multiply-adds in float64 (once for a model against itself).
/// Throws InputError when the vocabularies differ (requireSharedVocabulary); progress units are chunks of
/// rows; throws Cancelled.
EmbeddingGrams embeddingGrams(const Model& a, const Model& b, EmbeddingSide side, const Progress& progress = {});

/// A stitching map and what it is made of.
struct StitchMap {
    StitchMapOptions options;
    Eigen::MatrixXd M64;          ///< [d_model_A, d_model_B] in float64, as computed
    Matrix M;                     ///< the same rounded to float32
    EmbeddingSpectrum spectrumA;  ///< of E_A (its rank bounds what h·E_Aᵀ keeps of h)
    EmbeddingSpectrum spectrumB;  ///< of E_B (rank-deficient: the pseudo-inverse drops d_model_B − rank directions)
    bool sameModel = false;
    /// max |M − I| when A and B are the same model (0 would be exact; float rounding otherwise); NaN otherwise.
    double identityError = std::numeric_limits<double>::quiet_NaN();
};

/// M for the options from the pair's Gram matrices (cheap: O(d_B³ + d_A·d_B²)). Throws InputError for an
/// rcond outside (0, 1) or an E_B with no singular value above the cut (all zero).
StitchMap stitchMapFromGrams(const EmbeddingGrams& grams, const StitchMapOptions& options);

/// embeddingGrams then stitchMapFromGrams (uncached; StitchMapCache keeps both).
StitchMap computeStitchMap(const Model& a, const Model& b, const StitchMapOptions& options = {},
                           const Progress& progress = {});

/// "(E_Bᵀ)⁺, rcond 1e-05" / "E_B (transpose)", with "W_U" for the output side: how a map was made, for
/// labels and JSON.
QString stitchMapLabel(const StitchMapOptions& options);

} // namespace attnscope
