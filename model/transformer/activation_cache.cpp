#include "model/transformer/activation_cache.h"

namespace attnscope {

int ActivationCache::logitRow(int p) const {
    for (size_t i = 0; i < logitPositions.size(); ++i)
        if (logitPositions[i] == p) return int(i);
    return -1;
}

} // namespace attnscope
