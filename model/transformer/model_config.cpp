#include "model/transformer/model_config.h"

#include <cmath>

namespace attnscope {

double ModelConfig::attnScale(int layer) const {
    double s = 1.0;
    if (scale_attn_weights) s /= std::sqrt(query_pre_attn_scalar > 0 ? query_pre_attn_scalar : double(d_head));
    if (scale_attn_by_inverse_layer_idx) s /= double(layer + 1);
    return s;
}

QString activationName(ActivationKind kind) {
    switch (kind) {
    case ActivationKind::GeluNew: return QStringLiteral("gelu_new");
    case ActivationKind::GeluExact: return QStringLiteral("gelu");
    case ActivationKind::Relu: return QStringLiteral("relu");
    case ActivationKind::Silu: return QStringLiteral("silu");
    }
    return {};
}

} // namespace attnscope
