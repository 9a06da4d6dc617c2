#include "model/transformer/forward.h"

#include "model/core/column_parallel_product.h"
#include "model/core/weight_gemm.h"
#include "model/transformer/cache_budget.h"
#include "model/transformer/layer_recompute.h"

#include <QCoreApplication>
#include <cmath>
#include <limits>

namespace attnscope {

namespace {

void addBias(Matrix& x, const Weight& b) {
    if (!b.empty()) x.rowwise() += b.view().row(0);
}

/// y = x·W + b for x [pos, in], W [in, out] -> y [pos, out] (GPT-2 Conv1D). weightGemm: W read in
/// place, column blocks across the threads with no per-block barrier; y's buffer is reused when its
/// size is unchanged (a recycled cache).
void linear(const Matrix& x, const Weight& W, const Weight& b, Matrix& y) { weightGemm(x, W, b, y); }

/// Rows [r0, r1) of the causal softmax, in place: row i of `scores` holds the scaled scores of keys
/// 0..i (what follows is ignored and set to −∞); row i of p becomes softmax over keys 0..i, zero beyond.
/// Equivalent to HF's masked_fill(finfo.min) followed by softmax.
void causalSoftmaxRows(Matrix& scores, Matrix& p, Eigen::Index r0, Eigen::Index r1) {
    const Eigen::Index S = scores.cols();
    for (Eigen::Index i = r0; i < r1; ++i) {
        const auto row = scores.row(i).head(i + 1);
        auto out = p.row(i);
        out.head(i + 1) = (row.array() - row.maxCoeff()).exp().matrix();
        out.head(i + 1) /= out.head(i + 1).sum();
        out.tail(S - i - 1).setZero();
        scores.row(i).tail(S - i - 1).setConstant(-std::numeric_limits<float>::infinity());
    }
}

/// One head's attention, computing only what the causal mask keeps: for each block of kQueryBlock
/// query rows [r0, r1), scores = Q[r0:r1)·K[0:r1)ᵀ · scale, its softmax, and z[r0:r1) = pattern[r0:r1, 0:r1)·V[0:r1).
/// About half the FLOPs of the full S×S products at long S (1024: 53%).
void headAttention(const Matrix& q, const Matrix& k, const Matrix& v, int h, int L, float scale, Matrix& scores,
                   Matrix& pattern, Matrix& z) {
    constexpr Eigen::Index kQueryBlock = 64;
    const Eigen::Index S = q.rows();
    for (Eigen::Index r0 = 0; r0 < S; r0 += kQueryBlock) {
        const Eigen::Index n = std::min(kQueryBlock, S - r0), r1 = r0 + n;
        scores.block(r0, 0, n, r1).noalias() =
            (q.block(r0, Eigen::Index(h) * L, n, L) * k.block(0, Eigen::Index(h) * L, r1, L).transpose()) * scale;
        causalSoftmaxRows(scores, pattern, r0, r1);
        z.block(r0, Eigen::Index(h) * L, n, L).noalias() = pattern.block(r0, 0, n, r1) * v.block(0, Eigen::Index(h) * L, r1, L);
    }
}

/// Attention block of layer l: fills q, k, v, attn_scores, pattern, z, result, attn_out.
void attentionBlock(const ModelConfig& cfg, int l, const LayerWeights& w, LayerCache& c, const ForwardOptions& opt) {
    const int H = cfg.n_heads, L = cfg.d_head, groups = cfg.n_heads / std::max(1, cfg.n_kv_heads);
    linear(c.ln1, w.W_Q, w.b_Q, c.q);   // [pos, H*L]
    linear(c.ln1, w.W_K, w.b_K, c.k);   // [pos, H_kv*L]
    linear(c.ln1, w.W_V, w.b_V, c.v);
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
    c.attn_scores.resize(size_t(H)); // resize, not assign: a reused scratch layer keeps its buffers
    c.pattern.resize(size_t(H));
    for (int h = 0; h < H; ++h) { // allocated by this thread: one malloc arena, memory reused pass after pass
        c.attn_scores[size_t(h)].resize(S, S);
        c.pattern[size_t(h)].resize(S, S);
    }
    c.z.resize(S, Eigen::Index(H) * L);
    // one head per OpenMP thread; Eigen runs single-threaded inside the parallel region (no oversubscription)
#pragma omp parallel for schedule(dynamic)
    for (int h = 0; h < H; ++h)
        headAttention(c.q, c.k, c.v, h, L, scale, c.attn_scores[size_t(h)], c.pattern[size_t(h)], c.z);
    for (const HeadAblation& a : opt.ablations) {
        if (a.layer != l || a.head < 0 || a.head >= H) continue;
        auto zh = c.z.middleCols(a.head * L, L);
        if (a.kind == HeadAblation::Kind::Zero) zh.setZero();
        else zh.rowwise() = RowVector(zh.colwise().mean());
    }
    // concat heads then project: attn_out = z·W_O + b_O (what HF computes)
    linear(c.z, w.W_O, w.b_O, c.attn_out);
    if (!opt.cacheHeadResults) c.result.clear();
    else {
        // per-head result_h = z_h·W_O^h, W_O^h = rows h*L..(h+1)*L-1 of W_O; Σ_h result_h + b_O = attn_out
        c.result.resize(size_t(H));
        for (Matrix& r : c.result) r.resize(S, cfg.d_model); // allocated by this thread: one malloc arena
#pragma omp parallel for schedule(dynamic)
        for (int h = 0; h < H; ++h) {
            Matrix& r = c.result[size_t(h)];
            weightGemm(c.z.data() + h * L, S, L, c.z.cols(), w.W_O_head(h, L), r.data(), r.cols(), false);
        }
    }
}

/// MLP block: mlp_pre = x·W_in + b_in, mlp_post = act(mlp_pre) (× x·W_gate when gated), mlp_out = mlp_post·W_out + b_out.
void mlpBlock(const ModelConfig& cfg, const LayerWeights& w, LayerCache& c) {
    linear(c.ln2, w.W_in, w.b_in, c.mlp_pre);
    if (cfg.gatedMlp && !w.W_gate.empty()) {
        // SwiGLU (Llama): act(x·W_gate) ⊙ (x·W_in)
        Matrix gate;
        linear(c.ln2, w.W_gate, Weight{}, gate);
        applyActivation(cfg.activation, gate);
        c.mlp_post = gate.cwiseProduct(c.mlp_pre);
    } else {
        c.mlp_post = c.mlp_pre;
        applyActivation(cfg.activation, c.mlp_post);
    }
    linear(c.mlp_post, w.W_out, w.b_out, c.mlp_out);
}

} // namespace

void runBlock(const Model& model, int layer, LayerCache& c, const ForwardOptions& options) {
    const ModelConfig& cfg = model.config();
    const LayerWeights& w = model.layer(layer);
    applyNorm(cfg, c.resid_pre, w.ln1_w, w.ln1_b, c.ln1);
    attentionBlock(cfg, layer, w, c, options);
    c.resid_mid = c.resid_pre + c.attn_out;
    applyNorm(cfg, c.resid_mid, w.ln2_w, w.ln2_b, c.ln2);
    mlpBlock(cfg, w, c);
    c.resid_post = c.resid_mid + c.mlp_out;
}

Matrix applyNorm(const ModelConfig& cfg, const Matrix& x, const Weight& w, const Weight& b, Vector* scale) {
    Matrix y;
    applyNorm(cfg, x, w, b, y, scale);
    return y;
}

void applyNorm(const ModelConfig& cfg, const Matrix& x, const Weight& w, const Weight& b, Matrix& y, Vector* scale) {
    const Eigen::Index S = x.rows();
    const float eps = float(cfg.norm_eps);
    y.resize(S, x.cols());
    if (scale) scale->resize(S);
#pragma omp parallel for schedule(static) if (S >= 32)
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
}

void applyActivation(ActivationKind kind, Matrix& x) {
    // rows split across the OpenMP threads; each block is one vectorised Eigen expression
    const Eigen::Index rows = x.rows(), block = 16;
#pragma omp parallel for schedule(static) if (x.size() >= (1 << 15))
    for (Eigen::Index r0 = 0; r0 < rows; r0 += block) {
        auto a = x.middleRows(r0, std::min(block, rows - r0)).array();
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
}

ActivationCache runForward(const Model& model, std::span<const int> tokens, const ForwardOptions& options,
                           const Progress& progress) {
    return runForward(model, tokens, options, progress, ActivationCache());
}

ActivationCache runForward(const Model& model, std::span<const int> tokens, const ForwardOptions& options,
                           const Progress& progress, ActivationCache&& recycled) {
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

    // memory guard: without the per-head results, or only the residual streams, if only that fits; a clear
    // InputError if nothing fits; never a cache the OOM killer ends (cache_budget.h)
    const CachePlan plan = planCache(cfg, S, options, cacheBudgetBytes());
    if (plan.cacheHeadResults != options.cacheHeadResults || plan.residualsOnly != options.residualsOnly) {
        ForwardOptions lean = options;
        lean.cacheHeadResults = plan.cacheHeadResults;
        lean.residualsOnly = plan.residualsOnly;
        lean.recomputedLayers = plan.recomputedLayers;
        return runForward(model, tokens, lean, progress, std::move(recycled));
    }

    const GlobalWeights& g = model.globals();
    // every buffer below is resized in place: a recycled cache of the same length keeps its pages
    ActivationCache cache = std::move(recycled);
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

    LayerCache scratch; // the only layer when !cacheLayers or residualsOnly: its buffers are reused layer after layer
    cache.layers.resize(options.cacheLayers ? size_t(cfg.n_layers) : 0);
    cache.recomputer.reset(); // a recycled cache may come from a residuals-only pass
    if (options.residualsOnly) // nor may a recycled full cache keep its S²-sized buffers in this mode
        for (LayerCache& layer : cache.layers) layer = LayerCache();
    const bool keepAll = options.cacheLayers && !options.residualsOnly;
    ForwardOptions blockOptions = options;
    blockOptions.cacheHeadResults = options.cacheHeadResults && keepAll; // recomputed layers get them (layer_recompute.h)
    Matrix resid = cache.embed + cache.pos_embed;
    for (int l = 0; l < cfg.n_layers; ++l) {
        progress.step(l, total, QStringLiteral("layer %1").arg(l));
        LayerCache& c = keepAll ? cache.layers[size_t(l)] : scratch;
        c.resid_pre = resid;
        runBlock(model, l, c, blockOptions);
        if (options.cacheLayers && options.residualsOnly) keepResidualFields(c, cache.layers[size_t(l)]);
        resid = c.resid_post;
    }
    if (options.cacheLayers && options.residualsOnly)
        cache.recomputer = std::make_shared<LayerRecomputer>(model, options, plan.recomputedLayers);
    progress.step(cfg.n_layers, total, QStringLiteral("unembedding"));

    applyNorm(cfg, resid, g.ln_final_w, g.ln_final_b, cache.ln_final, &cache.ln_final_scale);
    if (options.allLogits) {
        cache.logitPositions.resize(size_t(S));
        for (int p = 0; p < S; ++p) cache.logitPositions[size_t(p)] = p;
        weightGemmTransposed(cache.ln_final, g.W_U_T, cache.logits);
    } else {
        cache.logitPositions = {S - 1};
        weightGemmTransposed(Matrix(cache.ln_final.bottomRows(1)), g.W_U_T, cache.logits);
    }
    addBias(cache.logits, g.b_U);
    progress.step(total, total, QStringLiteral("done"));
    return cache;
}

} // namespace attnscope
