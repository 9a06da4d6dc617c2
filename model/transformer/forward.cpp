#include "model/transformer/forward.h"

#include "model/core/kernels/compute_kernels.h"
#include "model/core/parallel_threshold.h"
#include "model/core/team_loop.h"
#include "model/core/weight_gemm.h"
#include "model/transformer/cache_budget.h"
#include "model/transformer/layer_recompute.h"
#include "model/transformer/rotary_embedding.h"

#include <QCoreApplication>
#include <cmath>
#include <limits>

namespace attnscope {

namespace {

/// A [1, n] weight (bias, norm weight) as float32, whatever its stored type.
RowVector rowOf(const Weight& w) { return w.isF32View() ? RowVector(w.view().row(0)) : RowVector(w.toMatrix()); }

void addBias(Matrix& x, const Weight& b) {
    if (!b.empty()) x.rowwise() += rowOf(b);
}

/// Block b of y [rows, ld]: a strided map an epilogue works on.
using BlockMap = Eigen::Map<Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>;
BlockMap block(Matrix& y, const YBlock& b) {
    return BlockMap(y.data() + b.r0 * y.cols() + b.c0, b.r1 - b.r0, b.c1 - b.c0, Eigen::OuterStride<>(y.cols()));
}
/// A GemmTarget computing y [pos, W.cols] (resized; its buffer reused when the size is unchanged) and adding
/// the bias to each block as soon as it is final, then running `then(block)` on it.
GemmTarget linearTarget(Eigen::Index rows, const Weight& W, const Weight& b, Matrix& y,
                        std::function<void(const YBlock&)> then = {}) {
    y.resize(rows, W.cols);
    return GemmTarget{W, y.data(), y.cols(),
                      [&y, bias = b.empty() ? RowVector() : rowOf(b), then = std::move(then)](const YBlock& blk) {
                          if (bias.size() > 0) block(y, blk).rowwise() += bias.segment(blk.c0, blk.c1 - blk.c0).array();
                          if (then) then(blk);
                      }};
}

/// ys[i] = x·W_i + b_i for x [pos, in], W_i [in, out_i] (GPT-2 Conv1D), with one packing of x and one
/// parallel region for all products (weightGemmMulti), W read in place.
void linears(const Matrix& x, std::initializer_list<GemmTarget> targets) {
    weightGemmMulti(x.data(), x.rows(), x.cols(), x.cols(), std::span(targets.begin(), targets.size()));
}

/// The activation of `kind` on block b of y, in place: gelu_new and SiLU through the compute kernel
/// (compute_kernels.h), the rare others through Eigen.
void activateBlock(ActivationKind kind, Matrix& y, const YBlock& b) {
    const ComputeKernels& K = computeKernels();
    switch (kind) {
    case ActivationKind::GeluNew: // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))  (HF NewGELUActivation)
        for (Eigen::Index r = b.r0; r < b.r1; ++r) K.geluNew(y.data() + r * y.cols() + b.c0, b.c1 - b.c0);
        break;
    case ActivationKind::Silu: // x·σ(x)  (HF SiLU, Llama's act_fn)
        for (Eigen::Index r = b.r0; r < b.r1; ++r) K.silu(y.data() + r * y.cols() + b.c0, b.c1 - b.c0);
        break;
    case ActivationKind::GeluExact: {
        auto a = block(y, b);
        a = a.unaryExpr([](float v) { return 0.5f * v * (1.0f + std::erf(v * float(M_SQRT1_2))); });
        break;
    }
    case ActivationKind::Relu: {
        auto a = block(y, b);
        a = a.max(0.0f);
        break;
    }
    }
}

/// Rows [r0, r1) of the causal softmax, in place: row i of `scores` holds the unscaled scores q_i·k_j of
/// keys 0..i (what follows is ignored); they are multiplied by `scale` in place, the rest of the row is set
/// to −∞, and row i of p becomes softmax over keys 0..i, zero beyond. Equivalent to HF's
/// (q·kᵀ)·scale, masked_fill(finfo.min), softmax.
/// With a sliding window W (Mistral; 0 = none), query i keeps only keys (i − W, i]: the keys before are
/// set to −∞ (scores) and 0 (pattern) as HF's sliding-window mask does.
/// With a soft-cap c > 0 (Gemma 2's attn_logit_softcapping) the scaled scores s of the kept keys become c·tanh(s/c)
/// before the softmax (transformers eager_attention_forward: scale, then /c, tanh, ·c, then the mask).
void causalSoftmaxRows(Matrix& scores, Matrix& p, float scale, int window, float softcap, Eigen::Index r0, Eigen::Index r1) {
    const ComputeKernels& K = computeKernels();
    const Eigen::Index S = scores.cols();
    for (Eigen::Index i = r0; i < r1; ++i) {
        const Eigen::Index lo = window > 0 ? std::max<Eigen::Index>(0, i - window + 1) : 0;
        float* sRow = scores.data() + i * S;
        float* pRow = p.data() + i * S;
        for (Eigen::Index j = 0; j < lo; ++j) {
            sRow[j] = -std::numeric_limits<float>::infinity();
            pRow[j] = 0.0f;
        }
        if (softcap > 0) {
            for (Eigen::Index j = lo; j <= i; ++j) sRow[j] = softcap * std::tanh(sRow[j] * scale / softcap);
            K.causalSoftmaxRow(sRow + lo, pRow + lo, i + 1 - lo, S - lo, 1.0f);
        } else {
            K.causalSoftmaxRow(sRow + lo, pRow + lo, i + 1 - lo, S - lo, scale);
        }
    }
}

/// K_hᵀ [d_head, pos] of the head whose keys are columns [col, col + d_head) of k, into `buffer`, as the
/// weight the kernel multiplies Q_h by. Its rows are padded to an odd number of 16-float lines: at a
/// power-of-two S a row stride of S floats would put every row of a micro-panel in the same L1 set.
Weight transposedKeys(const Matrix& k, Eigen::Index col, int L, Matrix& buffer) {
    const Eigen::Index S = k.rows(), ld = ((S + 15) / 16 | 1) * 16;
    buffer.resize(L, ld);
    // in 16 × 16 tiles, each read row by row and written column by column within L1 (Eigen's transposed
    // assignment went element by element across the whole S × d_head block: 19 % of the attention at S = 128)
    constexpr Eigen::Index kTile = 16;
    const float* src = k.data() + col;
    float* dst = buffer.data();
    const Eigen::Index ldk = k.cols();
    for (Eigen::Index p0 = 0; p0 < S; p0 += kTile)
        for (Eigen::Index d0 = 0; d0 < L; d0 += kTile) {
            const Eigen::Index p1 = std::min(S, p0 + kTile), d1 = std::min<Eigen::Index>(L, d0 + kTile);
            for (Eigen::Index d = d0; d < d1; ++d)
                for (Eigen::Index p = p0; p < p1; ++p) dst[d * ld + p] = src[p * ldk + d];
        }
    return f32Weight(buffer.data(), L, S, ld);
}

/// One head's attention, computing only what the causal mask keeps: for each block of kQueryBlock
/// query rows [r0, r1), scores = Q[r0:r1)·K[0:r1)ᵀ · scale, its softmax, and z[r0:r1) = pattern[r0:r1, 0:r1)·V[0:r1).
/// About half the FLOPs of the full S×S products at long S (1024: 53%). Both products run on the calling
/// thread through weightGemm's kernel, which writes the row-major scores and z in place (Eigen's product
/// zeroed each destination block first and packed both operands: a fifth of the attention time at S = 1024).
/// Rows from `firstRow` on (0 in the forward pass): query blocks keep their place, [r0, r1) with r0 a multiple of
/// kQueryBlock, and only their rows ≥ firstRow are computed, so each row is bitwise what the full pass computes.
/// q and z point at the row of position firstRow (row strides ldq, ldz).
void headAttention(const float* q, Eigen::Index ldq, const Matrix& k, const Matrix& v, int h, int L, float scale, int window,
                   float softcap, Eigen::Index firstRow, Matrix& scores, Matrix& pattern, float* z, Eigen::Index ldz) {
    constexpr Eigen::Index kQueryBlock = 64;
    const Eigen::Index S = k.rows(), col = Eigen::Index(h) * L;
    thread_local Matrix kT; // K_hᵀ [d_head, pos]: the right-hand operand of Q·Kᵀ, read in place by the kernel
    const Weight K_T = transposedKeys(k, col, L, kT);
    const Weight V_h = f32Weight(v.data() + col, S, L, v.cols());
    for (Eigen::Index b0 = firstRow / kQueryBlock * kQueryBlock; b0 < S; b0 += kQueryBlock) {
        const Eigen::Index r0 = std::max(b0, firstRow), r1 = std::min(b0 + kQueryBlock, S), n = r1 - r0;
        weightGemm(q + (r0 - firstRow) * ldq + col, n, L, ldq, K_T.colBlock(0, r1), scores.data() + r0 * S, S, false);
        causalSoftmaxRows(scores, pattern, scale, window, softcap, r0, r1);
        weightGemm(pattern.data() + r0 * S, n, r1, S, V_h.rowBlock(0, r1), z + (r0 - firstRow) * ldz + col, ldz, false);
    }
}

/// The K/V heads of x [pos, n_kv_heads·d_head] repeated for their query heads: [pos, n_heads·d_head].
Matrix repeatKvHeads(const ModelConfig& cfg, const Matrix& x) {
    const int H = cfg.n_heads, L = cfg.d_head, groups = cfg.groupSize();
    Matrix out(x.rows(), Eigen::Index(H) * L);
    for (int h = 0; h < H; ++h) out.middleCols(h * L, L) = x.middleCols((h / groups) * L, L);
    return out;
}

/// The q/k/v hooks of layer l on the GQA-repeated q, k, v; rotary models' q_rot and k_rot are recomputed from
/// what they leave (rotating the repeated k gives each head the bits of repeating the rotated k).
void applyQkvHooks(const ModelConfig& cfg, int l, const ForwardHooks& hooks, Eigen::Index S, LayerCache& c) {
    if (hooks.q) hooks.q(l, c.q);
    if (hooks.k) hooks.k(l, c.k);
    if (hooks.v) hooks.v(l, c.v);
    if (cfg.positions == PositionKind::Rotary && (hooks.q || hooks.k)) {
        const auto table = ropeTable(cfg, l, int(S));
        c.q_rot = c.q;
        applyRotary(cfg, *table, c.q_rot);
        c.k_rot = c.k;
        applyRotary(cfg, *table, c.k_rot);
    }
}

/// Attention block of layer l: fills q, k, v (and q_rot, k_rot for rotary models), attn_scores, pattern, z,
/// result, attn_out.
void attentionBlock(const ModelConfig& cfg, int l, const LayerWeights& w, LayerCache& c, const ForwardOptions& opt) {
    const int H = cfg.n_heads, L = cfg.d_head;
    const Eigen::Index S = c.ln1.rows();
    linears(c.ln1, {linearTarget(S, w.W_Q, w.b_Q, c.q),   // [pos, H*L]
                    linearTarget(S, w.W_K, w.b_K, c.k),   // [pos, H_kv*L]
                    linearTarget(S, w.W_V, w.b_V, c.v)});
    if (cfg.qkNorm) { // Qwen 3: q_norm, k_norm per head, before rotary (k before the GQA repeat)
        c.q_pre_norm = c.q;
        c.k_pre_norm = c.k;
        applyHeadNorm(cfg, c.q, w.q_norm_w);
        applyHeadNorm(cfg, c.k, w.k_norm_w);
    } else {
        c.q_pre_norm.resize(0, 0);
        c.k_pre_norm.resize(0, 0);
    }
    const bool rotary = cfg.positions == PositionKind::Rotary;
    if (rotary) { // q, k rotated by position (hook_rot_q, hook_rot_k); k before the GQA repeat (fewer heads)
        const auto table = ropeTable(cfg, l, int(S));
        c.q_rot = c.q;
        applyRotary(cfg, *table, c.q_rot);
        c.k_rot = c.k;
        applyRotary(cfg, *table, c.k_rot);
    } else {
        c.q_rot.resize(0, 0);
        c.k_rot.resize(0, 0);
    }
    if (cfg.groupSize() > 1) { // grouped-query attention: repeat each K/V head for its query heads
        c.k = repeatKvHeads(cfg, c.k);
        c.v = repeatKvHeads(cfg, c.v);
        if (rotary) c.k_rot = repeatKvHeads(cfg, c.k_rot);
    }
    const ForwardHooks* hooks = opt.hooks.get();
    if (hooks) applyQkvHooks(cfg, l, *hooks, S, c);
    const Matrix& queries = rotary ? c.q_rot : c.q;
    const Matrix& keys = rotary ? c.k_rot : c.k;
    const float scale = float(cfg.attnScale(l));
    c.attn_scores.resize(size_t(H)); // resize, not assign: a reused scratch layer keeps its buffers
    c.pattern.resize(size_t(H));
    for (int h = 0; h < H; ++h) { // allocated by this thread: one malloc arena, memory reused pass after pass
        c.attn_scores[size_t(h)].resize(S, S);
        c.pattern[size_t(h)].resize(S, S);
    }
    c.z.resize(S, Eigen::Index(H) * L);
    // one head per OpenMP thread; Eigen runs single-threaded inside the parallel region (no oversubscription)
    teamFor(H, worthThreads(double(H) * double(S) * double(S) * double(L)), [&](int h) {
        headAttention(queries.data(), queries.cols(), keys, c.v, h, L, scale, cfg.windowOf(l), float(cfg.attn_logit_softcap), 0,
                      c.attn_scores[size_t(h)], c.pattern[size_t(h)], c.z.data(), c.z.cols());
    });
    if (hooks && hooks->pattern)
        for (int h = 0; h < H; ++h)
            if (hooks->pattern(l, h, c.pattern[size_t(h)])) // z_h = pattern·V_h from the pattern the hook left
                weightGemm(c.pattern[size_t(h)].data(), S, S, S, f32Weight(c.v.data() + h * L, S, L, c.v.cols()),
                           c.z.data() + h * L, c.z.cols(), true);
    for (const HeadAblation& a : opt.ablations) {
        if (a.layer != l || a.head < 0 || a.head >= H) continue;
        auto zh = c.z.middleCols(a.head * L, L);
        if (a.kind == HeadAblation::Kind::Zero) zh.setZero();
        else zh.rowwise() = RowVector(zh.colwise().mean());
    }
    if (hooks && hooks->z) hooks->z(l, c.z);
    // concat heads then project: attn_out = z·W_O + b_O (what HF computes); resid_mid = resid_pre + attn_out
    // block by block while the block is in cache
    c.resid_mid.resize(S, cfg.d_model);
    Vector postScale; // the post-norm's divisor per position (Gemma 2)
    if (cfg.postNorms) { // attn_out = ln1_post(z·W_O + b_O)
        linears(c.z, {linearTarget(S, w.W_O, w.b_O, c.attn_out_pre_norm)});
        applyNorm(cfg, c.attn_out_pre_norm, w.ln1_post_w, Weight{}, c.attn_out, &postScale);
        c.resid_mid = c.resid_pre + c.attn_out;
    } else {
        c.attn_out_pre_norm.resize(0, 0);
        linears(c.z, {linearTarget(S, w.W_O, w.b_O, c.attn_out, [&c](const YBlock& b) {
                    block(c.resid_mid, b) = block(c.resid_pre, b) + block(c.attn_out, b);
                })});
    }
    if (hooks && hooks->attn_out) {
        hooks->attn_out(l, c.attn_out);
        c.resid_mid = c.resid_pre + c.attn_out;
    }
    if (hooks && hooks->resid_mid) hooks->resid_mid(l, c.resid_mid);
    if (!opt.cacheHeadResults) c.result.clear();
    else {
        // per-head result_h = z_h·W_O^h, W_O^h = rows h*L..(h+1)*L-1 of W_O; Σ_h result_h + b_O = attn_out
        c.result.resize(size_t(H));
        for (Matrix& r : c.result) r.resize(S, cfg.d_model); // allocated by this thread: one malloc arena
        teamFor(H, worthThreads(double(H) * double(S) * double(L) * double(cfg.d_model)), [&](int h) {
            Matrix& r = c.result[size_t(h)];
            weightGemm(c.z.data() + h * L, S, L, c.z.cols(), w.W_O_head(h, L), r.data(), r.cols(), false);
            if (cfg.postNorms) { // through the post-norm with the whole output's divisor: Σ_h result_h = attn_out
                r.array().colwise() /= postScale.array();
                r.array().rowwise() *= rowOf(w.ln1_post_w).array();
            }
        });
    }
}

/// MLP block: mlp_pre = x·W_in + b_in, mlp_post = act(mlp_pre) (× x·W_gate when gated), mlp_out = mlp_post·W_out + b_out.
/// resid_post = resid_mid + mlp_out, each block of mlp_out's columns as soon as it is final.
void mlpBlock(const ModelConfig& cfg, int l, const LayerWeights& w, LayerCache& c, const ForwardHooks* hooks) {
    const Eigen::Index S = c.ln2.rows();
    c.mlp_post.resize(S, w.W_in.cols);
    if (cfg.gatedMlp && !w.W_gate.empty()) {
        // SwiGLU (Llama): act(x·W_gate) ⊙ (x·W_in)
        Matrix gate;
        linears(c.ln2, {linearTarget(S, w.W_in, w.b_in, c.mlp_pre),
                        linearTarget(S, w.W_gate, Weight{}, gate,
                                     [&](const YBlock& b) { activateBlock(cfg.activation, gate, b); })});
        c.mlp_post = gate.cwiseProduct(c.mlp_pre);
    } else { // mlp_post = act(mlp_pre), block by block while the block is in cache
        linears(c.ln2, {linearTarget(S, w.W_in, w.b_in, c.mlp_pre, [&](const YBlock& b) {
                    block(c.mlp_post, b) = block(c.mlp_pre, b);
                    activateBlock(cfg.activation, c.mlp_post, b);
                })});
    }
    c.resid_post.resize(S, cfg.d_model);
    if (cfg.postNorms) { // mlp_out = ln2_post(mlp_post·W_out + b_out)
        linears(c.mlp_post, {linearTarget(S, w.W_out, w.b_out, c.mlp_out_pre_norm)});
        applyNorm(cfg, c.mlp_out_pre_norm, w.ln2_post_w, Weight{}, c.mlp_out);
        c.resid_post = c.resid_mid + c.mlp_out;
    } else {
        c.mlp_out_pre_norm.resize(0, 0);
        linears(c.mlp_post, {linearTarget(S, w.W_out, w.b_out, c.mlp_out, [&c](const YBlock& b) {
                    block(c.resid_post, b) = block(c.resid_mid, b) + block(c.mlp_out, b);
                })});
    }
    if (hooks && hooks->mlp_out) {
        hooks->mlp_out(l, c.mlp_out);
        c.resid_post = c.resid_mid + c.mlp_out;
    }
    if (hooks && hooks->resid_post) hooks->resid_post(l, c.resid_post);
}

} // namespace

Matrix attentionScores(const Matrix& q, const Matrix& k, int head, int d_head) {
    const Eigen::Index col = Eigen::Index(head) * d_head;
    Matrix kT, scores(q.rows(), k.rows());
    const Weight K_T = transposedKeys(k, col, d_head, kT);
    weightGemm(q.data() + col, q.rows(), d_head, q.cols(), K_T, scores.data(), scores.cols(), true);
    return scores;
}

void headAttentionRows(const ModelConfig& cfg, int layer, const float* q, Eigen::Index ldq, const Matrix& k, const Matrix& v,
                       int head, int firstRow, Matrix& scores, Matrix& pattern, float* z, Eigen::Index ldz) {
    const Eigen::Index S = k.rows();
    if (scores.rows() != S || scores.cols() != S) scores.resize(S, S);
    if (pattern.rows() != S || pattern.cols() != S) pattern.resize(S, S);
    headAttention(q, ldq, k, v, head, cfg.d_head, float(cfg.attnScale(layer)), cfg.windowOf(layer), float(cfg.attn_logit_softcap),
                  firstRow, scores, pattern, z, ldz);
}

void runBlock(const Model& model, int layer, LayerCache& c, const ForwardOptions& options) {
    const ModelConfig& cfg = model.config();
    const LayerWeights& w = model.layer(layer);
    applyNorm(cfg, c.resid_pre, w.ln1_w, w.ln1_b, c.ln1);
    attentionBlock(cfg, layer, w, c, options); // … attn_out, resid_mid
    applyNorm(cfg, c.resid_mid, w.ln2_w, w.ln2_b, c.ln2);
    mlpBlock(cfg, layer, w, c, options.hooks.get()); // … mlp_out, resid_post
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
    teamFor<TeamSchedule::Static>(S, worthThreadsElementwise(double(S) * double(x.cols())), [&](Eigen::Index i) {
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
    });
    y.array().rowwise() *= rowOf(w).array();
    addBias(y, b);
}

Matrix postNormFactors(const ModelConfig& cfg, const Matrix& preNorm, const Weight& w) {
    Vector sigma;
    applyNorm(cfg, preNorm, w, Weight{}, &sigma);
    return (rowOf(w).replicate(preNorm.rows(), 1).array().colwise() / sigma.array()).matrix();
}

void applyFinalSoftcap(const ModelConfig& cfg, Matrix& logits) {
    if (!(cfg.final_logit_softcap > 0)) return;
    const float cap = float(cfg.final_logit_softcap);
    logits = (logits.array() / cap).tanh() * cap;
}

void applyHeadNorm(const ModelConfig& cfg, Matrix& x, const Weight& w) {
    const Eigen::Index L = cfg.d_head, n = x.cols() / L, rows = x.rows() * n;
    const float eps = float(cfg.norm_eps);
    const Eigen::Array<float, 1, Eigen::Dynamic> weight = rowOf(w).array();
    Eigen::Map<Matrix> segments(x.data(), rows, L); // row-major: segment (i, h) is row i·n + h
    teamFor<TeamSchedule::Static>(rows, worthThreadsElementwise(double(rows) * double(L)), [&](Eigen::Index r) {
        auto seg = segments.row(r).array();
        const float divisor = std::sqrt(seg.square().mean() + eps);
        seg = seg / divisor * weight;
    });
}

void applyActivation(ActivationKind kind, Matrix& x) { activateBlock(kind, x, YBlock{0, x.rows(), 0, x.cols()}); }

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
    const CachePlan plan = planCache(cfg, S, options, cacheBudget());
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
    cache.embed.resize(S, cfg.d_model);
    for (int p = 0; p < S; ++p) g.W_E.copyRow(tokens[size_t(p)], cache.embed.data() + Eigen::Index(p) * cfg.d_model);
    if (cfg.embed_scale != 1.0) cache.embed *= float(cfg.embed_scale); // Gemma: · √d_model
    if (cfg.positions == PositionKind::Learned)
        cache.pos_embed = g.W_pos.rowBlock(0, S).toMatrix();
    else
        cache.pos_embed = Matrix::Zero(S, cfg.d_model);

    LayerCache scratch; // the only layer when !cacheLayers or residualsOnly: its buffers are reused layer after layer
    const bool stopEarly = options.stopAtLayer >= 0 && options.stopAtLayer < cfg.n_layers;
    const int nRun = stopEarly ? options.stopAtLayer : cfg.n_layers;
    cache.layers.resize(options.cacheLayers ? size_t(nRun) : 0);
    cache.recomputer.reset(); // a recycled cache may come from a residuals-only pass
    if (options.residualsOnly) // nor may a recycled full cache keep its S²-sized buffers in this mode
        for (LayerCache& layer : cache.layers) layer = LayerCache();
    const bool keepAll = options.cacheLayers && !options.residualsOnly;
    ForwardOptions blockOptions = options;
    blockOptions.cacheHeadResults = options.cacheHeadResults && keepAll; // recomputed layers get them (layer_recompute.h)
    Matrix resid = cache.embed + cache.pos_embed;
    for (int l = 0; l < nRun; ++l) {
        progress.step(l, total, QStringLiteral("layer %1").arg(l));
        LayerCache& c = keepAll ? cache.layers[size_t(l)] : scratch;
        c.resid_pre = resid;
        if (options.hooks && options.hooks->resid_pre) options.hooks->resid_pre(l, c.resid_pre);
        runBlock(model, l, c, blockOptions);
        if (options.cacheLayers && options.residualsOnly) keepResidualFields(c, cache.layers[size_t(l)]);
        resid = c.resid_post;
    }
    if (options.cacheLayers && options.residualsOnly)
        cache.recomputer = std::make_shared<LayerRecomputer>(model, options, plan.recomputedLayers);
    if (stopEarly) { // no unembedding: a recycled cache's final fields are dropped, not left stale
        cache.ln_final.resize(0, 0);
        cache.ln_final_scale.resize(0);
        cache.logits.resize(0, 0);
        cache.logitPositions.clear();
        progress.step(total, total, QStringLiteral("done"));
        return cache;
    }
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
    applyFinalSoftcap(cfg, cache.logits);
    progress.step(total, total, QStringLiteral("done"));
    return cache;
}

} // namespace attnscope
