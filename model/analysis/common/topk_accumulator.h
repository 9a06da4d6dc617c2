#pragma once
// Running top-k selection with deterministic tie-breaking, and the top-k entries of a low-rank
// product A·Bᵀ computed block by block so the full [rows, cols] matrix never exists.
// Used by the embedding-space projections (Dar et al. 2022, "Analyzing Transformers in Embedding
// Space", arXiv:2209.02535): E·W_OV·Eᵀ and E·W_QK·Eᵀ are [d_vocab, d_vocab] (2.5·10⁹ cells for GPT-2).

#include "model/core/progress.h"
#include "model/core/tensor.h"

#include <vector>

namespace attnscope {

/// One cell of a score matrix: row index, column index, value.
struct ScoredPair {
    int row = 0;
    int col = 0;
    float score = 0;
};

/// One entry of a score vector (a token id and its score; not a probability).
struct ScoredToken {
    int id = 0;
    float score = 0;
};

/// Keeps the k best ScoredPairs offered so far. "Better" = higher score, then lower row, then lower
/// column, so the result does not depend on the order cells are offered in. k >= 0.
class TopKAccumulator {
public:
    explicit TopKAccumulator(int k);

    int k() const { return k_; }
    bool full() const { return int(heap_.size()) >= k_; }
    /// Score of the k-th best cell so far; -inf while fewer than k cells were offered (or k == 0: +inf).
    /// A cell whose score is strictly below this can never enter.
    float threshold() const;
    void offer(int row, int col, float score);
    /// The kept cells, best first.
    std::vector<ScoredPair> sorted() const;

    /// Strict "better than" order used everywhere (score desc, row asc, col asc).
    static bool better(const ScoredPair& a, const ScoredPair& b) {
        if (a.score != b.score) return a.score > b.score;
        if (a.row != b.row) return a.row < b.row;
        return a.col < b.col;
    }

private:
    int k_;
    std::vector<ScoredPair> heap_; ///< heap with the worst kept cell at the front
};

/// The k entries of values [n] with the highest (largest = true) or lowest (largest = false) value,
/// best first; ties: lower index first. k is clamped to n.
std::vector<ScoredToken> topEntries(const Eigen::Ref<const RowVector>& values, int k, bool largest = true);

/// The k largest cells of S = A·Bᵀ, A [rows, r], B [cols, r], best first (TopKAccumulator order),
/// without materialising S: rows of A are visited in blocks of `blockRows` (in order of decreasing
/// ‖a_i‖), each block's scores [blockRows, cols] go to one reusable buffer by a GEMM, and
///  - a whole block is skipped (and so are all later ones) once ‖a_i‖·max_j‖b_j‖ (Cauchy–Schwarz
///    bound on any score of the block) falls below the current k-th best score;
///  - a row of the block is scanned only if its maximum is not below the k-th best score.
/// Blocks are shared among the OpenMP threads (each computes [128, 4096] score tiles that stay in cache
/// and keeps its own top-k; the result is merged and independent of the thread count).
/// Progress units: blocks done out of ceil(rows / blockRows), labelled `what`, reported (and
/// cancellation polled) on the calling thread only; throws Cancelled.
/// Throws InputError if A and B have different numbers of columns or blockRows < 1.
std::vector<ScoredPair> topKOfProduct(const Matrix& A, const Matrix& B, int k, int blockRows,
                                      const Progress& progress = {}, const QString& what = {});

} // namespace attnscope
