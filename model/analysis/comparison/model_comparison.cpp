#include "model/analysis/comparison/model_comparison.h"

#include "model/analysis/common/index_checks.h"
#include "model/analysis/comparison/shared_vocabulary.h"
#include "model/core/weight_gemm.h"

#include <QCoreApplication>
#include <limits>

namespace attnscope {

namespace {

/// All neuron vectors of a layer as rows: FF keys = W_inᵀ, FF values = W_out. [d_mlp, d_model]
Matrix neuronVectors(const Model& m, NeuronVectorKind kind, int layer) {
    const LayerWeights& w = m.layer(layer);
    if (kind == NeuronVectorKind::FFKey) return w.W_in.toMatrix().transpose();
    return w.W_out.toMatrix();
}

/// 1/‖row‖ per row from squared norms; 0 for a zero row (its cosines become 0).
Vector inverseNorms(const Vector& squaredNorms) {
    return squaredNorms.unaryExpr([](float s) { return s > 0 ? 1.0f / std::sqrt(s) : 0.0f; });
}

/// Mean over rows of X of max_j cos: X [n, r] rows already unit-scaled, Y [m, r], yInv [m] = 1/‖y_j‖ in the
/// metric used. Row blocks bound the [n, m] buffer.
float meanBestMatch(const Matrix& X, const Matrix& Y, const Vector& yInv) {
    constexpr Eigen::Index block = 1024;
    const Matrix Yt = (Y.array().colwise() * yInv.array()).matrix().transpose(); // [r, m]
    double sum = 0;
    for (Eigen::Index r0 = 0; r0 < X.rows(); r0 += block) {
        const Eigen::Index n = std::min(block, X.rows() - r0);
        const Matrix C = X.middleRows(r0, n) * Yt; // cosines [n, m]
        sum += C.rowwise().maxCoeff().cast<double>().sum();
    }
    return X.rows() ? float(sum / double(X.rows())) : std::numeric_limits<float>::quiet_NaN();
}

/// Per model: Gram matrix E·ᵀE and, per layer, the neuron vectors and their embedding-space 1/‖E·x‖.
struct ProjectedLayers {
    std::vector<Matrix> vectors;      ///< [layer][d_mlp, d_model]
    std::vector<Vector> embedInv;     ///< [layer][d_mlp]  1/‖E·x_i‖
    std::vector<Vector> featureInv;   ///< [layer][d_mlp]  1/‖x_i‖
};

ProjectedLayers projectLayers(const Model& m, NeuronVectorKind kind, const Matrix& gram) {
    ProjectedLayers p;
    for (int l = 0; l < m.config().n_layers; ++l) {
        Matrix x = neuronVectors(m, kind, l);
        // ‖E·x‖² = xᵀ·(Eᵀ·E)·x, row-wise
        p.embedInv.push_back(inverseNorms(((x * gram).array() * x.array()).rowwise().sum().matrix()));
        p.featureInv.push_back(inverseNorms(x.rowwise().squaredNorm()));
        p.vectors.push_back(std::move(x));
    }
    return p;
}

/// Eᴬᵀ·Eᴬ, Eᴮᵀ·Eᴮ and Eᴬᵀ·Eᴮ over rows in chunks (float32 copies of a chunk at a time, whatever the
/// embeddings' stored types).
void gramMatrices(const Weight& Ea, const Weight& Eb, Matrix& Gaa, Matrix& Gbb, Matrix& Gab) {
    constexpr Eigen::Index kChunk = 4096;
    Gaa = Matrix::Zero(Ea.cols, Ea.cols);
    Gbb = Matrix::Zero(Eb.cols, Eb.cols);
    Gab = Matrix::Zero(Ea.cols, Eb.cols);
    for (Eigen::Index r0 = 0; r0 < Ea.rows; r0 += kChunk) {
        const Eigen::Index n = std::min(kChunk, Ea.rows - r0);
        const Matrix a = Ea.rowBlock(r0, n).toMatrix(), b = Eb.rowBlock(r0, n).toMatrix();
        Gaa.noalias() += a.transpose() * a;
        Gbb.noalias() += b.transpose() * b;
        Gab.noalias() += a.transpose() * b;
    }
}

QString fieldMismatch(const char* field, int a, int b) {
    return QCoreApplication::translate("analysis", "The two models differ in %1 (%2 vs %3).")
        .arg(QString::fromLatin1(field)).arg(a).arg(b);
}

} // namespace

LayerSimilarity compareLayers(const Model& a, const Model& b, NeuronVectorKind kind, const Progress& progress) {
    const ModelConfig &ca = a.config(), &cb = b.config();
    requireSharedVocabulary(a, b);
    // [d_vocab, d_model_*]: FF keys read through W_E, FF values through the unembedding (embeddingConvention)
    const bool keys = kind == NeuronVectorKind::FFKey;
    const Weight &Ea = keys ? a.globals().W_E : a.globals().W_U_T, &Eb = keys ? b.globals().W_E : b.globals().W_U_T;
    const qint64 total = qint64(ca.n_layers) * cb.n_layers;
    progress.step(0, total, QStringLiteral("Gram matrices"));
    Matrix Gaa, Gbb, Gab;
    gramMatrices(Ea, Eb, Gaa, Gbb, Gab);
    const ProjectedLayers pa = projectLayers(a, kind, Gaa), pb = projectLayers(b, kind, Gbb);
    const bool sameWidth = ca.d_model == cb.d_model;

    LayerSimilarity out;
    out.kind = kind;
    out.embedding.resize(ca.n_layers, cb.n_layers);
    out.feature.setConstant(ca.n_layers, cb.n_layers, std::numeric_limits<float>::quiet_NaN());
    for (int l1 = 0; l1 < ca.n_layers; ++l1) {
        const Matrix& x = pa.vectors[size_t(l1)];
        // rows x_iᵀ·E_Aᵀ·E_B / ‖E_A·x_i‖, so a product with y_j/‖E_B·y_j‖ is the embedding-space cosine
        const Matrix xe = ((x * Gab).array().colwise() * pa.embedInv[size_t(l1)].array()).matrix();
        const Matrix xf = (x.array().colwise() * pa.featureInv[size_t(l1)].array()).matrix();
        for (int l2 = 0; l2 < cb.n_layers; ++l2) {
            progress.step(qint64(l1) * cb.n_layers + l2, total, QStringLiteral("L%1 vs L%2").arg(l1).arg(l2));
            const Matrix& y = pb.vectors[size_t(l2)];
            out.embedding(l1, l2) = meanBestMatch(xe, y, pb.embedInv[size_t(l2)]);
            if (sameWidth) out.feature(l1, l2) = meanBestMatch(xf, y, pb.featureInv[size_t(l2)]);
        }
    }
    progress.step(total, total, QStringLiteral("done"));
    return out;
}

void checkSameArchitecture(const Model& a, const Model& b) {
    const ModelConfig &x = a.config(), &y = b.config();
    const std::pair<const char*, std::pair<int, int>> fields[] = {
        {"n_layers", {x.n_layers, y.n_layers}}, {"n_heads", {x.n_heads, y.n_heads}},
        {"n_kv_heads", {x.n_kv_heads, y.n_kv_heads}}, {"d_model", {x.d_model, y.d_model}},
        {"d_head", {x.d_head, y.d_head}}, {"d_mlp", {x.d_mlp, y.d_mlp}}, {"d_vocab", {x.d_vocab, y.d_vocab}}};
    for (const auto& [name, v] : fields)
        if (v.first != v.second) throw InputError(fieldMismatch(name, v.first, v.second));
}

NeuronDiff diffNeuron(const Model& before, const Model& after, NeuronVectorKind kind, int layer, int neuron, int k) {
    checkSameArchitecture(before, after);
    const RowVector delta = neuronVector(after, kind, layer, neuron) - neuronVector(before, kind, layer, neuron);
    NeuronDiff d;
    d.maxAbsDiff = delta.size() ? delta.cwiseAbs().maxCoeff() : 0.0f;
    d.identical = d.maxAbsDiff == 0.0f;
    if (d.identical) return d; // a zero difference is reported as such, never as a ranking of zeros
    Matrix scores; // (E·Δk)ᵀ or (Uᵀ·Δv)ᵀ [1, d_vocab], as projectNeuron reads the side
    weightGemmTransposed(Matrix(delta), kind == NeuronVectorKind::FFKey ? before.globals().W_E : before.globals().W_U_T,
                         scores);
    d.top = topEntries(scores.row(0), k, true);
    d.bottom = topEntries(scores.row(0), k, false);
    return d;
}

PairDiff diffPairs(const Model& before, const Model& after, PairProjectionKind kind, int layer, int head, int k,
                   const Progress& progress, int blockRows) {
    checkSameArchitecture(before, after);
    PairDiff d;
    d.maxAbsDiff = (headCircuit(after, kind, layer, head) - headCircuit(before, kind, layer, head)).cwiseAbs().maxCoeff();
    d.identical = d.maxAbsDiff == 0.0f;
    if (d.identical) return d;
    const Weight &E = before.globals().W_E, &U_T = before.globals().W_U_T;
    const LowRankScores fa = pairFactors(after, kind, layer, head, E, U_T), fb = pairFactors(before, kind, layer, head, E, U_T);
    const Eigen::Index V = fa.A.rows(), L = fa.A.cols();
    // E·(W_after − W_before)·Eᵀ = [A_after | −A_before]·[B_after | B_before]ᵀ
    Matrix A(V, 2 * L), B(V, 2 * L);
    A << fa.A, -fb.A;
    B << fa.B, fb.B;
    const QString what = QStringLiteral("L%1H%2 difference").arg(layer).arg(head);
    d.top = topKOfProduct(A, B, k, blockRows, progress, what);
    A = -A; // lowest cells of S = highest of −S
    d.bottom = topKOfProduct(A, B, k, blockRows, progress, what);
    for (ScoredPair& p : d.bottom) p.score = -p.score;
    return d;
}

} // namespace attnscope
