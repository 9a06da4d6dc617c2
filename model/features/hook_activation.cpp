// hookActivation (declared in hook_point.h), apart from the hook names: reading a dictionary file needs the names, and
// this file alone needs the activation cache (the fuzz targets link the file readers without it).
#include "model/features/hook_point.h"

#include "model/transformer/activation_cache.h"

namespace attnscope {

Matrix hookActivation(const ActivationCache& cache, const HookPoint& hook) {
    if (hook.site == HookSite::Embed) return cache.embed;
    const int l = hook.layer;
    switch (hook.site) {
    case HookSite::ResidPre: return cache.stored(l).resid_pre;
    case HookSite::ResidMid: return cache.stored(l).resid_mid;
    case HookSite::ResidPost: return cache.stored(l).resid_post;
    case HookSite::AttnOut: return cache.stored(l).attn_out;
    case HookSite::MlpOut: return cache.stored(l).mlp_out;
    case HookSite::Z: return cache.stored(l).z;
    case HookSite::MlpIn: return cache.layer(l)->ln2;
    case HookSite::MlpPost: return cache.layer(l)->mlp_post;
    case HookSite::Embed: break;
    }
    return {};
}

} // namespace attnscope
