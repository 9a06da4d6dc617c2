#include "model/analysis/embedding_space/embedding_projection.h"

#include "model/analysis/common/index_checks.h"
#include "model/analysis/common/quantized_topk.h"
#include "model/core/weight_gemm.h"

#include <QCoreApplication>
#include <algorithm>

namespace attnscope {

namespace {

/// K/V head serving query head h (grouped-query attention shares one K/V head among n_heads/n_kv_heads).
int kvHead(const ModelConfig& cfg, int h) { return h / std::max(1, cfg.n_heads / std::max(1, cfg.n_kv_heads)); }

} // namespace

LowRankScores pairFactors(const Model& model, PairProjectionKind kind, int layer, int head) {
    checkHead(model.config(), layer, head);
    return pairFactors(model, kind, layer, head, model.globals().W_E, model.globals().W_U_T);
}

bool unembeddingTied(const Model& model) {
    const GlobalWeights& g = model.globals();
    return g.W_U_T.ptr == g.W_E.ptr && g.W_U_T.type == g.W_E.type;
}

QString embeddingConvention(const Model& model) {
    if (unembeddingTied(model))
        return QCoreApplication::translate("analysis", "This model ties its embeddings (W_U = W_Eᵀ): E = W_E reads both "
                                                       "sides.");
    return QCoreApplication::translate("analysis", "This model has a separate unembedding W_U: source, query and key tokens "
                                                   "and FF keys are read through W_E (as the model reads its input), output "
                                                   "tokens and FF values through W_U (as it writes its logits).");
}

Matrix headCircuit(const Model& model, PairProjectionKind kind, int layer, int head) {
    const ModelConfig& cfg = model.config();
    checkHead(cfg, layer, head);
    const LayerWeights& w = model.layer(layer);
    const int L = cfg.d_head, kv = kvHead(cfg, head);
    if (kind == PairProjectionKind::OV) return w.W_V_head(kv, L).toMatrix() * w.W_O_head(head, L).toMatrix();
    return w.W_Q_head(head, L).toMatrix() * w.W_K_head(kv, L).toMatrix().transpose();
}

LowRankScores pairFactors(const Model& model, PairProjectionKind kind, int layer, int head, const Weight& E,
                          const Weight& U_T) {
    const ModelConfig& cfg = model.config();
    checkHead(cfg, layer, head);
    for (const Weight* m : {&E, &U_T})
        if (m->cols != cfg.d_model)
            throw InputError(QCoreApplication::translate("analysis", "The embedding has %1 columns but the model's d_model is %2.")
                                 .arg(m->cols).arg(cfg.d_model));
    const LayerWeights& w = model.layer(layer);
    const int L = cfg.d_head, kv = kvHead(cfg, head);
    LowRankScores f;
    Weight left, right;
    if (kind == PairProjectionKind::OV) {
        // E·W_V^h·W_O^h·U = (E·W_V^h)·(Uᵀ·W_O^hᵀ)ᵀ
        left = w.W_V_head(kv, L);
        right = w.W_O_head(head, L).t(); // [d_model, d_head]: a transposed view, read in place
    } else {
        // E·W_Q^h·W_K^hᵀ·Eᵀ = (E·W_Q^h)·(E·W_K^h)ᵀ
        left = w.W_Q_head(head, L);
        right = w.W_K_head(kv, L);
    }
    // [d_vocab, d_model]·[d_model, d_head] by the forward's kernel; both factors in one pass when one
    // matrix reads both sides (QK, or a tied unembedding)
    const Weight& rightE = kind == PairProjectionKind::OV ? U_T : E;
    f.A.resize(E.rows, L);
    f.B.resize(rightE.rows, L);
    const GemmTarget targets[] = {{left, f.A.data(), f.A.cols(), {}}, {right, f.B.data(), f.B.cols(), {}}};
    if (rightE.ptr == E.ptr && rightE.type == E.type) {
        weightGemmTall(E, targets);
    } else {
        weightGemmTall(E, std::span(targets, 1));
        weightGemmTall(rightE, std::span(targets + 1, 1));
    }
    return f;
}

PairProjection projectPairs(const Model& model, PairProjectionKind kind, int layer, int head, int k,
                            const Progress& progress, int blockRows, PairTopKMethod method) {
    const LowRankScores f = pairFactors(model, kind, layer, head);
    const QString what = QStringLiteral("L%1H%2 %3 pairs").arg(layer).arg(head)
                             .arg(kind == PairProjectionKind::OV ? QStringLiteral("OV") : QStringLiteral("QK"));
    if (method == PairTopKMethod::Exact) return {kind, layer, head, topKOfProduct(f.A, f.B, k, blockRows, progress, what)};
    return {kind, layer, head, topKOfProductQuantized(f.A, f.B, k, progress, what)};
}

std::vector<ScoredToken> projectPairsForRow(const Model& model, PairProjectionKind kind, int layer, int head,
                                            int rowToken, int k) {
    checkToken(model.config(), rowToken);
    const LowRankScores f = pairFactors(model, kind, layer, head);
    const RowVector scores = f.A.row(rowToken) * f.B.transpose(); // [d_vocab]
    return topEntries(scores, k);
}

RowVector neuronVector(const Model& model, NeuronVectorKind kind, int layer, int neuron) {
    checkNeuron(model.config(), layer, neuron);
    const LayerWeights& w = model.layer(layer);
    if (kind == NeuronVectorKind::FFKey) return w.W_in.colBlock(neuron, 1).toMatrix().transpose(); // W_in [d_model, d_mlp]
    return w.W_out.rowVector(neuron);                                                           // W_out [d_mlp, d_model]
}

NeuronProjection projectNeuron(const Model& model, NeuronVectorKind kind, int layer, int neuron, int k) {
    const RowVector x = neuronVector(model, kind, layer, neuron);
    Matrix scores; // (E·k_i)ᵀ or (Uᵀ·v_i)ᵀ [1, d_vocab]
    weightGemmTransposed(Matrix(x), kind == NeuronVectorKind::FFKey ? model.globals().W_E : model.globals().W_U_T, scores);
    return {kind, layer, neuron, topEntries(scores.row(0), k, true), topEntries(scores.row(0), k, false)};
}

ReverseSearch reverseSearch(const Model& model, int token, int kHeads, int kNeurons, const Progress& progress) {
    const ModelConfig& cfg = model.config();
    checkToken(cfg, token);
    const Weight& E = model.globals().W_E;
    const RowVector e_t = model.globals().W_U_T.rowVector(token); // [d_model]: column t of U
    ReverseSearch out;
    out.token = token;
    for (int l = 0; l < cfg.n_layers; ++l) {
        progress.step(l, cfg.n_layers, QStringLiteral("layer %1").arg(l));
        const LayerWeights& w = model.layer(l);
        for (int h = 0; h < cfg.n_heads; ++h) {
            // column t of E·W_V^h·W_O^h·U = E·(W_V^h·(W_O^h·u_t))
            const Vector b_t = w.W_O_head(h, cfg.d_head).toMatrix() * e_t.transpose();   // [d_head]
            const Matrix u = (w.W_V_head(kvHead(cfg, h), cfg.d_head).toMatrix() * b_t).transpose(); // [1, d_model]
            Matrix col;                                                                   // [1, d_vocab]
            weightGemmTransposed(u, E, col);
            const ScoredToken best = topEntries(col.row(0), 1).front();
            out.heads.push_back({l, h, best.score, best.id});
        }
        Matrix v; // (Uᵀ·v_i)[t] = u_t·v_i for every neuron i: [1, d_mlp]
        weightGemmTransposed(Matrix(e_t), w.W_out, v);
        for (int i = 0; i < cfg.d_mlp; ++i) out.neurons.push_back({l, i, v(0, i)});
    }
    // stable sorts keep (layer, index) order among equal scores
    std::stable_sort(out.heads.begin(), out.heads.end(), [](const auto& a, const auto& b) { return a.score > b.score; });
    std::stable_sort(out.neurons.begin(), out.neurons.end(), [](const auto& a, const auto& b) { return a.score > b.score; });
    out.heads.resize(std::min(out.heads.size(), size_t(std::max(0, kHeads))));
    out.neurons.resize(std::min(out.neurons.size(), size_t(std::max(0, kNeurons))));
    progress.step(cfg.n_layers, cfg.n_layers, QStringLiteral("done"));
    return out;
}

} // namespace attnscope
