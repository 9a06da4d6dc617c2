#pragma once
// Random sparse dictionaries written in the formats users download (SAELens folders, Gemma Scope .npz,
// circuit-tracer sets, Llama Scope folders), and an independent float64 encoder/decoder written from the
// formulas of each format's reference code (SAELens sae_lens/saes/*.py, circuit-tracer transcoder/*.py), for
// checking model/features against.

#include <Eigen/Core>
#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <utility>
#include <vector>

namespace attnscope {
struct SparseCoder;
}

namespace attnscope::test {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowD = Eigen::Matrix<double, 1, Eigen::Dynamic>;

/// A dictionary's parameters in float64 (values exactly representable in the file's dtype once rounded).
struct DictionaryParams {
    MatrixD W_enc;   ///< [d_in, d_sae]
    RowD b_enc;      ///< [d_sae]
    MatrixD W_dec;   ///< [d_sae, d_out]
    RowD b_dec;      ///< [d_out]
    RowD threshold;  ///< [d_sae]
    RowD b_gate, b_mag, r_mag;
    MatrixD W_skip;  ///< [d_in, d_out] as applied: x·W_skip
};

/// Random parameters (normal, scaled so that roughly half the features fire on normal inputs); thresholds in
/// [0.05, 0.5] (or around 0 with negative values when `negativeThresholds`).
DictionaryParams randomParams(int d_in, int d_sae, int d_out, unsigned seed, bool negativeThresholds = false);

/// How the reference encodes: the formula of one format and architecture.
struct ReferenceSpec {
    enum Activation { ReLU, JumpReLU, TopK, Gated, MatchingPursuit } activation = ReLU;
    int k = 0;
    bool relu = true;                ///< false: circuit-tracer's JumpReLU / TopK
    bool rescaleByDecoderNorm = false;
    bool applyBDecToInput = false;
    enum Norm { None, ConstantNormRescale, LayerNorm } norm = None;
    double inputScale = 1.0;         ///< folded expected_average factor
    double thresholdScalar = 0;      ///< used when params.threshold is empty
    bool skip = false;
    bool transcoder = false;         ///< output normalisation is not undone for transcoders
    /// MatchingPursuit (SAELens matching_pursuit_sae.py): greedy pursuit over the rows of W_dec (W_enc unused), with
    /// its stopping rules (maxIterations < 0: d_in); b_dec is added on decoding only with applyBDecToInput.
    double residualThreshold = 1e-2;
    int maxIterations = -1;
    bool stopOnDuplicateSupport = true;
    bool residualUpdate = true;      ///< false: the mistake of scoring every step against the input itself
};

/// f [pos, d_sae] and x̂ [pos, d_out] in float64.
std::pair<MatrixD, MatrixD> referenceEncodeDecode(const DictionaryParams& p, const ReferenceSpec& spec, const MatrixD& x);

/// Normal inputs [rows, cols] (σ 1.5, mean 0.3), each value a float.
MatrixD randomInput(int rows, int cols, unsigned seed);

/// encodeFeatures and decodeFeatures of `sae` on x against referenceEncodeDecode: "" when every activation (zero or not,
/// and its value) and the reconstruction agree within `tol` (relative), else the first difference; *firing = the
/// reference's nonzero activations.
QString referenceMismatch(const SparseCoder& sae, const DictionaryParams& p, const ReferenceSpec& spec, const MatrixD& x,
                          int* firing = nullptr, double tol = 2e-4);

/// Rounds every parameter to the values a `dtype` ("F32", "F16", "BF16") file holds.
DictionaryParams roundedTo(const DictionaryParams& p, const QString& dtype);

/// Safetensors bytes of named tensors (shape, row-major values) in `dtype`.
QByteArray safetensorsOf(const std::vector<std::pair<QString, std::pair<std::vector<qint64>, std::vector<double>>>>& tensors,
                         const QString& dtype = QStringLiteral("F32"));

/// Row-major values of a matrix / row (and its transpose).
std::vector<double> valuesOf(const MatrixD& m);
std::vector<double> valuesOf(const RowD& r);
std::vector<double> transposedValuesOf(const MatrixD& m);

/// An SAELens folder: cfg.json (`cfg`) + sae_weights.safetensors with the SAELens tensor names and layouts
/// for `architecture` (gated: b_gate, b_mag, r_mag; skip_transcoder: W_skip [d_out, d_in]).
void writeSaeLensFolder(const QString& dir, const DictionaryParams& p, const QString& architecture, const QJsonObject& cfg,
                        const QString& dtype = QStringLiteral("F32"));

/// circuit-tracer's per-layer safetensors: W_enc [d_t, d_model] (transposed relative to SAELens), W_dec, b_enc, b_dec,
/// activation_function.threshold when `threshold`, W_skip [d_model, d_model] applied as x·W_skipᵀ when `skip`.
QByteArray circuitTracerLayer(const DictionaryParams& p, bool threshold, bool skip);

/// A .npy (version 1.0, '<f4' or '<f8') of a tensor.
QByteArray npyOf(const std::vector<qint64>& shape, const std::vector<double>& values, bool float64 = false);
/// A zip of named entries (minizip), stored or deflated.
void writeZip(const QString& path, const std::vector<std::pair<QString, QByteArray>>& entries, bool deflate);

} // namespace attnscope::test
