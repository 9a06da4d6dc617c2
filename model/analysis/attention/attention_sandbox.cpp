#include "model/analysis/attention/attention_sandbox.h"

#include "model/core/errors.h"

#include <QCoreApplication>
#include <cmath>
#include <limits>

namespace attnscope {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("attention_sandbox", text); }

enum class Arithmetic { Exact, Worksheet };

/// Softmax down each column of s over the cells where keep(row, col) holds, with base e or 3;
/// other cells get 0. Max-subtracted: b^(x−m) / Σ b^(x−m) equals b^x / Σ b^x.
template <class Keep>
Matrix softmaxColumns(const Matrix& s, float base, Keep keep) {
    const float lnBase = std::log(base);
    Matrix a = Matrix::Zero(s.rows(), s.cols());
    for (Eigen::Index j = 0; j < s.cols(); ++j) {
        float m = -std::numeric_limits<float>::infinity();
        for (Eigen::Index i = 0; i < s.rows(); ++i)
            if (keep(i, j)) m = std::max(m, s(i, j));
        float sum = 0;
        for (Eigen::Index i = 0; i < s.rows(); ++i)
            if (keep(i, j)) sum += (a(i, j) = std::exp((s(i, j) - m) * lnBase));
        a.col(j) /= sum;
    }
    return a;
}

/// One arithmetic in one convention. X, W_* are already in that convention.
SandboxMatrices compute(const Matrix& X, const Matrix& W_Q, const Matrix& W_K, const Matrix& W_V,
                        SandboxConvention conv, Arithmetic arith, bool causal, double exactDivisor, int worksheetDivisor) {
    const bool cols = conv == SandboxConvention::Columns;
    SandboxMatrices m;
    m.Q = cols ? Matrix(W_Q * X) : Matrix(X * W_Q);
    m.K = cols ? Matrix(W_K * X) : Matrix(X * W_K);
    m.V = cols ? Matrix(W_V * X) : Matrix(X * W_V);
    m.scores = cols ? Matrix(m.K.transpose() * m.Q) : Matrix(m.Q * m.K.transpose());
    if (arith == Arithmetic::Exact)
        m.scaled = m.scores / float(exactDivisor);
    else
        m.scaled = (m.scores / float(worksheetDivisor)).array().floor().matrix();
    // cell (r, c) pairs key r with query c (Columns) or query r with key c (Rows)
    auto keyQuery = [cols](Eigen::Index r, Eigen::Index c) { return cols ? std::pair(r, c) : std::pair(c, r); };
    auto visible = [&](Eigen::Index r, Eigen::Index c) {
        const auto [key, query] = keyQuery(r, c);
        return !causal || key <= query;
    };
    const float base = arith == Arithmetic::Exact ? float(M_E) : 3.0f;
    if (cols) {
        m.A = softmaxColumns(m.scaled, base, visible);
    } else {
        const Matrix t = m.scaled.transpose();
        m.A = softmaxColumns(t, base, [&](Eigen::Index r, Eigen::Index c) { return visible(c, r); }).transpose();
    }
    for (Eigen::Index r = 0; r < m.scaled.rows(); ++r)
        for (Eigen::Index c = 0; c < m.scaled.cols(); ++c)
            if (!visible(r, c)) m.scaled(r, c) = std::numeric_limits<float>::quiet_NaN();
    m.Z = cols ? Matrix(m.V * m.A) : Matrix(m.A * m.V);
    return m;
}

void requireCols(const Matrix& w, const char* name, Eigen::Index d_in) {
    if (w.rows() < 1 || w.cols() != d_in)
        throw InputError(tr("%1 is %2×%3 but must have one column per feature of X (d_in = %4) and at least one row.")
                             .arg(QString::fromLatin1(name)).arg(w.rows()).arg(w.cols()).arg(d_in));
}

} // namespace

SandboxInputs defaultSandboxInputs() {
    SandboxInputs in;
    in.X.resize(6, 4);
    in.X << 1, 0, 1, 0,
            0, 1, 0, 1,
            1, 1, 0, 0,
            0, 0, 1, 1,
            1, 0, 0, 1,
            0, 1, 1, 0;
    in.W_Q.resize(3, 6);
    in.W_Q << 1, 0, 1, 0, 0, 0,
              0, 1, 0, 0, 1, 0,
              0, 0, 0, 1, 0, 1;
    in.W_K.resize(3, 6);
    in.W_K << 1, 0, 0, 0, 1, 0,
              0, 1, 1, 0, 0, 0,
              0, 0, 0, 1, 0, 1;
    in.W_V.resize(3, 6);
    in.W_V << 1, 0, 0, 1, 0, 0,
              0, 0, 1, 0, 0, 1,
              0, 1, 0, 0, 1, 0;
    return in;
}

SandboxInputs resizedSandboxInputs(const SandboxInputs& in, int d_in, int n, int d_k, int d_v) {
    for (int size : {d_in, n, d_k, d_v})
        if (size < 1 || size > 16)
            throw InputError(tr("Sandbox sizes must be between 1 and 16 (got d_in = %1, n = %2, d_k = %3, d_v = %4).")
                                 .arg(d_in).arg(n).arg(d_k).arg(d_v));
    auto resized = [](const Matrix& old, int rows, int cols) {
        Matrix m = Matrix::Zero(rows, cols);
        const Eigen::Index r = std::min<Eigen::Index>(rows, old.rows()), c = std::min<Eigen::Index>(cols, old.cols());
        m.topLeftCorner(r, c) = old.topLeftCorner(r, c);
        return m;
    };
    SandboxInputs out = in;
    out.X = resized(in.X, d_in, n);
    out.W_Q = resized(in.W_Q, d_k, d_in);
    out.W_K = resized(in.W_K, d_k, d_in);
    out.W_V = resized(in.W_V, d_v, d_in);
    return out;
}

SandboxResult runSandbox(const SandboxInputs& in, SandboxConvention convention) {
    if (in.X.rows() < 1 || in.X.cols() < 1)
        throw InputError(tr("X is empty: give at least one token vector (a column of X)."));
    requireCols(in.W_Q, "W_Q", in.X.rows());
    requireCols(in.W_K, "W_K", in.X.rows());
    requireCols(in.W_V, "W_V", in.X.rows());
    if (in.W_Q.rows() != in.W_K.rows())
        throw InputError(tr("W_Q has %1 rows but W_K has %2: queries and keys need the same d_k.")
                             .arg(in.W_Q.rows()).arg(in.W_K.rows()));
    SandboxResult r;
    r.convention = convention;
    r.causal = in.causal;
    r.blankTemplate = in.blankTemplate;
    r.d_k = int(in.W_Q.rows());
    r.exactDivisor = std::sqrt(double(r.d_k));
    r.worksheetDivisor = std::max(1, int(std::lround(r.exactDivisor)));
    const bool cols = convention == SandboxConvention::Columns;
    r.X = cols ? in.X : Matrix(in.X.transpose());
    r.W_Q = cols ? in.W_Q : Matrix(in.W_Q.transpose());
    r.W_K = cols ? in.W_K : Matrix(in.W_K.transpose());
    r.W_V = cols ? in.W_V : Matrix(in.W_V.transpose());
    for (Arithmetic a : {Arithmetic::Exact, Arithmetic::Worksheet})
        (a == Arithmetic::Exact ? r.exact : r.worksheet) =
            compute(r.X, r.W_Q, r.W_K, r.W_V, convention, a, in.causal, r.exactDivisor, r.worksheetDivisor);
    return r;
}

} // namespace attnscope
