#pragma once
// A loaded model: architecture description, tokenizer, and role-named weights backed by
// read-only memory-mapped files. Immutable after loading and safe to share across threads.

#include "model/tokenizers/tokenizer.h"
#include "model/transformer/model_config.h"
#include "model/core/weight_packer.h"
#include "model/core/weight_panels.h"
#include "model/transformer/weights.h"

#include <QString>
#include <QStringList>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace attnscope {

/// What the model-info panel shows.
struct ModelInfo {
    QString name;          ///< folder name (or "demo")
    QString path;          ///< folder or file the user opened
    QString storageDtype;  ///< "F32", "F16", "BF16" (or "mixed")
    qint64 fileBytes = 0;  ///< total size of the weight files
    QStringList weightFiles;
    bool hasNonFiniteWeights = false; ///< NaN/Inf seen in a weight tensor (checked lazily)
    QString tokenizerPath; ///< the tokenizer file given apart from the weights (LoadOptions), "" when found with them
};

/// Owned by a shared_ptr (loadModel) so residuals-only caches can keep it alive (weak_from_this).
class Model : public std::enable_shared_from_this<Model> {
public:
    Model(ModelConfig config, ModelInfo info, std::unique_ptr<Tokenizer> tokenizer,
          std::unique_ptr<WeightResolver> resolver);

    const ModelConfig& config() const { return config_; }
    const ModelInfo& info() const { return info_; }
    const Tokenizer& tokenizer() const { return *tokenizer_; }

    /// W_E, W_pos, ln_final, W_U. Resolved on first call (thread-safe).
    const GlobalWeights& globals() const;
    /// Weights of layer l in [0, n_layers). Resolved (F16/BF16 converted) on first call, thread-safe.
    /// Its projection matrices (W_Q, W_K, W_V, W_O, W_in, W_gate, W_out; not block-quantized ones) carry
    /// a WeightPanels each (Weight::panels), which this model's packer makes in the background (weight_packer.h;
    /// until then products read the weight in place, with the same results), while the packed copies of this
    /// model stay within a quarter of the memory available when the layer was resolved; with
    /// ATTNSCOPE_PACKED_WEIGHTS=0 none, and every product reads its weight in place (the same results).
    const LayerWeights& layer(int l) const;
    /// Bytes of this model's packed weight copies so far (Weight::panels).
    size_t packedWeightBytes() const;
    /// Blocks until the packer has made every copy of the layers resolved so far (benchmarks, tests).
    void waitForPackedWeights() const { packer_.waitUntilIdle(); }
    /// Holds the packer before its next copy (true) or lets it go on (false): tests run a pass on weights
    /// that are certainly read in place.
    void pauseWeightPacking(bool paused) const { packer_.setPaused(paused); }

private:
    ModelConfig config_;
    ModelInfo info_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::unique_ptr<WeightResolver> resolver_;
    mutable std::once_flag globalsOnce_;
    mutable GlobalWeights globals_;
    mutable std::vector<std::once_flag> layerOnce_;
    mutable std::vector<LayerWeights> layers_;
    mutable std::mutex panelsMutex_; ///< guards layerPanels_
    mutable std::vector<std::vector<std::unique_ptr<WeightPanels>>> layerPanels_;
    mutable std::atomic<qint64> panelBytesAttached_ = 0;
    mutable WeightPacker packer_; ///< after layerPanels_: stopped and joined before the copies are freed
};

} // namespace attnscope
