#include "model/analysis/comparison/stitching.h"

#include "model/analysis/comparison/shared_vocabulary.h"
#include "model/core/errors.h"
#include "model/core/weight_gemm.h"
#include "model/transformer/forward.h"

#include <QCoreApplication>

namespace attnscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("analysis", text); }

/// Rows of the unembedding per chunk: bounds the [rows, d_vocab] logits buffer (a multiple of
/// kTransposedKernelMinRows, so full chunks all go through the GEMM kernel).
constexpr Eigen::Index kUnembedRows = 256;

void checkStitchLayer(const Model& a, int k) {
    const int n = a.config().n_layers;
    if (k < 0 || k > n)
        throw InputError(tr("Stitch layer %1 is out of range: k counts model A's blocks that run, 0 … %2.").arg(k).arg(n));
}

void checkMapFits(const Model& a, const Model& b, const StitchMap& map, const StitchVariant& v) {
    if (map.M.rows() != a.config().d_model || map.M.cols() != b.config().d_model)
        throw InputError(tr("The stitching map is %1 × %2 but the models need %3 × %4 (d_model of A × d_model of B).")
                             .arg(map.M.rows()).arg(map.M.cols()).arg(a.config().d_model).arg(b.config().d_model));
    if (!(map.options == v.map)) throw InputError(tr("The stitching map was made for another variant (%1).").arg(stitchMapLabel(map.options)));
}

/// x after B's blocks k … n_layers_B − 1 and B's final norm [pos, d_model_B].
Matrix finalResidualOfB(const Model& b, Matrix x, int k, const Progress& progress) {
    ForwardOptions opt;
    opt.cacheHeadResults = false;
    LayerCache c; // one scratch layer reused block after block
    for (int l = k; l < b.config().n_layers; ++l) {
        progress.checkCancelled();
        c.resid_pre = std::move(x);
        runBlock(b, l, c, opt);
        x = std::move(c.resid_post);
    }
    const GlobalWeights& g = b.globals();
    return applyNorm(b.config(), x, g.ln_final_w, g.ln_final_b);
}

/// logits rows = normalised rows · W_Uᵀ + b_U.
void unembed(const Model& b, const Matrix& rows, Matrix& logits) {
    const GlobalWeights& g = b.globals();
    weightGemmTransposed(rows, g.W_U_T, logits);
    if (!g.b_U.empty()) logits.rowwise() += g.b_U.rowVector(0);
    applyFinalSoftcap(b.config(), logits);
}

} // namespace

QString StitchVariant::id() const {
    QString s = map.inverse == StitchInverse::PseudoInverse ? QStringLiteral("pinv") : QStringLiteral("transpose");
    if (finalNormA) s += QStringLiteral("+ln_final_A");
    if (map.side == EmbeddingSide::Output) s += QStringLiteral("@W_U");
    return s;
}

QString StitchVariant::label() const {
    const QString h = finalNormA ? QStringLiteral("ln_final_A(h)") : QStringLiteral("h");
    const QString u = map.side == EmbeddingSide::Output ? QStringLiteral(", E = W_U") : QString();
    if (map.inverse == StitchInverse::Transpose) return QStringLiteral("%1·E_Aᵀ·E_B (transpose%2)").arg(h, u);
    return QStringLiteral("%1·E_Aᵀ·(E_Bᵀ)⁺ (rcond %2%3)").arg(h).arg(map.rcond, 0, 'g', 3).arg(u);
}

std::vector<StitchVariant> paperStitchVariants(EmbeddingSide side, double rcond) {
    std::vector<StitchVariant> v;
    for (StitchInverse inv : {StitchInverse::PseudoInverse, StitchInverse::Transpose})
        for (bool norm : {false, true}) v.push_back(StitchVariant{StitchMapOptions{inv, side, rcond}, norm});
    return v;
}

std::vector<int> allStitchLayers(const Model& a) {
    std::vector<int> ks(size_t(a.config().n_layers + 1));
    for (size_t k = 0; k < ks.size(); ++k) ks[k] = int(k);
    return ks;
}

StitchBase stitchBase(const Model& a, const Model& b, std::span<const int> tokens, int topK, const Progress& progress) {
    requireSharedVocabulary(a, b);
    const int S = int(tokens.size());
    if (S < 2)
        throw InputError(tr("The text has %1 token(s): the next-token loss needs at least 2.").arg(S));
    const int nCtx = std::min(a.config().n_ctx, b.config().n_ctx);
    if (S > nCtx)
        throw InputError(tr("The text has %1 tokens but the contexts (n_ctx) are %2 (model A) and %3 (model B): "
                            "shorten it to %4 tokens.").arg(S).arg(a.config().n_ctx).arg(b.config().n_ctx).arg(nCtx));
    StitchBase base;
    base.tokens.assign(tokens.begin(), tokens.end());
    base.topK = topK;
    ForwardOptions opt;
    opt.allLogits = true;
    opt.cacheHeadResults = false;
    opt.residualsOnly = true; // A: only the residual streams are read
    const int total = a.config().n_layers + b.config().n_layers + 2;
    Progress pa = progress;
    pa.report = [&](qint64 done, qint64, const QString& what) {
        if (progress.report) progress.report(done, total, tr("model A: %1").arg(what));
    };
    {
        ActivationCache ca = runForward(a, tokens, opt, pa);
        base.residA.reserve(size_t(ca.nLayers() + 1));
        base.residA.push_back(ca.embed + ca.pos_embed); // = resid_pre of block 0, bitwise
        for (int l = 0; l < ca.nLayers(); ++l) base.residA.push_back(ca.stored(l).resid_post);
        base.a = nextTokenPredictions(ca.logits, tokens, topK);
    }
    opt.residualsOnly = false;
    opt.cacheLayers = false; // B: only the logits
    Progress pb = progress;
    pb.report = [&](qint64 done, qint64, const QString& what) {
        if (progress.report) progress.report(a.config().n_layers + 1 + done, total, tr("model B: %1").arg(what));
    };
    const ActivationCache cb = runForward(b, tokens, opt, pb);
    base.b = nextTokenPredictions(cb.logits, tokens, topK);
    return base;
}

Matrix stitchedInput(const Model& a, const StitchBase& base, const StitchMap& map, bool finalNormA, int k) {
    checkStitchLayer(a, k);
    if (map.M.rows() != a.config().d_model)
        throw InputError(tr("The stitching map has %1 rows but model A's d_model is %2.").arg(map.M.rows()).arg(a.config().d_model));
    const Matrix& h = base.residA.at(size_t(k));
    // the product in float64: M can be ill-conditioned (the transpose variant), and rounding h·M in float32 would add
    // to the error that A's own float32 pass already brings
    const auto mapped = [&](const Matrix& x) { return Matrix((x.cast<double>() * map.M64).cast<float>()); };
    if (!finalNormA) return mapped(h);
    const GlobalWeights& g = a.globals();
    return mapped(applyNorm(a.config(), h, g.ln_final_w, g.ln_final_b));
}

Matrix stitchedLogits(const Model& a, const Model& b, const StitchBase& base, const StitchMap& map,
                      const StitchVariant& variant, int k, const Progress& progress) {
    checkMapFits(a, b, map, variant);
    const Matrix y = finalResidualOfB(b, stitchedInput(a, base, map, variant.finalNormA, k), k, progress);
    Matrix logits;
    unembed(b, y, logits);
    return logits;
}

StitchPoint stitchAt(const Model& a, const Model& b, const StitchBase& base, const StitchMap& map,
                     const StitchVariant& variant, int k, const Progress& progress) {
    checkMapFits(a, b, map, variant);
    StitchPoint p;
    p.k = k;
    const Matrix x = stitchedInput(a, base, map, variant.finalNormA, k);
    { // the gain of M on this text: ‖x_p‖ / ‖input_p‖ averaged over positions
        const Matrix& h = base.residA[size_t(k)];
        const GlobalWeights& g = a.globals();
        const Matrix in = variant.finalNormA ? applyNorm(a.config(), h, g.ln_final_w, g.ln_final_b) : h;
        double sum = 0;
        for (Eigen::Index r = 0; r < x.rows(); ++r) {
            const double n = double(in.row(r).norm());
            sum += n > 0 ? double(x.row(r).norm()) / n : 0.0;
        }
        p.normRatio = sum / double(x.rows());
    }
    const Matrix y = finalResidualOfB(b, x, k, progress);
    Matrix logits;
    for (Eigen::Index r0 = 0; r0 < y.rows(); r0 += kUnembedRows) {
        progress.checkCancelled();
        const Eigen::Index n = std::min(kUnembedRows, y.rows() - r0);
        unembed(b, Matrix(y.middleRows(r0, n)), logits);
        appendPredictions(logits, int(r0), base.tokens, base.topK, p.predictions);
    }
    p.loss = p.predictions.loss();
    p.lossA = base.a.loss();
    p.lossB = base.b.loss();
    p.agreeA = topOneAgreement(p.predictions, base.a);
    p.agreeB = topOneAgreement(p.predictions, base.b);
    return p;
}

StitchSweep stitchSweep(const Model& a, const Model& b, const StitchBase& base, std::shared_ptr<const StitchMap> map,
                        const StitchVariant& variant, std::span<const int> ks, const Progress& progress) {
    StitchSweep s;
    s.variant = variant;
    s.map = std::move(map);
    for (size_t i = 0; i < ks.size(); ++i) {
        progress.step(qint64(i), qint64(ks.size()), tr("stitching at k = %1 (%2)").arg(ks[i]).arg(variant.id()));
        s.points.push_back(stitchAt(a, b, base, *s.map, variant, ks[i], progress));
    }
    progress.step(qint64(ks.size()), qint64(ks.size()), tr("done"));
    return s;
}

} // namespace attnscope
