#include "model/transformer/forward.h"

#include "model/transformer/cache_budget.h"

#include <QCoreApplication>
#include <cmath>
#include <limits>

namespace attnscope {

namespace {

void addBias(Matrix& x, const Weight& b) {
    if (!b.empty()) x.rowwise() += b.view().row(0);
}

/// x·W + b for x [pos, in], W [in, out] -> [pos, out] (GPT-2 Conv1D).
Matrix linear(const Matrix& x, const Weight& W, const Weight& b) {
    Matrix y = x * W.view();
    addBias(y, b);
    return y;
}

/// Causal softmax of scaled scores [query_pos, key_pos]: row i is softmax over keys 0..i, zero beyond.
/// Equivalent to HF's masked_fill(finfo.min) followed by softmax.
Matrix causalSoftmax(const Matrix& scores) {
    const Eigen::Index S = scores.rows();
    Matrix p = Matrix::Zero(S, scores.cols());
    for (Eigen::Index i = 0; i < S; ++i) {
        const auto row = scores.row(i).head(i + 1);
        const float m = row.maxCoeff();
        auto e = (row.array() - m).exp();
        p.row(i).head(i + 1) = e / e.sum();
    }
    return p;
}

/// Attention block of layer l: fills q, k, v, attn_scores, pattern, z, result, attn_out.
void attentionBlock(const ModelConfig& cfg, int l, const LayerWeights& w, LayerCache& c, const ForwardOptions& opt) {
    const int H = cfg.n_heads, L = cfg.d_head, groups = cfg.n_heads / std::max(1, cfg.n_kv_heads);
    c.q = linear(c.ln1, w.W_Q, w.b_Q);   // [pos, H*L]
    c.k = linear(c.ln1, w.W_K, w.b_K);   // [pos, H_kv*L]
    c.v = linear(c.ln1, w.W_V, w.b_V);
    if (groups > 1) { // grouped-query attention: repeat each K/V head for its query heads
        Matrix k(c.k.rows(), Eigen::Index(H) * L), v(c.v.rows(), Eigen::Index(H) * L);
        for (int h = 0; h < H; ++h) {
            k.middleCols(h * L, L) = c.k.middleCols((h / groups) * L, L);
            v.middleCols(h * L, L) = c.v.middleCols((h / groups) * L, L);
        }
        c.k = std::move(k);
        c.v = std::move(v);
    }
    const float scale = float(cfg.attnScale(l));
    const Eigen::Index S = c.ln1.rows();
    c.attn_scores.assign(size_t(H), Matrix());
    c.pattern.assign(size_t(H), Matrix());
    c.z.resize(S, Eigen::Index(H) * L);
#pragma omp parallel for schedule(static) if (S >= 64)
    for (int h = 0; h < H; ++h) {
        // scores = Q_h·K_hᵀ · scale   [query_pos, key_pos]
        c.attn_scores[size_t(h)].noalias() = (c.q.middleCols(h * L, L) * c.k.middleCols(h * L, L).transpose()) * scale;
        c.pattern[size_t(h)] = causalSoftmax(c.attn_scores[size_t(h)]);
        // z_h = pattern_h · V_h   [pos, d_head]
        c.z.middleCols(h * L, L).noalias() = c.pattern[size_t(h)] * c.v.middleCols(h * L, L);
    }
    for (const HeadAblation& a : opt.ablations) {
        if (a.layer != l || a.head < 0 || a.head >= H) continue;
        auto zh = c.z.middleCols(a.head * L, L);
        if (a.kind == HeadAblation::Kind::Zero) zh.setZero();
        else zh.rowwise() = RowVector(zh.colwise().mean());
    }
    // concat heads then project: attn_out = z·W_O + b_O (what HF computes)
    c.attn_out = linear(c.z, w.W_O, w.b_O);
    c.result.clear();
    if (opt.cacheHeadResults) {
        // per-head result_h = z_h·W_O^h, W_O^h = rows h*L..(h+1)*L-1 of W_O; Σ_h result_h + b_O = attn_out
        c.result.assign(size_t(H), Matrix());
        for (int h = 0; h < H; ++h)
            c.result[size_t(h)].noalias() = c.z.middleCols(h * L, L) * w.W_O_head(h, L).view();
    }
}

/// MLP block: mlp_pre = x·W_in + b_in, mlp_post = act(mlp_pre) (× x·W_gate when gated), mlp_out = mlp_post·W_out + b_out.
void mlpBlock(const ModelConfig& cfg, const LayerWeights& w, LayerCache& c) {
    c.mlp_pre = linear(c.ln2, w.W_in, w.b_in);
    if (cfg.gatedMlp && !w.W_gate.empty()) {
        // SwiGLU (Llama): act(x·W_gate) ⊙ (x·W_in)
        Matrix gate = c.ln2 * w.W_gate.view();
        applyActivation(cfg.activation, gate);
        c.mlp_post = gate.cwiseProduct(c.mlp_pre);
    } else {
        c.mlp_post = c.mlp_pre;
        applyActivation(cfg.activation, c.mlp_post);
    }
    c.mlp_out = linear(c.mlp_post, w.W_out, w.b_out);
}

} // namespace

Matrix applyNorm(const ModelConfig& cfg, const Matrix& x, const Weight& w, const Weight& b, Vector* scale) {
    const Eigen::Index S = x.rows();
    const float eps = float(cfg.norm_eps);
    Matrix y(S, x.cols());
    if (scale) scale->resize(S);
    for (Eigen::Index i = 0; i < S; ++i) {
        auto row = x.row(i).array();
        float divisor;
        if (cfg.norm == NormKind::LayerNorm) {
            const float mean = row.mean();
            const float var = (row - mean).square().mean(); // biased variance, as torch.nn.LayerNorm
            divisor = std::sqrt(var + eps);
            y.row(i) = (row - mean) / divisor;
        } else {
            divisor = std::sqrt(row.square().mean() + eps);
            y.row(i) = row / divisor;
        }
        if (scale) (*scale)(i) = divisor;
    }
    y.array().rowwise() *= w.view().row(0).array();
    addBias(y, b);
    return y;
}

void applyActivation(ActivationKind kind, Matrix& x) {
    auto a = x.array();
    switch (kind) {
    case ActivationKind::GeluNew: {
        // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))  (HF NewGELUActivation)
        const float c = 0.7978845608028654f;
        a = 0.5f * a * (1.0f + (c * (a + 0.044715f * a.cube())).tanh());
        break;
    }
    case ActivationKind::GeluExact:
        a = a.unaryExpr([](float v) { return 0.5f * v * (1.0f + std::erf(v * float(M_SQRT1_2))); });
        break;
    case ActivationKind::Relu:
        a = a.max(0.0f);
        break;
    case ActivationKind::Silu:
        a = a / (1.0f + (-a).exp());
        break;
    }
}

ActivationCache runForward(const Model& model, std::span<const int> tokens, const ForwardOptions& options,
                           const Progress& progress) {
    const ModelConfig& cfg = model.config();
    const int S = int(tokens.size());
    if (S == 0)
        throw InputError(QCoreApplication::translate("forward", "The prompt is empty: there are no tokens to run."));
    if (S > cfg.n_ctx)
        throw InputError(QCoreApplication::translate("forward",
                             "The prompt has %1 tokens but the model's context (n_ctx) is %2 tokens. "
                             "Shorten the prompt by %3 tokens.")
                             .arg(S).arg(cfg.n_ctx).arg(S - cfg.n_ctx));
    for (int t : tokens)
        if (t < 0 || t >= cfg.d_vocab)
            throw InputError(QCoreApplication::translate("forward", "Token id %1 is outside the vocabulary [0, %2).")
                                 .arg(t).arg(cfg.d_vocab));

    // memory guard: without the per-head results if only that fits, a clear InputError if nothing
    // fits; never a cache the OOM killer ends (cache_budget.h)
    if (planCache(cfg, S, options, cacheBudgetBytes()).cacheHeadResults != options.cacheHeadResults) {
        ForwardOptions lean = options;
        lean.cacheHeadResults = false;
        return runForward(model, tokens, lean, progress);
    }

    const GlobalWeights& g = model.globals();
    ActivationCache cache;
    cache.tokens.assign(tokens.begin(), tokens.end());
    const int total = cfg.n_layers + 1;
    progress.step(0, total, QStringLiteral("embeddings"));

    // embed = one-hot(tokens)·W_E: row lookup, never a dense [pos, d_vocab] matrix
    const auto W_E = g.W_E.view();
    cache.embed.resize(S, cfg.d_model);
    for (int p = 0; p < S; ++p) cache.embed.row(p) = W_E.row(tokens[size_t(p)]);
    if (cfg.positions == PositionKind::Learned)
        cache.pos_embed = g.W_pos.view().topRows(S);
    else
        cache.pos_embed = Matrix::Zero(S, cfg.d_model);

    cache.layers.resize(size_t(cfg.n_layers));
    const Matrix* resid = nullptr;
    Matrix resid0 = cache.embed + cache.pos_embed;
    resid = &resid0;
    for (int l = 0; l < cfg.n_layers; ++l) {
        progress.step(l, total, QStringLiteral("layer %1").arg(l));
        const LayerWeights& w = model.layer(l);
        LayerCache& c = cache.layers[size_t(l)];
        c.resid_pre = *resid;
        c.ln1 = applyNorm(cfg, c.resid_pre, w.ln1_w, w.ln1_b);
        attentionBlock(cfg, l, w, c, options);
        c.resid_mid = c.resid_pre + c.attn_out;
        c.ln2 = applyNorm(cfg, c.resid_mid, w.ln2_w, w.ln2_b);
        mlpBlock(cfg, w, c);
        c.resid_post = c.resid_mid + c.mlp_out;
        resid = &c.resid_post;
    }
    progress.step(cfg.n_layers, total, QStringLiteral("unembedding"));

    cache.ln_final = applyNorm(cfg, *resid, g.ln_final_w, g.ln_final_b, &cache.ln_final_scale);
    if (options.allLogits) {
        cache.logitPositions.resize(size_t(S));
        for (int p = 0; p < S; ++p) cache.logitPositions[size_t(p)] = p;
        cache.logits.noalias() = cache.ln_final * g.W_U_T.view().transpose();
    } else {
        cache.logitPositions = {S - 1};
        cache.logits.noalias() = cache.ln_final.bottomRows(1) * g.W_U_T.view().transpose();
    }
    addBias(cache.logits, g.b_U);
    progress.step(total, total, QStringLiteral("done"));
    return cache;
}

} // namespace attnscope
