#pragma once
// Self-attention "by hand": the small worksheet taught in courses (e.g. Tom Yeh's "AI by Hand"
// self-attention exercise): a few token vectors as the COLUMNS of X, weight matrices W_Q, W_K, W_V
// with one row per output feature, and
//     Q = W_Q·X,  K = W_K·X,  V = W_V·X        [d_k, n], [d_k, n], [d_v, n]
//     scores = KᵀQ                              [n key, n query]
//     scaled = scores / √d_k
//     A = softmax over each column (column j = query j's attention over the keys)
//     Z = V·A                                   [d_v, n query]   (attention-weighted features)
// Vaswani et al. 2017 eq. (1) written for column vectors.
//
// Two switches:
//  * Convention::Rows is the layout GPT-2 and the rest of AttnScope use (rows = positions):
//    X is [n, d_in], W is [d_in, d_k], Q = X·W_Q, scores = Q·Kᵀ [n query, n key], softmax over each
//    row, Z = A·V. Every matrix is the transpose of its Convention::Columns counterpart.
//  * Each result carries two arithmetics side by side: `exact` (e^x, divide by √d_k) and
//    `worksheet`, the hand simplifications: scaled = ⌊scores / r⌋ with r = round(√d_k) (nearest
//    integer, at least 1; for d_k = 3 this is the worksheet's ⌊x/2⌋ for x/√3), and the softmax uses
//    3^x instead of e^x (A = 3^s / Σ_keys 3^s), so the weights are simple fractions.
// With `causal`, a query may only attend to keys at its own or earlier positions.

#include "model/core/tensor.h"

#include <QString>

namespace attnscope {

/// Layout of the sandbox matrices.
enum class SandboxConvention {
    Columns, ///< worksheet: tokens are columns, scores [key, query], softmax per column
    Rows     ///< GPT-2: tokens are rows, scores [query, key], softmax per row (= transpose of Columns)
};

/// The worksheet's given matrices, always stored in the Columns convention.
struct SandboxInputs {
    Matrix X;     ///< [d_in, n]  column j = the feature vector of token j
    Matrix W_Q;   ///< [d_k, d_in]
    Matrix W_K;   ///< [d_k, d_in]
    Matrix W_V;   ///< [d_v, d_in]
    bool causal = false;        ///< mask keys after the query (scaled = NaN there, A = 0)
    bool blankTemplate = false; ///< exports show only the given matrices and empty boxes for the rest
};

/// The default worksheet: n = 4 tokens of dimension d_in = 6 and d_k = d_v = 3, all entries 0 or 1,
/// chosen so the worksheet arithmetic gives small fractions (values are written out in
/// tests/attention/tst_attention_sandbox.cpp).
SandboxInputs defaultSandboxInputs();

/// `in` with new sizes: d_in × n for X, d_k × d_in for W_Q/W_K, d_v × d_in for W_V. Entries that exist
/// in both keep their value, new ones are 0. Throws InputError if a size is < 1 or > 16.
SandboxInputs resizedSandboxInputs(const SandboxInputs& in, int d_in, int n, int d_k, int d_v);

/// Every intermediate of one arithmetic, in the result's convention (shapes for Columns; Rows transposes).
struct SandboxMatrices {
    Matrix Q, K;    ///< [d_k, n]
    Matrix V;       ///< [d_v, n]
    Matrix scores;  ///< KᵀQ [n key, n query] (Rows: Q·Kᵀ [n query, n key])
    Matrix scaled;  ///< scores / √d_k, or ⌊scores / round(√d_k)⌋; NaN in masked cells
    Matrix A;       ///< attention weights, each query's weights sum to 1; 0 in masked cells
    Matrix Z;       ///< V·A [d_v, n query] (Rows: A·V [n query, d_v])
};

struct SandboxResult {
    SandboxConvention convention = SandboxConvention::Columns;
    bool causal = false;
    bool blankTemplate = false;
    int d_k = 0;
    double exactDivisor = 1;  ///< √d_k
    int worksheetDivisor = 1; ///< round(√d_k), at least 1
    Matrix X, W_Q, W_K, W_V;  ///< the inputs in this convention (Rows: Xᵀ [n, d_in], W_Qᵀ [d_in, d_k], ...)
    SandboxMatrices exact;    ///< e^x softmax, divide by √d_k
    SandboxMatrices worksheet;///< 3^x softmax, ⌊x / round(√d_k)⌋
};

/// Runs the worksheet in the given convention. Throws InputError (naming the matrix and both sizes)
/// if X is empty, W_Q/W_K/W_V do not have d_in = X.rows() columns, or W_Q and W_K differ in rows.
SandboxResult runSandbox(const SandboxInputs& in, SandboxConvention convention = SandboxConvention::Columns);

} // namespace attnscope
