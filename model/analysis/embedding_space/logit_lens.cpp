#include "model/analysis/embedding_space/logit_lens.h"

#include "model/core/weight_gemm.h"

#include "model/analysis/common/index_checks.h"
#include "model/core/column_parallel_product.h"
#include "model/transformer/forward.h"

#include <QCoreApplication>
#include <QRegularExpression>
#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnscope {

namespace {

void checkBoundary(const ModelConfig& cfg, int boundary) {
    if (boundary < 0 || boundary >= lensBoundaryCount(cfg))
        throw InputError(QCoreApplication::translate("logit_lens", "Lens boundary %1 is outside [0, %2).")
                             .arg(boundary).arg(lensBoundaryCount(cfg)));
}

/// normed [n, d_model] -> logits [n, d_vocab]: the unembedding of runForward, final soft-cap included (Gemma 2).
Matrix unembed(const ModelConfig& cfg, const GlobalWeights& g, const Matrix& normed) {
    Matrix logits;
    weightGemmTransposed(normed, g.W_U_T, logits); // the function runForward unembeds with
    if (!g.b_U.empty()) logits.rowwise() += g.b_U.rowVector(0);
    applyFinalSoftcap(cfg, logits);
    return logits;
}

} // namespace

int lensBoundaryCount(const ModelConfig& cfg) { return 2 * cfg.n_layers + 1; }

QString lensBoundaryName(const ModelConfig& cfg, int boundary) {
    checkBoundary(cfg, boundary);
    if (boundary == 0) return QStringLiteral("embed");
    const int l = (boundary - 1) / 2;
    return QStringLiteral("L%1%2").arg(l).arg(boundary % 2 == 1 ? QStringLiteral("attn") : QStringLiteral("mlp"));
}

int lensBoundaryFromName(const ModelConfig& cfg, const QString& name) {
    if (name == QLatin1String("embed")) return 0;
    static const QRegularExpression re(QStringLiteral("^L(\\d+)(attn|mlp)$"));
    const auto m = re.match(name);
    if (m.hasMatch()) {
        const int l = m.captured(1).toInt();
        if (l < cfg.n_layers) return 2 * l + (m.captured(2) == QLatin1String("attn") ? 1 : 2);
    }
    throw InputError(QCoreApplication::translate("logit_lens",
                         "Unknown lens layer \"%1\": expected embed, L{l}attn or L{l}mlp with l in [0, %2).")
                         .arg(name).arg(cfg.n_layers));
}

const Matrix& lensResidual(const ModelConfig& cfg, const ActivationCache& cache, int boundary) {
    checkBoundary(cfg, boundary);
    if (cache.nLayers() != cfg.n_layers)
        throw InputError(QCoreApplication::translate("logit_lens", "The activation cache has %1 layers, the model %2.")
                             .arg(cache.nLayers()).arg(cfg.n_layers));
    if (boundary == 0) return cache.stored(0).resid_pre; // residual streams are kept in every cache layout
    const LayerCache& lc = cache.stored((boundary - 1) / 2);
    return boundary % 2 == 1 ? lc.resid_mid : lc.resid_post;
}

Matrix lensLogits(const Model& model, const ActivationCache& cache, int boundary) {
    const ModelConfig& cfg = model.config();
    const GlobalWeights& g = model.globals();
    return unembed(cfg, g, applyNorm(cfg, lensResidual(cfg, cache, boundary), g.ln_final_w, g.ln_final_b));
}

RowVector lensLogits(const Model& model, const ActivationCache& cache, int boundary, int position) {
    const ModelConfig& cfg = model.config();
    const Matrix& resid = lensResidual(cfg, cache, boundary);
    if (position < 0 || position >= resid.rows())
        throw InputError(QCoreApplication::translate("logit_lens", "Position %1 is outside the prompt [0, %2).")
                             .arg(position).arg(resid.rows()));
    const GlobalWeights& g = model.globals();
    const Matrix row = resid.row(position);
    return unembed(cfg, g, applyNorm(cfg, row, g.ln_final_w, g.ln_final_b));
}

std::vector<LensCell> logitLensAt(const Model& model, const ActivationCache& cache, const std::vector<int>& boundaries,
                                  int k, const Progress& progress) {
    const ModelConfig& cfg = model.config();
    const GlobalWeights& g = model.globals();
    for (int b : boundaries) lensResidual(cfg, cache, b); // range and cache checks before any work
    const qint64 nb = qint64(boundaries.size());
    const Eigen::Index S = nb > 0 ? lensResidual(cfg, cache, boundaries.front()).rows() : 0;
    const Eigen::Index total = nb * S;
    std::vector<LensCell> out(static_cast<size_t>(total));
    // Chunks of equal size c (the last one padded with zero rows, so the buffers never reallocate): at most
    // the GEMM kernel's row block (each Wᵀ micro-panel gathered once per GEMM; 67 MiB of GPT-2 logits at
    // 336 rows, 3–4 % faster than 256 at S = 128, 512), or, below the kernel's row count, as many whole
    // boundaries as stay under it (dot products, which stream Wᵀ once per chunk; see the header)
    Eigen::Index c = S;
    const Eigen::Index minRows = transposedKernelMinRows(g.W_U_T);
    if (S >= minRows) {
        const Eigen::Index rowBlock = weightGemmRowBlock();
        const Eigen::Index nChunks = (total + rowBlock - 1) / rowBlock;
        c = (total + nChunks - 1) / nChunks;
    } else if (S > 0) {
        c = std::min(total, (minRows - 1) / S * S);
    }
    Matrix normed, x(c, cfg.d_model), logits;
    qint64 normedIndex = -1; // which entry of `boundaries` `normed` holds
    for (Eigen::Index r0 = 0; r0 < total; r0 += c) {
        const Eigen::Index n = std::min(c, total - r0);
        progress.step(r0 / S, nb, QStringLiteral("logit lens %1").arg(lensBoundaryName(cfg, boundaries[size_t(r0 / S)])));
        // x = ln_final of the chunk's rows, boundary by boundary (each normed whole, as lensLogits does)
        for (Eigen::Index r = r0; r < r0 + n;) {
            const qint64 i = r / S;
            const Eigen::Index p = r % S, len = std::min(S - p, r0 + n - r);
            if (i != normedIndex) {
                applyNorm(cfg, lensResidual(cfg, cache, boundaries[size_t(i)]), g.ln_final_w, g.ln_final_b, normed);
                normedIndex = i;
            }
            x.middleRows(r - r0, len) = normed.middleRows(p, len);
            r += len;
        }
        if (n < c) x.bottomRows(c - n).setZero();
        weightGemmTransposed(x, g.W_U_T, logits); // the function runForward unembeds with
        if (!g.b_U.empty()) logits.topRows(n).rowwise() += g.b_U.rowVector(0);
        applyFinalSoftcap(cfg, logits); // Gemma 2: the model's own last step
#pragma omp parallel for schedule(dynamic, 4)
        for (Eigen::Index j = 0; j < n; ++j) {
            LensCell& cell = out[size_t(r0 + j)];
            cell.boundary = boundaries[size_t((r0 + j) / S)];
            cell.position = int((r0 + j) % S);
            cell.top = topTokens(logits.row(j), k);
        }
    }
    progress.step(nb, nb, QStringLiteral("done"));
    return out;
}

std::vector<LensCell> logitLens(const Model& model, const ActivationCache& cache, int k, const Progress& progress) {
    std::vector<int> all(static_cast<size_t>(lensBoundaryCount(model.config())));
    std::iota(all.begin(), all.end(), 0);
    return logitLensAt(model, cache, all, k, progress);
}

TokenRank rankOf(const Eigen::Ref<const RowVector>& logits, int tokenId) {
    const float x = logits(tokenId);
    int rank = 0;
    for (int j = 0; j < logits.size(); ++j)
        if (logits(j) > x || (logits(j) == x && j < tokenId)) ++rank;
    const float m = logits.maxCoeff();
    const double logZ = double(m) + std::log((logits.array() - m).exp().cast<double>().sum());
    return {rank, float(std::exp(double(x) - logZ)), x};
}

std::vector<std::vector<TokenRank>> tokenRankings(const Model& model, const ActivationCache& cache, int tokenId,
                                                  const Progress& progress) {
    const ModelConfig& cfg = model.config();
    checkToken(cfg, tokenId);
    const int nb = lensBoundaryCount(cfg);
    std::vector<std::vector<TokenRank>> out(static_cast<size_t>(nb));
    for (int b = 0; b < nb; ++b) {
        progress.step(b, nb, QStringLiteral("token rankings %1").arg(lensBoundaryName(cfg, b)));
        const Matrix logits = lensLogits(model, cache, b);
        for (int p = 0; p < logits.rows(); ++p) out[size_t(b)].push_back(rankOf(logits.row(p), tokenId));
    }
    progress.step(nb, nb, QStringLiteral("done"));
    return out;
}

} // namespace attnscope
