#pragma once
// Two models in one space, after Dar et al. 2022 (arXiv:2209.02535), sections "Aligning Models in
// Embedding Space" and "Interpreting fine-tuning": parameters of models that share a vocabulary can
// be compared once each is projected through its own embedding matrix, and the change between two
// checkpoints of one architecture can be read in embedding space.

#include "model/analysis/embedding_space/embedding_projection.h"
#include "model/core/progress.h"
#include "model/transformer/model.h"

#include <vector>

namespace attnscope {

/// Layer × layer similarity of neuron vectors (FF keys or FF values) of model A and model B.
struct LayerSimilarity {
    NeuronVectorKind kind = NeuronVectorKind::FFValue;
    /// [layer_A, layer_B]: mean over neurons i of layer l1 of A of max over neurons j of layer l2 of B
    /// of cos(E_A·x_i, E_B·y_j) — each model projects with its own matrices (FF keys through W_E, FF values
    /// through W_U; the same when tied: embeddingConvention). A zero vector has cosine 0.
    Matrix embedding;
    /// [layer_A, layer_B]: the same with the raw d_model vectors cos(x_i, y_j); all NaN when the two
    /// d_model differ (the feature spaces are then unrelated).
    Matrix feature;
};

/// Compares every layer of A with every layer of B. Throws InputError when the vocabularies differ
/// (requireSharedVocabulary: sizes, or the first token that differs). The embedding-space cosines use the
/// Gram matrices E_Aᵀ·E_B, E_Aᵀ·E_A, E_Bᵀ·E_B ([d_model, d_model]), since
/// (E_A·x)·(E_B·y) = xᵀ·(E_Aᵀ·E_B)·y — exact, and no [d_mlp, d_vocab] projection is formed.
/// Cost ≈ n_layers_A·n_layers_B·d_mlp_A·d_mlp_B·d_model. Progress units: layer pairs; throws Cancelled.
LayerSimilarity compareLayers(const Model& a, const Model& b, NeuronVectorKind kind, const Progress& progress = {});

/// Throws InputError unless the two models have the same n_layers, n_heads, n_kv_heads, d_model,
/// d_head, d_mlp and d_vocab (the message names the first field that differs and both values).
void checkSameArchitecture(const Model& a, const Model& b);

/// Difference of one FF neuron vector between two checkpoints, in embedding space.
struct NeuronDiff {
    bool identical = false;  ///< every element equal: maxAbsDiff == 0 and top/bottom are empty
    float maxAbsDiff = 0;    ///< max |x_after − x_before| over d_model
    std::vector<ScoredToken> top;    ///< highest E_before·Δx first
    std::vector<ScoredToken> bottom; ///< lowest first
};

/// Δx = x_after − x_before for FF key/value `neuron` of `layer`, projected with the *before* model's
/// W_E (keys) or W_U (values) (so embedding drift does not mix in), top-k and bottom-k tokens. Throws InputError for
/// different architectures or bad indices.
NeuronDiff diffNeuron(const Model& before, const Model& after, NeuronVectorKind kind, int layer, int neuron, int k);

/// Difference of a head's W_OV (or W_QK) between two checkpoints, in embedding space.
struct PairDiff {
    bool identical = false;        ///< ΔW == 0 exactly: maxAbsDiff == 0 and top/bottom are empty
    float maxAbsDiff = 0;          ///< max |W_after − W_before| over the d_model × d_model circuit
    std::vector<ScoredPair> top;   ///< highest E·ΔW·Eᵀ cells first (row/col = token ids)
    std::vector<ScoredPair> bottom;///< lowest cells first
};

/// ΔW = W_after − W_before for W_OV^h (kind OV) or W_QK^h (kind QK), E = the before model's W_E (and its
/// W_U for OV output tokens, as pairFactors). E·ΔW·U is the rank-2·d_head product
/// [E·W_V^a | −E·W_V^b]·[Uᵀ·W_O^aᵀ | Uᵀ·W_O^bᵀ]ᵀ (OV; QK alike with E on both sides),
/// scanned by topKOfProduct (progress per block, twice: top then bottom; throws Cancelled).
/// Throws InputError for different architectures or bad indices.
PairDiff diffPairs(const Model& before, const Model& after, PairProjectionKind kind, int layer, int head, int k,
                   const Progress& progress = {}, int blockRows = 1024);

} // namespace attnscope
