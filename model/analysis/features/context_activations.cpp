#include "model/analysis/features/context_activations.h"

#include "model/core/errors.h"
#include "model/features/hook_point.h"
#include "model/transformer/forward.h"

#include <QDir>

namespace attnscope {

Eigen::VectorXf contextActivations(const Model& model, const SparseCoder& sae, const std::vector<int>& ids, int feature) {
    const QString label = QDir::toNativeSeparators(sae.path);
    if (feature < 0 || feature >= sae.d_sae)
        throw InputError(QStringLiteral("%1: feature %2 is outside [0, d_sae = %3)").arg(label).arg(feature).arg(sae.d_sae));
    if (ids.empty()) throw InputError(QStringLiteral("%1: an empty context has no activations").arg(label));
    const HookPoint hook = requireHook(model.config(), sae.hookIn, sae.d_in, label);
    const Matrix f = encodeFeatures(sae, hookActivation(runForward(model, ids), hook));
    return f.col(feature);
}

} // namespace attnscope
