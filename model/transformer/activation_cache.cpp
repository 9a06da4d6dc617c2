#include "model/transformer/activation_cache.h"

#include "model/core/errors.h"
#include "model/transformer/layer_recompute.h"

#include <QCoreApplication>

namespace attnscope {

int ActivationCache::logitRow(int p) const {
    for (size_t i = 0; i < logitPositions.size(); ++i)
        if (logitPositions[i] == p) return int(i);
    return -1;
}

int ActivationCache::nHeads() const {
    if (layers.empty()) return 0;
    if (!residualsOnly()) return int(layers.front().pattern.size());
    return recomputer->nHeads();
}

const LayerCache& ActivationCache::stored(int l) const {
    if (l < 0 || l >= nLayers())
        throw InputError(QCoreApplication::translate("analysis", "The activation cache has no layer %1.").arg(l));
    return layers[size_t(l)];
}

std::shared_ptr<const LayerCache> ActivationCache::layer(int l, const Progress& progress) const {
    const LayerCache& s = stored(l);
    if (recomputer) return recomputer->layer(*this, l, progress);
    return std::shared_ptr<const LayerCache>(std::shared_ptr<const LayerCache>(), &s); // non-owning
}

bool ActivationCache::isLayerReady(int l) const {
    if (l < 0 || l >= nLayers()) return false;
    return !recomputer || recomputer->isReady(l);
}

} // namespace attnscope
