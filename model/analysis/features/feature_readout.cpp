#include "model/analysis/features/feature_readout.h"

#include "model/core/errors.h"
#include "model/core/weight_gemm.h"

namespace attnscope {

namespace {

bool writesResidual(const HookPoint& h) {
    return h.site != HookSite::Z && h.site != HookSite::MlpPost && h.site != HookSite::MlpIn;
}

/// ln_final's linear part on a direction: centred for LayerNorm, times the gain.
RowVector throughFinalGain(const Model& model, RowVector v) {
    if (model.config().norm == NormKind::LayerNorm) v.array() -= v.mean();
    return v.cwiseProduct(model.globals().ln_final_w.rowVector(0));
}

} // namespace

FeatureReadout readFeature(const Model& model, const SparseCoder& sae, int feature, int k) {
    const ModelConfig& cfg = model.config();
    const GlobalWeights& g = model.globals();
    FeatureReadout r;
    r.feature = feature;
    // scores = x·Wᵀ over the vocabulary, W = W_U_T or W_E: top and bottom k
    auto scan = [&](const RowVector& direction, const Weight& W, std::vector<ScoredToken>& top, std::vector<ScoredToken>& bottom) {
        Matrix scores;
        weightGemmTransposed(Matrix(direction), W, scores);
        const RowVector s = scores.row(0);
        top = topEntries(s, k, true);
        bottom = topEntries(s, k, false);
    };
    const RowVector dec = decoderDirection(sae, feature); // also checks the index
    if (sae.d_out == cfg.d_model && !sae.hookOut.endsWith(QLatin1String("hook_z")))
        scan(throughFinalGain(model, dec), g.W_U_T, r.decoderTop, r.decoderBottom);
    if (sae.d_in == cfg.d_model && !sae.hookIn.endsWith(QLatin1String("hook_z")))
        scan(encoderDirection(sae, feature), g.W_E, r.encoderTop, r.encoderBottom);
    return r;
}

double featureLogitAttribution(const Model& model, const ActivationCache& cache, const SparseCoder& sae, const FeatureRun& run,
                               int feature, int position, int token) {
    const ModelConfig& cfg = model.config();
    if (!writesResidual(run.hookOut) || sae.d_out != cfg.d_model)
        throw InputError(QStringLiteral("%1 does not write the residual stream: no direct logit attribution").arg(run.hookOut.name()));
    if (position < 0 || position >= run.f.rows())
        throw InputError(QStringLiteral("position %1 is out of range (0..%2)").arg(position).arg(run.f.rows() - 1));
    if (token < 0 || token >= cfg.d_vocab)
        throw InputError(QStringLiteral("token id %1 is out of range (0..%2)").arg(token).arg(cfg.d_vocab - 1));
    RowVector v = decoderDirection(sae, feature); // checks the feature
    const float a = run.f(position, feature);
    if (a == 0.0f) return 0.0;
    if (sae.activation == FeatureActivation::TopK && sae.rescaleActsByDecoderNorm) v /= float(v.cast<double>().norm());
    const RowVector w = throughFinalGain(model, v) / cache.ln_final_scale(position);
    return double(a) * double(w.dot(model.globals().W_U_T.rowVector(token)));
}

} // namespace attnscope
