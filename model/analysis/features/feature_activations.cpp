#include "model/analysis/features/feature_activations.h"

#include <QDir>

namespace attnscope {

int FeatureRun::aliveCount() const {
    int n = 0;
    for (Eigen::Index j = 0; j < f.cols(); ++j)
        if ((f.col(j).array() != 0.0f).any()) ++n;
    return n;
}

FeatureRun runDictionary(const Model& model, const ActivationCache& cache, const SparseCoder& sae) {
    const QString label = QDir::toNativeSeparators(sae.path);
    FeatureRun r;
    r.hookIn = requireHook(model.config(), sae.hookIn, sae.d_in, label);
    r.hookOut = requireHook(model.config(), sae.hookOut, sae.d_out, label);
    r.x = hookActivation(cache, r.hookIn);
    r.f = encodeFeatures(sae, r.x);
    r.xhat = decodeFeatures(sae, r.f, r.x);
    r.target = r.hookOut == r.hookIn ? r.x : hookActivation(cache, r.hookOut);
    return r;
}

} // namespace attnscope
