#pragma once
// Logit lens (nostalgebraist 2020, "interpreting GPT: the logit lens"; framed as reading the residual
// stream in embedding space by Dar et al. 2022, arXiv:2209.02535, section "Background" / residual
// stream): decode every intermediate residual stream as if it were the last one — apply ln_final
// with that residual's own mean and variance, then W_U (+ b_U).
//
// Boundaries are numbered 0 .. 2·n_layers: 0 = "embed" (resid_pre[0]), 2l+1 = "L{l}attn"
// (resid_mid[l], after layer l's attention block), 2l+2 = "L{l}mlp" (resid_post[l], after its MLP).
// The last boundary decodes exactly as the model does, so its logits are the model's logits.
// Rows are computed lazily; a whole table costs (2·n_layers+1)·S·2·d_model·d_vocab flops.

#include "model/analysis/common/top_tokens.h"
#include "model/core/progress.h"
#include "model/transformer/activation_cache.h"
#include "model/transformer/model.h"

#include <QString>
#include <vector>

namespace attnscope {

/// 2·n_layers + 1.
int lensBoundaryCount(const ModelConfig& cfg);
/// "embed", "L{l}attn" or "L{l}mlp". Throws InputError if boundary is out of range.
QString lensBoundaryName(const ModelConfig& cfg, int boundary);
/// Inverse of lensBoundaryName; throws InputError for an unknown name.
int lensBoundaryFromName(const ModelConfig& cfg, const QString& name);

/// The residual stream at a boundary: [pos, d_model], a reference into the cache.
/// Throws InputError if the boundary is out of range or the cache has fewer layers than the model.
const Matrix& lensResidual(const ModelConfig& cfg, const ActivationCache& cache, int boundary);

/// Lens logits of every position at one boundary: [pos, d_vocab] =
/// LN_final(resid) · W_U + b_U (W_U = W_U_Tᵀ), with the same expressions as runForward's unembedding
/// (so the last boundary reproduces cache.logits bit for bit when all positions were computed).
Matrix lensLogits(const Model& model, const ActivationCache& cache, int boundary);
/// Lens logits of one (boundary, position): [d_vocab]. Equal to the row of lensLogits up to GEMV vs
/// GEMM rounding (≤ 1e-5). Throws InputError for a position outside [0, S).
RowVector lensLogits(const Model& model, const ActivationCache& cache, int boundary, int position);

/// One cell of the lens table: the top-k tokens (softmax probabilities over d_vocab) of a boundary
/// at a position.
struct LensCell {
    int boundary = 0;
    int position = 0;
    std::vector<TokenScore> top;
};

/// The whole table, boundary-major ([boundary][position] flattened), k tokens per cell: logitLensAt of
/// every boundary. Progress units: boundaries done out of lensBoundaryCount; throws Cancelled.
std::vector<LensCell> logitLens(const Model& model, const ActivationCache& cache, int k,
                                const Progress& progress = {});

/// The lens table for a list of boundaries (any order; repeats allowed), all positions, k tokens per cell,
/// boundary-major in the order given: cell [i·S + p] is (boundaries[i], p). Each cell equals topTokens of
/// the row of lensLogits(model, cache, boundaries[i]) bit for bit. Method: the rows' ln_final outputs are
/// unembedded in chunks of at most weightGemmRowBlock() rows into one reused logits buffer, rows of several
/// boundaries per product (weightGemmTransposed computes each row the same whatever rows share the
/// product): when S ≥ transposedKernelMinRows(W_U) by its GEMM kernel, below by its dot products in chunks
/// of whole boundaries that stay below that many rows, as lensLogits's S rows do. The
/// top-k of a chunk's rows are computed on the OpenMP threads.
/// Progress units: boundaries done out of boundaries.size(), reported before each chunk on the calling
/// thread; throws Cancelled. Throws InputError for a boundary out of range or a cache with fewer
/// layers than the model.
std::vector<LensCell> logitLensAt(const Model& model, const ActivationCache& cache, const std::vector<int>& boundaries,
                                  int k, const Progress& progress = {});

/// Where one token stands at a (boundary, position): rank 0 = top (ties broken by lower id, as
/// topTokens), its softmax probability and its logit.
struct TokenRank {
    int rank = 0;
    float prob = 0;
    float logit = 0;
};

/// Rank of `tokenId` among lens logits: [boundary][position]. Throws InputError for an id outside
/// [0, d_vocab); Progress units: boundaries; throws Cancelled.
std::vector<std::vector<TokenRank>> tokenRankings(const Model& model, const ActivationCache& cache, int tokenId,
                                                  const Progress& progress = {});

/// Rank/prob/logit of `tokenId` in one logit vector [d_vocab] (helper of tokenRankings).
TokenRank rankOf(const Eigen::Ref<const RowVector>& logits, int tokenId);

} // namespace attnscope
