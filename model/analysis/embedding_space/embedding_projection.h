#pragma once
// Parameter projections into embedding space (no prompt), after Dar, Geva, Gupta, Berant 2022,
// "Analyzing Transformers in Embedding Space" (arXiv:2209.02535; ACL 2023), section "Parameter
// Projection" and its Table 1: with E = W_E [d_vocab, d_model] (layer norms and biases are ignored, as in
// the paper),
//   W_OV^h = W_V^h·W_O^h  [d_model, d_model]  →  E·W_OV^h·U  [source token, output token]
//   W_QK^h = W_Q^h·W_K^hᵀ [d_model, d_model]  →  E·W_QK^h·Eᵀ  [query token, key token]
//   FF key i   = column i of W_in  [d_model]  →  E·k_i  [d_vocab]
//   FF value i = row i of W_out    [d_model]  →  Uᵀ·v_i  [d_vocab]
// What reads the residual stream (source, query and key tokens, FF keys) is read through the input
// embedding W_E; what writes to it (OV output tokens, FF values) through the unembedding U = W_U
// [d_model, d_vocab]. When the model ties them (GPT-2, Llama-3.2-1B, stories260K) U = W_Eᵀ, the paper's
// setting; when it does not (Llama 2, Mistral, most Qwen2) each side uses its own matrix, as the
// model itself does at its input and output.
// The [d_vocab, d_vocab] matrices are never materialised: they are the low-rank products A·Bᵀ
// (A, B [d_vocab, d_head]) scanned by topKOfProductQuantized (or block by block by topKOfProduct).
// QK scores are raw (no 1/√d_head).
// For grouped-query attention the K/V head of query head h is h / (n_heads / n_kv_heads).
// All functions are pure; caching per head is up to the caller.

#include "model/analysis/common/topk_accumulator.h"
#include "model/core/progress.h"
#include "model/transformer/model.h"

#include <vector>

namespace attnscope {

enum class PairProjectionKind { OV, QK };
enum class NeuronVectorKind { FFKey, FFValue };

/// Scores = A·Bᵀ [d_vocab, d_vocab] as two factors A, B [d_vocab, d_head].
struct LowRankScores {
    Matrix A; ///< rows: row tokens (OV: source tokens, E·W_V^h; QK: query tokens, E·W_Q^h)
    Matrix B; ///< rows: column tokens (OV: output tokens, E·W_O^hᵀ; QK: key tokens, E·W_K^h)
};

/// The factors of E·W_OV^h·Eᵀ or E·W_QK^h·Eᵀ with E = the model's W_E. Throws InputError for a
/// layer/head out of range.
LowRankScores pairFactors(const Model& model, PairProjectionKind kind, int layer, int head);
/// The same with given input and output embeddings E_in, U_T [d_vocab, d_model] (e.g. another checkpoint's
/// W_E and W_Uᵀ): OV reads sources through E_in and outputs through U_T, QK both sides through E_in.
/// Throws InputError if their widths are not d_model.
LowRankScores pairFactors(const Model& model, PairProjectionKind kind, int layer, int head, const Weight& E_in,
                          const Weight& U_T);

/// True when the model's unembedding is its token embedding transposed (W_U = W_Eᵀ), as a tied config or a
/// file without a separate output matrix says.
bool unembeddingTied(const Model& model);
/// One sentence for the views: which matrix reads each side (input tokens through W_E; output tokens and FF
/// values through W_U, or W_Eᵀ when tied).
QString embeddingConvention(const Model& model);
/// The head's d_model × d_model matrix: W_OV^h = W_V^h·W_O^h or W_QK^h = W_Q^h·W_K^hᵀ.
Matrix headCircuit(const Model& model, PairProjectionKind kind, int layer, int head);

/// The k highest-scoring (row token, column token) pairs of a head's OV or QK matrix in embedding space.
struct PairProjection {
    PairProjectionKind kind = PairProjectionKind::OV;
    int layer = 0;
    int head = 0;
    std::vector<ScoredPair> top; ///< highest first; row/col are token ids
};

/// How projectPairs scans the d_vocab² cells (both give the same top-k cells).
enum class PairTopKMethod {
    Quantized, ///< int8 candidate pass + exact F32 rescoring (topKOfProductQuantized; ~10× faster)
    Exact,     ///< blocked F32 GEMM scan in row blocks of `blockRows` (topKOfProduct)
};

/// Top-k pairs of E·W_OV^h·Eᵀ (kind OV) or E·W_QK^h·Eᵀ (kind QK). Quantized: see
/// topKOfProductQuantized (progress per panel of rows); Exact: row blocks of `blockRows` source/query
/// tokens (see topKOfProduct: progress per block). Throws Cancelled; throws InputError for a layer/head
/// out of range.
PairProjection projectPairs(const Model& model, PairProjectionKind kind, int layer, int head, int k,
                            const Progress& progress = {}, int blockRows = 1024,
                            PairTopKMethod method = PairTopKMethod::Quantized);

/// For one row token (OV: source token; QK: query token) the k column tokens (OV: output tokens;
/// QK: key tokens) with the highest scores, highest first. Throws InputError for bad indices.
std::vector<ScoredToken> projectPairsForRow(const Model& model, PairProjectionKind kind, int layer, int head,
                                            int rowToken, int k);

/// FF key i (column i of W_in) or FF value i (row i of W_out) of a layer: [d_model].
/// Throws InputError for a layer/neuron out of range.
RowVector neuronVector(const Model& model, NeuronVectorKind kind, int layer, int neuron);

/// Top-k and bottom-k tokens of E·k_i or E·v_i [d_vocab].
struct NeuronProjection {
    NeuronVectorKind kind = NeuronVectorKind::FFValue;
    int layer = 0;
    int neuron = 0;
    std::vector<ScoredToken> top;    ///< highest first
    std::vector<ScoredToken> bottom; ///< lowest first
};

/// E·k_i (FFKey, through W_E) or U·v_i (FFValue, through the unembedding) → top-k and bottom-k tokens
/// (ties: lower id first).
NeuronProjection projectNeuron(const Model& model, NeuronVectorKind kind, int layer, int neuron, int k);

/// A head ranked by how strongly its OV circuit writes a token.
struct HeadForToken {
    int layer = 0;
    int head = 0;
    float score = 0;     ///< max over source tokens s of (E·W_OV^h·U)[s, t]
    int sourceToken = 0; ///< the s attaining it (lowest id on ties)
};

/// A neuron ranked by how strongly its FF value writes a token.
struct NeuronForToken {
    int layer = 0;
    int neuron = 0;
    float score = 0;     ///< (Uᵀ·v_i)[t]
};

struct ReverseSearch {
    int token = 0;
    std::vector<HeadForToken> heads;     ///< best first (ties: lower layer, then lower head)
    std::vector<NeuronForToken> neurons; ///< best first (ties: lower layer, then lower neuron)
};

/// Reverse search for token t: which heads and neurons write t? A head's score is the largest entry of
/// column t of E·W_OV^h·U, i.e. the best-case logit boost of t when the head copies any single
/// source token (the entry a "top pairs" list would show for t); a neuron's score is (Uᵀ·v_i)[t], the
/// boost of t per unit activation. Both are unnormalised (heads/neurons with large weights rank higher).
/// Cost: n_layers·n_heads·d_vocab·d_model + n_layers·d_mlp·d_model. Progress units: layers; throws
/// Cancelled; throws InputError for a token out of range.
ReverseSearch reverseSearch(const Model& model, int token, int kHeads, int kNeurons, const Progress& progress = {});

} // namespace attnscope
