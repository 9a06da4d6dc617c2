#include "model/analysis/embedding_space/component_readout.h"

#include "model/analysis/common/index_checks.h"
#include "model/analysis/residual/residual_decomposition.h"
#include "model/core/weight_gemm.h"

#include <QCoreApplication>

namespace attnscope {

namespace {
const LayerCache& layerCache(const ActivationCache& cache, int layer, int position) {
    if (position < 0 || position >= cache.nPositions())
        throw InputError(QCoreApplication::translate("analysis", "Position %1 is outside the prompt [0, %2).")
                             .arg(position).arg(cache.nPositions()));
    return cache.stored(layer); // result (full cache only), z and mlp_out: never recomputed
}
} // namespace

RowVector headOutput(const Model& model, const ActivationCache& cache, int layer, int head, int position) {
    const ModelConfig& cfg = model.config();
    checkHead(cfg, layer, head);
    const LayerCache& lc = layerCache(cache, layer, position);
    // from z in every cache layout (as residual_decomposition.cpp), so full and residuals-only caches agree bitwise
    const int L = cfg.d_head;
    RowVector r = lc.z.row(position).segment(Eigen::Index(head) * L, L) * model.layer(layer).W_O_head(head, L).toMatrix();
    if (cfg.postNorms) r.array() *= attnPostNormFactor(model, cache, layer, position).array(); // its share of attn_out
    return r;
}

RowVector mlpOutput(const Model& model, const ActivationCache& cache, int layer, int position) {
    checkLayer(model.config(), layer);
    return layerCache(cache, layer, position).mlp_out.row(position);
}

RowVector projectToVocab(const Model& model, const Eigen::Ref<const RowVector>& x) {
    Matrix logits;
    weightGemmTransposed(Matrix(x), model.globals().W_U_T, logits); // the unembedding runForward uses
    return logits.row(0);
}

ComponentReadout readout(const Model& model, const Eigen::Ref<const RowVector>& x, int k) {
    const RowVector logits = projectToVocab(model, x);
    return {topEntries(logits, k, true), topEntries(logits, k, false)};
}

ComponentReadout readHead(const Model& model, const ActivationCache& cache, int layer, int head, int position, int k) {
    return readout(model, headOutput(model, cache, layer, head, position), k);
}

ComponentReadout readMlp(const Model& model, const ActivationCache& cache, int layer, int position, int k) {
    return readout(model, mlpOutput(model, cache, layer, position), k);
}

} // namespace attnscope
