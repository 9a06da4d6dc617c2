#include "brute_force_topk.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace attnscope::test {

MatrixD toDouble(const MatrixView& m) { return m.cast<double>(); }

MatrixD denseCircuitScores(const Model& m, PairProjectionKind kind, int l, int h) {
    const ModelConfig& c = m.config();
    const int L = c.d_head, kv = h / (c.n_heads / c.n_kv_heads);
    const LayerWeights& w = m.layer(l);
    const MatrixD E = toDouble(m.globals().W_E.view());
    // OV writes: its output tokens are read through the unembedding (U = W_U_Tᵀ; W_Eᵀ when tied)
    if (kind == PairProjectionKind::OV)
        return E * (toDouble(w.W_V.view()).middleCols(kv * L, L) * toDouble(w.W_O.view()).middleRows(h * L, L)) *
               toDouble(m.globals().W_U_T.view()).transpose();
    const MatrixD W = toDouble(w.W_Q.view()).middleCols(h * L, L) * toDouble(w.W_K.view()).middleCols(kv * L, L).transpose();
    return E * W * E.transpose();
}

Eigen::VectorXd denseNeuronScores(const Model& m, NeuronVectorKind kind, int l, int i) {
    // FF keys read the residual stream (W_E), FF values write it (the unembedding)
    if (kind == NeuronVectorKind::FFKey) return toDouble(m.globals().W_E.view()) * toDouble(m.layer(l).W_in.view()).col(i);
    return toDouble(m.globals().W_U_T.view()) * toDouble(m.layer(l).W_out.view()).row(i).transpose();
}

std::vector<RefCell> sortedCells(const MatrixD& S, bool highest) {
    std::vector<RefCell> cells;
    cells.reserve(size_t(S.size()));
    for (int i = 0; i < S.rows(); ++i)
        for (int j = 0; j < S.cols(); ++j) cells.push_back({i, j, S(i, j)});
    std::sort(cells.begin(), cells.end(), [&](const RefCell& a, const RefCell& b) {
        if (a.score != b.score) return highest ? a.score > b.score : a.score < b.score;
        return a.row != b.row ? a.row < b.row : a.col < b.col;
    });
    return cells;
}

std::vector<RefCell> sortedEntries(const Eigen::VectorXd& v, bool highest) {
    return sortedCells(MatrixD(v.transpose()), highest);
}

QString compareTopK(const std::vector<ScoredPair>& ours, const std::vector<RefCell>& ref, const MatrixD& S, int k,
                    double tol) {
    if (int(ours.size()) != k) return QStringLiteral("%1 entries, expected %2").arg(ours.size()).arg(k);
    std::set<std::pair<int, int>> seen;
    for (int i = 0; i < k; ++i) {
        const ScoredPair& p = ours[size_t(i)];
        if (!seen.insert({p.row, p.col}).second) return QStringLiteral("cell (%1,%2) twice").arg(p.row).arg(p.col);
        if (std::abs(p.score - ref[size_t(i)].score) > tol)
            return QStringLiteral("entry %1: score %2, reference %3").arg(i).arg(p.score).arg(ref[size_t(i)].score);
        if (std::abs(p.score - S(p.row, p.col)) > tol)
            return QStringLiteral("entry %1: score %2 but S(%3,%4) = %5").arg(i).arg(p.score).arg(p.row).arg(p.col)
                .arg(S(p.row, p.col));
        const bool tiedBefore = i > 0 && ref[size_t(i - 1)].score - ref[size_t(i)].score <= 2 * tol;
        const bool tiedAfter = size_t(i + 1) < ref.size() && ref[size_t(i)].score - ref[size_t(i + 1)].score <= 2 * tol;
        if (!tiedBefore && !tiedAfter && (p.row != ref[size_t(i)].row || p.col != ref[size_t(i)].col))
            return QStringLiteral("entry %1: cell (%2,%3), reference (%4,%5)").arg(i).arg(p.row).arg(p.col)
                .arg(ref[size_t(i)].row).arg(ref[size_t(i)].col);
    }
    return {};
}

QString compareTopK(const std::vector<ScoredToken>& ours, const std::vector<RefCell>& ref, const Eigen::VectorXd& v,
                    int k, double tol) {
    std::vector<ScoredPair> pairs;
    for (const ScoredToken& t : ours) pairs.push_back({0, t.id, t.score});
    return compareTopK(pairs, ref, MatrixD(v.transpose()), k, tol);
}

} // namespace attnscope::test
