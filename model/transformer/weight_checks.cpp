#include "model/transformer/weight_checks.h"

#include <utility>

namespace attnscope {

QStringList nonFiniteWeights(const Model& model, int maxNames) {
    QStringList out;
    auto check = [&](const QString& name, const Weight& w) {
        if (out.size() < maxNames && !w.empty() && !w.allFinite()) out << name;
    };
    const GlobalWeights& g = model.globals();
    check(QStringLiteral("W_E"), g.W_E);
    check(QStringLiteral("W_pos"), g.W_pos);
    for (int l = 0; l < model.config().n_layers; ++l) {
        const LayerWeights& w = model.layer(l);
        const QString b = QStringLiteral("blocks.%1.").arg(l);
        const std::pair<const char*, const Weight*> named[] = {
            {"ln1.w", &w.ln1_w}, {"ln1.b", &w.ln1_b}, {"attn.W_Q", &w.W_Q}, {"attn.W_K", &w.W_K},
            {"attn.W_V", &w.W_V}, {"attn.b_Q", &w.b_Q}, {"attn.b_K", &w.b_K}, {"attn.b_V", &w.b_V},
            {"attn.q_norm.w", &w.q_norm_w}, {"attn.k_norm.w", &w.k_norm_w}, {"attn.W_O", &w.W_O}, {"attn.b_O", &w.b_O},
            {"ln2.w", &w.ln2_w}, {"ln2.b", &w.ln2_b},
            {"mlp.W_in", &w.W_in}, {"mlp.b_in", &w.b_in}, {"mlp.W_gate", &w.W_gate}, {"mlp.W_out", &w.W_out},
            {"mlp.b_out", &w.b_out}};
        for (const auto& [name, weight] : named) check(b + QLatin1String(name), *weight);
    }
    check(QStringLiteral("ln_final.w"), g.ln_final_w);
    check(QStringLiteral("ln_final.b"), g.ln_final_b);
    check(QStringLiteral("W_U"), g.W_U_T);
    check(QStringLiteral("b_U"), g.b_U);
    return out;
}

} // namespace attnscope
