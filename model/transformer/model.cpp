#include "model/transformer/model.h"

#include <cassert>

namespace attnscope {

Model::Model(ModelConfig config, ModelInfo info, std::unique_ptr<Tokenizer> tokenizer,
             std::unique_ptr<WeightResolver> resolver)
    : config_(std::move(config)), info_(std::move(info)), tokenizer_(std::move(tokenizer)),
      resolver_(std::move(resolver)), layerOnce_(size_t(config_.n_layers)), layers_(size_t(config_.n_layers)) {}

const GlobalWeights& Model::globals() const {
    std::call_once(globalsOnce_, [this] { globals_ = resolver_->globals(); });
    return globals_;
}

const LayerWeights& Model::layer(int l) const {
    assert(l >= 0 && l < config_.n_layers);
    std::call_once(layerOnce_[size_t(l)], [this, l] { layers_[size_t(l)] = resolver_->layer(l); });
    return layers_[size_t(l)];
}

} // namespace attnscope
