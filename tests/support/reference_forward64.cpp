#include "reference_forward64.h"

#include <Eigen/SVD>
#include <cmath>
#include <stdexcept>

namespace attnscope::test {

namespace {

Matrix64 dbl(const Weight& w) { return w.toMatrix().cast<double>(); }
Eigen::RowVectorXd row64(const Weight& w) { return w.empty() ? Eigen::RowVectorXd() : Eigen::RowVectorXd(dbl(w).row(0)); }

Matrix64 layerNorm(const Matrix64& x, const Weight& w, const Weight& b, double eps) {
    Matrix64 y(x.rows(), x.cols());
    const Eigen::RowVectorXd g = row64(w), beta = row64(b);
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const double mean = x.row(i).mean();
        const double var = (x.row(i).array() - mean).square().mean();
        y.row(i) = ((x.row(i).array() - mean) / std::sqrt(var + eps)).matrix().cwiseProduct(g);
        if (beta.size()) y.row(i) += beta;
    }
    return y;
}

Matrix64 linear(const Matrix64& x, const Weight& W, const Weight& b) {
    Matrix64 y = x * dbl(W);
    if (!b.empty()) y.rowwise() += row64(b);
    return y;
}

double geluNew(double v) { return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))); }

void requireGpt2(const ModelConfig& c) {
    if (c.norm != NormKind::LayerNorm || c.positions != PositionKind::Learned || c.activation != ActivationKind::GeluNew ||
        c.gatedMlp || c.n_kv_heads != c.n_heads || c.sliding_window != 0)
        throw std::runtime_error("reference_forward64: GPT-2 architectures only");
}

} // namespace

Matrix64 embeddings64(const Model& m, const std::vector<int>& tokens) {
    requireGpt2(m.config());
    const GlobalWeights& g = m.globals();
    Matrix64 x(Eigen::Index(tokens.size()), m.config().d_model);
    for (size_t p = 0; p < tokens.size(); ++p)
        x.row(Eigen::Index(p)) = g.W_E.rowVector(tokens[p]).cast<double>() + g.W_pos.rowVector(Eigen::Index(p)).cast<double>();
    return x;
}

Matrix64 blocks64(const Model& m, Matrix64 x, int first, int last) {
    const ModelConfig& c = m.config();
    requireGpt2(c);
    const Eigen::Index S = x.rows();
    const int H = c.n_heads, L = c.d_head;
    for (int l = first; l < last; ++l) {
        const LayerWeights& w = m.layer(l);
        const Matrix64 a = layerNorm(x, w.ln1_w, w.ln1_b, c.norm_eps);
        const Matrix64 q = linear(a, w.W_Q, w.b_Q), k = linear(a, w.W_K, w.b_K), v = linear(a, w.W_V, w.b_V);
        Matrix64 z = Matrix64::Zero(S, Eigen::Index(H) * L);
        const double scale = c.attnScale(l);
        for (int h = 0; h < H; ++h)
            for (Eigen::Index i = 0; i < S; ++i) {
                Eigen::VectorXd s(i + 1);
                for (Eigen::Index j = 0; j <= i; ++j) s(j) = q.row(i).segment(h * L, L).dot(k.row(j).segment(h * L, L)) * scale;
                const double mx = s.maxCoeff();
                const Eigen::VectorXd e = (s.array() - mx).exp();
                const Eigen::VectorXd p = e / e.sum();
                for (Eigen::Index j = 0; j <= i; ++j) z.row(i).segment(h * L, L) += p(j) * v.row(j).segment(h * L, L);
            }
        x += linear(z, w.W_O, w.b_O);
        Matrix64 hmid = linear(layerNorm(x, w.ln2_w, w.ln2_b, c.norm_eps), w.W_in, w.b_in);
        hmid = hmid.unaryExpr(&geluNew);
        x += linear(hmid, w.W_out, w.b_out);
    }
    return x;
}

Matrix64 finalNorm64(const Model& m, const Matrix64& x) {
    const GlobalWeights& g = m.globals();
    return layerNorm(x, g.ln_final_w, g.ln_final_b, m.config().norm_eps);
}

Matrix64 logits64(const Model& m, const Matrix64& x) {
    const GlobalWeights& g = m.globals();
    Matrix64 y = finalNorm64(m, x) * dbl(g.W_U_T).transpose();
    if (!g.b_U.empty()) y.rowwise() += row64(g.b_U);
    return y;
}

Matrix64 stitchMap64(const Model& a, const Model& b, bool transpose, double rcond, bool unembedding) {
    const Matrix64 Ea = dbl(unembedding ? a.globals().W_U_T : a.globals().W_E);
    const Matrix64 Eb = dbl(unembedding ? b.globals().W_U_T : b.globals().W_E);
    if (transpose) return Ea.transpose() * Eb;
    const Eigen::BDCSVD<Matrix64> svd(Eb, Eigen::ComputeThinU | Eigen::ComputeThinV);
    const Eigen::VectorXd s = svd.singularValues();
    Eigen::VectorXd inv = Eigen::VectorXd::Zero(s.size());
    for (Eigen::Index i = 0; i < s.size(); ++i)
        if (s(i) > rcond * s(0)) inv(i) = 1.0 / s(i);
    // (E_Bᵀ)⁺ = (V·Σ·Uᵀ)⁺ = U·Σ⁺·Vᵀ
    return Ea.transpose() * (svd.matrixU() * inv.asDiagonal() * svd.matrixV().transpose());
}

} // namespace attnscope::test
