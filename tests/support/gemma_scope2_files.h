#pragma once
// Gemma Scope 2 dictionaries written by the tests in the layout of google/gemma-scope-2-* (model/features/
// gemma_scope2_layout.h): <site>/layer_L_width_W_l0_S[_affine]/{params.safetensors, config.json} with lower-case
// tensor names, and the multi-layer files of a CLT or crosscoder (params_layer_{i}.safetensors, w_dec
// [d_sae, n_layers, d_in]), as Google's tutorial's JumpReLUSAE / JumpReLUMultiLayerSAE hold them; and the float64
// formulas of those classes for checking what AttnScope computes with them.

#include "support/dictionary_fixtures.h"

#include <QJsonObject>
#include <QString>
#include <vector>

namespace attnscope::test {

/// params.safetensors in `dir` (created): w_enc, w_dec, b_enc, b_dec, threshold, and affine_skip_connection = p.W_skip
/// (stored as applied: x·A) when p.W_skip is not empty; config.json too when `config` is not empty.
void writeGemmaScope2Folder(const QString& dir, const DictionaryParams& p, const QJsonObject& config = {},
                            const QString& dtype = QStringLiteral("F32"));

/// One layer of a multi-layer dictionary: its encoder and biases, and decoder slots [n_layers] of [d_sae, d_in].
struct MultiLayerParams {
    DictionaryParams own;            ///< W_enc, b_enc, b_dec, threshold, W_skip (W_dec unused)
    std::vector<MatrixD> W_dec;      ///< [n_layers] slot j: [d_sae, d_in]
};

/// params_layer_{i}.safetensors in `dir` (created), one per element of `layers`.
void writeGemmaScope2MultiLayer(const QString& dir, const std::vector<MultiLayerParams>& layers);

/// Random multi-layer parameters: n layers of d_sae features over d_in; slots j < i zero when `causal`; with `skip` an
/// affine skip per layer.
std::vector<MultiLayerParams> randomMultiLayer(int n, int d_in, int d_sae, unsigned seed, bool causal, bool skip);

/// The tutorial's JumpReLUMultiLayerSAE in float64: f_i = ReLU(pre_i)·(pre_i > θ_i), x̂_j = Σ_{i ∈ sources(j)} f_i·W_dec_i[j]
/// + b_dec_j (+ x_j·A_j), for inputs x[i] [pos, d_in]; `onlyFromBelow`: i ≤ j only (circuit-tracer's CLT). Returns {f, x̂}.
std::pair<std::vector<MatrixD>, std::vector<MatrixD>> referenceMultiLayer(const std::vector<MultiLayerParams>& p,
                                                                          const std::vector<MatrixD>& x, bool onlyFromBelow);

/// Random Gemma Scope 2 transcoders for a model of `nLayers` layers and width d_model written under `siteDir`
/// (transcoder_all/layer_L_width_1k_l0_small[_affine], 1024 features each, config.json with the Gemma 3 module names):
/// only the first `firing` features can fire (the others' threshold is 1e6), so a graph on them stays small; with
/// `affine` every layer has an affine skip (the folders end in _affine). Returns each layer's parameters as written.
std::vector<DictionaryParams> writeRandomGemmaScope2Transcoders(const QString& siteDir, int nLayers, int d_model, unsigned seed,
                                                                int firing, bool affine);

} // namespace attnscope::test
