#pragma once
// Brute-force references for the embedding-space tests: dense score matrices in double precision and
// selection by full sorting (no heaps, no blocks), to check the blocked top-k code against.

#include "model/analysis/embedding_space/embedding_projection.h"
#include "model/analysis/common/topk_accumulator.h"
#include "model/core/tensor.h"

#include <QString>

#include <Eigen/Core>
#include <vector>

namespace attnscope::test {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct RefCell {
    int row = 0;
    int col = 0;
    double score = 0;
};

/// A weight view in double precision.
MatrixD toDouble(const MatrixView& m);

/// Dense E·W_V^h·W_O^h·U (OV, U = the unembedding, W_Eᵀ when tied) or E·W_Q^h·W_K^hᵀ·Eᵀ (QK)
/// [d_vocab, d_vocab] for head h of layer l, slices taken from the full weight matrices by hand
/// (K/V head = h / (n_heads / n_kv_heads)).
MatrixD denseCircuitScores(const Model& m, PairProjectionKind kind, int l, int h);

/// Dense E·k_i (column i of W_in) or Uᵀ·v_i (row i of W_out) [d_vocab] for neuron i of layer l.
Eigen::VectorXd denseNeuronScores(const Model& m, NeuronVectorKind kind, int l, int i);

/// Every cell of S sorted by score (descending when `highest`, else ascending), ties by row then col.
std::vector<RefCell> sortedCells(const MatrixD& S, bool highest = true);
/// Every entry of v sorted the same way (row = 0, col = index).
std::vector<RefCell> sortedEntries(const Eigen::VectorXd& v, bool highest = true);

/// Checks a top-k list against the reference: k entries, each score within tol of the reference's
/// i-th score and of S at its own (row, col), no cell twice, and the same cell as the reference
/// wherever the reference's i-th score is more than 2·tol from its neighbours (no near tie).
/// Returns an empty string when all holds, else what failed.
QString compareTopK(const std::vector<ScoredPair>& ours, const std::vector<RefCell>& ref, const MatrixD& S, int k,
                    double tol);
/// The same for a vector result (ids are columns of the 1×n matrix v).
QString compareTopK(const std::vector<ScoredToken>& ours, const std::vector<RefCell>& ref, const Eigen::VectorXd& v,
                    int k, double tol);

} // namespace attnscope::test
