#include "model/analysis/comparison/stitch_map.h"

#include "model/analysis/comparison/shared_vocabulary.h"
#include "model/core/errors.h"

#include <Eigen/Eigenvalues>
#include <QCoreApplication>

namespace attnscope {

namespace {

const Weight& embeddingOf(const Model& m, EmbeddingSide side) {
    return side == EmbeddingSide::Input ? m.globals().W_E : m.globals().W_U_T;
}

/// Rows [r0, r0 + n) of E in float64.
Eigen::MatrixXd rowsAsDouble(const Weight& E, Eigen::Index r0, Eigen::Index n) {
    return E.rowBlock(r0, n).toMatrix().cast<double>();
}

/// The lower triangle of a symmetric matrix mirrored into the upper one (after rankUpdate).
void mirrorLower(Eigen::MatrixXd& g) { g.triangularView<Eigen::StrictlyUpper>() = g.transpose(); }

EmbeddingSpectrum spectrumOf(const Eigen::VectorXd& ascendingEigenvalues, double rcond) {
    EmbeddingSpectrum s;
    s.rcond = rcond;
    const Eigen::Index d = ascendingEigenvalues.size();
    s.singularValues.resize(d);
    for (Eigen::Index i = 0; i < d; ++i) s.singularValues(i) = std::sqrt(std::max(0.0, ascendingEigenvalues(d - 1 - i)));
    const double cut = rcond * s.sigmaMax();
    s.rank = int((s.singularValues.array() > cut).count());
    return s;
}

} // namespace

EmbeddingGrams embeddingGrams(const Model& a, const Model& b, EmbeddingSide side, const Progress& progress) {
    requireSharedVocabulary(a, b);
    const Weight &Ea = embeddingOf(a, side), &Eb = embeddingOf(b, side);
    EmbeddingGrams g;
    g.side = side;
    g.sameModel = &a == &b;
    const Eigen::Index V = Ea.rows, dA = Ea.cols, dB = Eb.cols;
    constexpr Eigen::Index kChunk = 2048;
    const qint64 chunks = (V + kChunk - 1) / kChunk;
    Eigen::MatrixXd gaa = Eigen::MatrixXd::Zero(dA, dA), gbb, gab;
    if (!g.sameModel) {
        gbb = Eigen::MatrixXd::Zero(dB, dB);
        gab = Eigen::MatrixXd::Zero(dA, dB);
    }
    const QString what = QCoreApplication::translate("analysis", "Gram matrices of the embeddings (float64)");
    for (Eigen::Index r0 = 0, c = 0; r0 < V; r0 += kChunk, ++c) {
        progress.step(c, chunks, what);
        const Eigen::Index n = std::min(kChunk, V - r0);
        const Eigen::MatrixXd x = rowsAsDouble(Ea, r0, n);           // [n, d_A]
        gaa.selfadjointView<Eigen::Lower>().rankUpdate(x.transpose()); // += xᵀ·x
        if (g.sameModel) continue;
        const Eigen::MatrixXd y = rowsAsDouble(Eb, r0, n);           // [n, d_B]
        gbb.selfadjointView<Eigen::Lower>().rankUpdate(y.transpose());
        gab.noalias() += x.transpose() * y;
    }
    mirrorLower(gaa);
    if (g.sameModel) {
        gbb = gaa;
        gab = gaa;
    } else {
        mirrorLower(gbb);
    }
    progress.step(chunks, chunks, QCoreApplication::translate("analysis", "eigendecomposition of E_Bᵀ·E_B"));
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigB(gbb);
    g.eigenvaluesB = eigB.eigenvalues();
    g.eigenvectorsB = eigB.eigenvectors();
    g.eigenvaluesA = g.sameModel ? g.eigenvaluesB
                                 : Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(gaa, Eigen::EigenvaluesOnly).eigenvalues();
    g.ab = std::move(gab);
    return g;
}

StitchMap stitchMapFromGrams(const EmbeddingGrams& g, const StitchMapOptions& options) {
    if (!(options.rcond > 0.0 && options.rcond < 1.0))
        throw InputError(QCoreApplication::translate("analysis", "rcond must lie in (0, 1), got %1.").arg(options.rcond));
    StitchMap m;
    m.options = options;
    m.options.side = g.side;
    m.sameModel = g.sameModel;
    m.spectrumA = spectrumOf(g.eigenvaluesA, options.rcond);
    m.spectrumB = spectrumOf(g.eigenvaluesB, options.rcond);
    if (m.spectrumB.rank == 0)
        throw InputError(QCoreApplication::translate("analysis",
                             "Model B's embedding matrix has no singular value above zero: nothing can be mapped into it."));
    Eigen::MatrixXd M;
    if (options.inverse == StitchInverse::Transpose) {
        M = g.ab; // E_Aᵀ·E_B
    } else {
        // (E_BᵀE_B)⁺ = Σ_{σ_i > cut} v_i·v_iᵀ / λ_i over the kept eigenpairs (the largest, at the end: ascending order)
        const Eigen::Index r = m.spectrumB.rank;
        const Eigen::MatrixXd Vr = g.eigenvectorsB.rightCols(r);
        const Eigen::VectorXd inv = g.eigenvaluesB.tail(r).cwiseInverse();
        M = (g.ab * Vr) * inv.asDiagonal() * Vr.transpose();
    }
    m.M = M.cast<float>();
    m.M64 = M;
    if (g.sameModel)
        m.identityError = (M - Eigen::MatrixXd::Identity(M.rows(), M.cols())).cwiseAbs().maxCoeff();
    return m;
}

StitchMap computeStitchMap(const Model& a, const Model& b, const StitchMapOptions& options, const Progress& progress) {
    return stitchMapFromGrams(embeddingGrams(a, b, options.side, progress), options);
}

QString stitchMapLabel(const StitchMapOptions& o) {
    const QString e = o.side == EmbeddingSide::Input ? QStringLiteral("W_E") : QStringLiteral("W_U");
    if (o.inverse == StitchInverse::Transpose) return QStringLiteral("E_Aᵀ·E_B (transpose for the inverse; E = %1)").arg(e);
    return QStringLiteral("E_Aᵀ·(E_Bᵀ)⁺ (pseudo-inverse, rcond %1; E = %2)").arg(o.rcond, 0, 'g', 3).arg(e);
}

} // namespace attnscope
