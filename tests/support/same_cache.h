#pragma once
// "Bitwise the same forward pass": every hook point of two activation caches, compared byte for byte.

#include "model/transformer/activation_cache.h"
#include "tests/support/bitwise_equal.h"

#include <QString>

namespace attnscope::test {

/// The first hook point at which a and b differ in shape or in any byte ("" when none does): embed, every
/// layer's q, k, v, pattern, z, attn_out, mlp_pre, mlp_post, mlp_out and residuals, ln_final and the logits.
inline QString firstDifference(const ActivationCache& a, const ActivationCache& b) {
    if (!same(a.embed, b.embed)) return QStringLiteral("embed");
    if (a.layers.size() != b.layers.size()) return QStringLiteral("layer count");
    for (size_t l = 0; l < a.layers.size(); ++l) {
        const LayerCache &x = a.layers[l], &y = b.layers[l];
        const std::pair<const char*, bool> hooks[] = {
            {"q", same(x.q, y.q)},           {"k", same(x.k, y.k)},
            {"v", same(x.v, y.v)},           {"pattern", same(x.pattern, y.pattern)},
            {"z", same(x.z, y.z)},           {"attn_out", same(x.attn_out, y.attn_out)},
            {"resid_mid", same(x.resid_mid, y.resid_mid)}, {"mlp_pre", same(x.mlp_pre, y.mlp_pre)},
            {"mlp_post", same(x.mlp_post, y.mlp_post)}, {"mlp_out", same(x.mlp_out, y.mlp_out)},
            {"resid_post", same(x.resid_post, y.resid_post)}};
        for (const auto& [name, equal] : hooks)
            if (!equal) return QStringLiteral("blocks.%1.%2").arg(l).arg(QLatin1String(name));
    }
    if (!same(a.ln_final, b.ln_final)) return QStringLiteral("ln_final");
    if (!same(a.logits, b.logits)) return QStringLiteral("logits");
    return {};
}

} // namespace attnscope::test
