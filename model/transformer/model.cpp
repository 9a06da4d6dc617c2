#include "model/transformer/model.h"

#include "model/core/file_mappings.h"
#include "model/core/kernels/compute_kernels.h"
#include "model/transformer/cache_budget.h"

#include <cassert>

namespace attnscope {

namespace {
/// False when ATTNSCOPE_PACKED_WEIGHTS=0: every product then reads its weight in place.
bool packingWanted() {
    static const bool wanted = qEnvironmentVariable("ATTNSCOPE_PACKED_WEIGHTS") != QStringLiteral("0");
    return wanted;
}
} // namespace

Model::Model(ModelConfig config, ModelInfo info, std::unique_ptr<Tokenizer> tokenizer,
             std::unique_ptr<WeightResolver> resolver)
    : config_(std::move(config)), info_(std::move(info)), tokenizer_(std::move(tokenizer)),
      resolver_(std::move(resolver)), layerOnce_(size_t(config_.n_layers)), layers_(size_t(config_.n_layers)),
      layerPanels_(size_t(config_.n_layers)) {}

const GlobalWeights& Model::globals() const {
    std::call_once(globalsOnce_, [this] {
        globals_ = resolver_->globals();
        // every pass that computes a logit reads all of the unembedding (W_E itself when tied): its file pages
        // mapped in one call, not a page fault every 16 pages (weight_panels.cpp, PanelsLease)
        populateMappedPages(globals_.W_U_T.ptr, globals_.W_U_T.storedSpanBytes());
    });
    return globals_;
}

const LayerWeights& Model::layer(int l) const {
    assert(l >= 0 && l < config_.n_layers);
    std::call_once(layerOnce_[size_t(l)], [this, l] {
        LayerWeights w = resolver_->layer(l);
        if (packingWanted()) {
            const int nr = computeKernels().nr;
            const qint64 available = availableMemoryBytes();
            for (Weight* m : {&w.W_Q, &w.W_K, &w.W_V, &w.W_O, &w.W_in, &w.W_gate, &w.W_out}) {
                const qint64 bytes = qint64(panelBytes(*m, nr));
                if (bytes == 0) continue;
                if (available >= 0 && panelBytesAttached_.load() + bytes > available / 4) break;
                panelBytesAttached_ += bytes;
                const std::lock_guard lock(panelsMutex_);
                layerPanels_[size_t(l)].push_back(std::make_unique<WeightPanels>(*m, nr, PackingMode::Background, packer_.lastInPlaceRead()));
                m->panels = layerPanels_[size_t(l)].back().get();
                packer_.enqueue(m->panels);
            }
        }
        layers_[size_t(l)] = w;
    });
    return layers_[size_t(l)];
}

size_t Model::packedWeightBytes() const {
    const std::lock_guard lock(panelsMutex_);
    size_t bytes = 0;
    for (size_t l = 0; l < layerPanels_.size(); ++l)
        for (const auto& p : layerPanels_[l]) bytes += p->packedBytes();
    return bytes;
}

} // namespace attnscope
