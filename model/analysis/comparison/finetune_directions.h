#pragma once
// What fine-tuning changed, component by component (Dar et al. 2022, "Analyzing Transformers in Embedding
// Space", arXiv:2209.02535, section "Interpreting fine-tuning"): for two checkpoints of one architecture
// (a model and its fine-tuned copy), every attention head and every FF neuron ranked by ‖Δθ‖ / ‖θ‖, the
// Frobenius norm of its change relative to its size in the first checkpoint, and every weight tensor's
// relative change (the whole-model overview). A component's Δ is then read in embedding space with
// diffNeuron / diffPairs (model/analysis/comparison/model_comparison.h): W_E for what it reads, W_U for what it writes.
//
// A head's parameters: its columns of W_Q (and b_Q), the columns of W_K and W_V of the K/V head it reads (and
// their biases; with grouped-query attention those are shared by the group's heads), its rows of W_O. A
// neuron's: column i of W_in and b_in[i] (the key), column i of W_gate (gated MLPs), row i of W_out (the
// value). b_O, b_out, the norms and the embeddings belong to no single component: they are in the tensors.

#include "model/analysis/common/topk_accumulator.h"
#include "model/core/progress.h"
#include "model/transformer/model.h"

#include <array>
#include <vector>

namespace attnscope {

/// How much one head or neuron changed.
struct ComponentChange {
    enum class Kind { Head, Neuron };
    Kind kind = Kind::Head;
    int layer = 0;
    int index = 0;        ///< head or neuron
    double delta = 0;     ///< ‖θ_after − θ_before‖ over all its parameters (float64)
    double norm = 0;      ///< ‖θ_before‖
    double relative = 0;  ///< delta / norm; +inf when norm = 0 < delta, 0 when nothing changed
    /// Per part, the same two norms: heads Q, K, V, O; neurons key, gate, value (and 0).
    std::array<double, 4> partDelta{}, partNorm{};
    /// "L1H2" or "L0N17".
    QString name() const;
    /// The names of the parts: {"Q", "K", "V", "O"} or {"key", "gate", "value", ""}.
    static std::array<const char*, 4> partNames(Kind kind);
};

/// How much one weight tensor changed.
struct TensorChange {
    QString name;     ///< "W_E", "L3.W_in", "ln_final.w", …
    int layer = -1;   ///< -1 for the tensors outside the layers
    double delta = 0, norm = 0, relative = 0; ///< as ComponentChange
};

struct FinetuneRanking {
    std::vector<ComponentChange> heads;   ///< most changed first: relative, then delta (descending), then layer, index
    std::vector<ComponentChange> neurons; ///< the same order
    std::vector<TensorChange> tensors;    ///< every weight tensor, globals first, then layer by layer
    Matrix headRelative;                  ///< [layer, head]   relative change
    Matrix neuronRelative;                ///< [layer, neuron] relative change
    /// Heads and neurons in one list, in the same order.
    std::vector<ComponentChange> components() const;
};

/// Ranks every head and neuron of `after` against `before` and lists every tensor's change. Throws
/// InputError unless the architectures agree (checkSameArchitecture) and every tensor has the same shape
/// and presence in both (e.g. a bias only one of them has). Sums in float64 over float32 copies of row
/// chunks (any stored type). Cost: one pass over both checkpoints' weights. Progress units: layers; throws
/// Cancelled.
FinetuneRanking rankFinetuneChanges(const Model& before, const Model& after, const Progress& progress = {});

/// The parameter of a component read in embedding space, by diffNeuron (FF key/value) or diffPairs (OV/QK) with
/// the Embedding space tab's convention (model/analysis/embedding_space/embedding_projection.h): what a parameter reads from the
/// residual (FF keys, OV source tokens, both sides of QK) through the first checkpoint's W_E, what it writes (FF
/// values, OV output tokens) through its unembedding W_U; for a tied model that is W_E everywhere, the paper's
/// setting.
enum class ChangedParameter { FFKey, FFValue, OV, QK };

} // namespace attnscope
