#include "support/random_transcoders.h"

#include "model/features/sparse_coder.h"

#include <cmath>
#include <memory>
#include <random>
#include <vector>

namespace attnscope::test {

DictionarySet randomTranscoders(const ModelConfig& cfg, int dSae, unsigned seed, int skipLayer, int topK) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> n(0.0f, 1.0f);
    DictionarySet set;
    set.path = QStringLiteral("random transcoders");
    set.kind = QStringLiteral("transcoder_set");
    const int d = cfg.d_model;
    auto owned = [&](size_t count, float scale, float shift) {
        auto v = std::make_shared<std::vector<float>>(count);
        for (float& x : *v) x = shift + scale * n(gen);
        return v;
    };
    for (int l = 0; l < cfg.n_layers; ++l) {
        SparseCoder c;
        c.path = set.path;
        c.hookIn = QStringLiteral("blocks.%1.ln2.hook_normalized").arg(l);
        c.hookOut = QStringLiteral("blocks.%1.hook_mlp_out").arg(l);
        c.d_in = c.d_out = d;
        c.d_sae = dSae;
        c.architecture = QStringLiteral("transcoder");
        if (topK > 0) { // circuit-tracer's TopK: the k largest pre-activations, no ReLU
            c.activation = FeatureActivation::TopK;
            c.k = topK;
            c.relu = false;
        }
        const auto enc = owned(size_t(d) * dSae, 1.0f / std::sqrt(float(d)), 0), dec = owned(size_t(dSae) * d, 1.0f / std::sqrt(float(dSae)), 0),
                   be = owned(size_t(dSae), 0.3f, -0.6f), bd = owned(size_t(d), 0.05f, 0);
        c.W_enc = Weight{enc->data(), d, dSae, dSae, WeightType::F32, false};
        c.W_dec = Weight{dec->data(), dSae, d, d, WeightType::F32, false};
        c.b_enc = Weight{be->data(), 1, dSae, dSae, WeightType::F32, false};
        c.b_dec = Weight{bd->data(), 1, d, d, WeightType::F32, false};
        c.owners = {enc, dec, be, bd};
        if (l == skipLayer) {
            const auto skip = owned(size_t(d) * d, 0.3f / std::sqrt(float(d)), 0);
            c.W_skip = Weight{skip->data(), d, d, d, WeightType::F32, false};
            c.owners.push_back(skip);
            c.architecture = QStringLiteral("skip_transcoder");
        }
        set.coders.push_back(std::move(c));
    }
    return set;
}

} // namespace attnscope::test
