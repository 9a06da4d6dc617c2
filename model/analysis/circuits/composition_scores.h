#pragma once
// Head composition from the weights alone (Elhage et al. 2021, "A Mathematical Framework for Transformer
// Circuits", §"Composition": Q-, K- and V-composition), for every pair of heads in different layers, with the
// baseline of random matrices of the same shapes, and the virtual OV circuit of a head pair in token space.
//
// Row-vector convention (TransformerLens): W_OV^h = W_V^h·W_O^h, W_QK^h = W_Q^h·W_K^hᵀ, both [d_model, d_model].
// For an earlier head a and a later head b (TransformerLens HookedTransformer.all_composition_scores):
//   Q: ‖W_OV^a·W_QK^b‖_F,  K: ‖W_OV^a·(W_QK^b)ᵀ‖_F,  V: ‖W_OV^a·W_OV^b‖_F,
// each divided by ‖W_OV^a‖_F·‖(the right factor)‖_F.
// The d_head-sized factor trick: every matrix is a product A·B of a [d_model, d_head] and a [d_head, d_model]
// factor. With A_a = Q_a R_a (QR) and B_bᵀ = Q_b R_b, ‖A_a B_a A_b B_b‖_F = ‖(R_a B_a)·(A_b R_bᵀ)‖_F, a
// d_head × d_head matrix: per head one [d_head, d_model] left factor R_a B_a and one [d_model, d_head] right
// factor A_b R_bᵀ (whose own norms are the denominators), and per pair of layers one product of the stacked
// factors [n_heads·d_head, d_model]·[d_model, n_heads·d_head]; never a d_model² matrix per pair.
// GQA: a query head's W_K, W_V are its K/V head's. Layer norms and biases are ignored, as in the paper.

#include "model/analysis/common/topk_accumulator.h"
#include "model/core/progress.h"
#include "model/transformer/model.h"

#include <QString>
#include <memory>
#include <optional>
#include <vector>

namespace attnscope {

enum class CompositionKind { Q, K, V };
/// "q", "k", "v".
QString compositionKindName(CompositionKind kind);
std::optional<CompositionKind> compositionKindFromName(const QString& name);

/// Scores of random matrices of the model's shapes: A [d_model, d_head] and B [d_head, d_model] with
/// independent N(0, 1) entries (fixed seed), the same score formula; about 1/√d_model.
struct CompositionBaseline {
    double mean = 0, sd = 0;
    int samples = 0;
};
CompositionBaseline randomCompositionBaseline(int d_model, int d_head, int samples = 64, unsigned seed = 2021);

struct CompositionScores {
    CompositionKind kind = CompositionKind::K;
    int nLayers = 0, nHeads = 0;
    /// [layer_a·n_heads + head_a, layer_b·n_heads + head_b]: head a (earlier) into head b (later); NaN when
    /// layer_a ≥ layer_b
    Eigen::MatrixXf scores;
    CompositionBaseline baseline;

    float score(int layerA, int headA, int layerB, int headB) const {
        return scores(layerA * nHeads + headA, layerB * nHeads + headB);
    }
};

/// Every pair's score of `kind`, computed once per model and kind and then shared (a small cache keyed by the
/// model; thread-safe). Progress units: layers; throws Cancelled (nothing is cached then).
std::shared_ptr<const CompositionScores> compositionScores(const Model& model, CompositionKind kind, const Progress& progress = {});

/// The composition score of one pair straight from its d_model × d_model matrices (for tests and checks).
double compositionScoreDirect(const Model& model, CompositionKind kind, int layerA, int headA, int layerB, int headB);

/// The virtual OV circuit of head a (earlier) then head b in token space, E·W_OV^a·W_OV^b·Eᵀ
/// [source token, output token] with E = W_E: its top-k cells (factors E·W_V^a·(W_O^a·W_V^b) and E·W_O^bᵀ,
/// scanned by topKOfProductQuantized, as the embedding-space tab does for one head). Throws InputError unless
/// layer_a < layer_b; Cancelled.
std::vector<ScoredPair> virtualOvCircuit(const Model& model, int layerA, int headA, int layerB, int headB, int k,
                                         const Progress& progress = {});

} // namespace attnscope
