#include "model/transformer/backward.h"

#include "model/core/errors.h"
#include "model/core/parallel_threshold.h"
#include "model/core/team_loop.h"
#include "model/core/weight_gemm.h"
#include "model/transformer/cache_budget.h"
#include "model/transformer/forward.h"
#include "model/transformer/rotary_embedding.h"

#include <QCoreApplication>
#include <cmath>

namespace attnscope {

/// dx [rows, W.rows] = dy [rows, W.cols] · Wᵀ: the gradient of x·W with respect to x. The weight GEMM reads W
/// transposed in place (W.t()); a block-quantized weight, whose blocks run along the rows it is stored by,
/// is decoded first (one weight at a time).
void timesTransposed(const Matrix& dy, const Weight& W, Matrix& dx) {
    if (W.type == WeightType::Blocks) {
        const Matrix w = W.toMatrix();
        dx.noalias() = dy * w.transpose();
        return;
    }
    weightGemm(dy, W.t(), Weight{}, dx);
}

/// The backward of a row-wise LayerNorm/RMSNorm y = n(x)·w + b (forward.cpp applyNorm), added into dx:
///   g = dy ⊙ w, x̂ = n(x), σ its divisor;
///   LayerNorm dx = (g − mean(g) − x̂·mean(g ⊙ x̂)) / σ   (frozen σ: (g − mean(g)) / σ)
///   RMSNorm   dx = (g − x̂·mean(g ⊙ x̂)) / σ              (frozen σ: g / σ)
/// Sums in double. x, dy: [pos, d_model].
void normBackward(const ModelConfig& cfg, const Matrix& x, const Weight& w, const Matrix& dy, bool frozenScale, Matrix& dx) {
    const Eigen::Index S = x.rows(), D = x.cols();
    const float eps = float(cfg.norm_eps);
    const RowVector weight = w.rowVector(0);
    const bool layerNorm = cfg.norm == NormKind::LayerNorm;
    teamFor<TeamSchedule::Static>(S, worthThreadsElementwise(double(S) * double(D) * 4), [&](Eigen::Index i) {
        const auto row = x.row(i).array();
        float mean = 0, divisor;
        if (layerNorm) { // the forward's float arithmetic, so σ is the forward's σ
            mean = row.mean();
            divisor = std::sqrt((row - mean).square().mean() + eps);
        } else {
            divisor = std::sqrt(row.square().mean() + eps);
        }
        double sumG = 0, sumGx = 0;
        for (Eigen::Index j = 0; j < D; ++j) {
            const double g = double(dy(i, j)) * weight(j), xh = (double(x(i, j)) - mean) / divisor;
            sumG += g;
            sumGx += g * xh;
        }
        const double meanG = layerNorm ? sumG / double(D) : 0.0, meanGx = frozenScale ? 0.0 : sumGx / double(D);
        for (Eigen::Index j = 0; j < D; ++j) {
            const double g = double(dy(i, j)) * weight(j), xh = (double(x(i, j)) - mean) / divisor;
            dx(i, j) += float((g - meanG - xh * meanGx) / divisor);
        }
    });
}

void headNormBackward(const ModelConfig& cfg, const Matrix& x, const Weight& w, const Matrix& dy, bool frozenScale, Matrix& dx) {
    const Eigen::Index L = cfg.d_head, rows = x.rows() * (x.cols() / L);
    ModelConfig rms = cfg;
    rms.norm = NormKind::RMSNorm;
    const Matrix xs = Eigen::Map<const Matrix>(x.data(), rows, L), dys = Eigen::Map<const Matrix>(dy.data(), rows, L);
    Matrix dxs = Matrix::Zero(rows, L);
    normBackward(rms, xs, w, dys, frozenScale, dxs);
    dx = Eigen::Map<const Matrix>(dxs.data(), x.rows(), x.cols());
}

namespace {

/// act′(x) of the MLP activations (forward.cpp activateBlock), in double (activationSlopes: a row in float).
double activationSlope(ActivationKind kind, double x) {
    switch (kind) {
    case ActivationKind::GeluNew: { // d/dx 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
        const double c = std::sqrt(2.0 / M_PI), t = std::tanh(c * (x + 0.044715 * x * x * x));
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
    }
    case ActivationKind::Silu: { // σ(x)·(1 + x·(1 − σ(x)))
        const double s = 1 / (1 + std::exp(-x));
        return s * (1 + x * (1 - s));
    }
    case ActivationKind::GeluExact: // Φ(x) + x·φ(x)
        return 0.5 * (1 + std::erf(x * M_SQRT1_2)) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    case ActivationKind::Relu: return x > 0 ? 1.0 : 0.0;
    }
    return 0.0;
}

/// act′ at x [n] into slope [n] (not the same memory). gelu_new and SiLU in float through the logistic σ
/// (Eigen's vectorised exp), with 0.5·(1 + tanh u) = σ(2u) and 1 − tanh²u = 4·σ(2u)·(1 − σ(2u)), which keep
/// their accuracy where tanh u → ±1: within 2·10⁻⁶ of the double formula for every x (measured on a grid of
/// 2·10⁶ points in [−60, 60], SSE2 and AVX2), 50× inside the gradient tests' 10⁻⁴. x is clamped to ±40 first
/// (a NaN stays NaN), where both slopes are 0 or 1 to float precision and no x³ overflows. GELU and ReLU
/// through activationSlope.
void activationSlopes(ActivationKind kind, const float* x, float* slope, Eigen::Index n) {
    const Eigen::Map<const Eigen::ArrayXf> in(x, n);
    Eigen::Map<Eigen::ArrayXf> out(slope, n);
    const auto clamped = in.min(40.0f).max(-40.0f);
    switch (kind) {
    case ActivationKind::GeluNew: { // σ(2u) + x·c·(1 + 3a·x²)·2·σ(2u)·(1 − σ(2u)), u = c·(x + a·x³)
        const float c = float(std::sqrt(2.0 / M_PI)), a = 0.044715f;
        out = (1.0f + (-2.0f * c * clamped * (1.0f + a * clamped.square())).exp()).inverse();
        out += 2.0f * c * clamped * (1.0f + 3.0f * a * clamped.square()) * out * (1.0f - out);
        break;
    }
    case ActivationKind::Silu: // σ(x)·(1 + x·(1 − σ(x)))
        out = (1.0f + (-clamped).exp()).inverse();
        out *= 1.0f + clamped * (1.0f - out);
        break;
    case ActivationKind::GeluExact:
    case ActivationKind::Relu:
        for (Eigen::Index j = 0; j < n; ++j) slope[j] = float(activationSlope(kind, x[j]));
        return;
    }
    if (in.hasNaN()) // the clamp may have turned a NaN into ±40
        for (Eigen::Index j = 0; j < n; ++j)
            if (std::isnan(x[j])) slope[j] = x[j];
}

/// act(x)/x with its limit act′(0) at 0: the frozen nonlinearity's coefficient (StopGradients::mlpNonlinearity).
double frozenSlope(ActivationKind kind, float x, float act) { return x != 0.0f ? double(act) / double(x) : activationSlope(kind, 0.0); }

/// ∂/∂(the block output before its post-norm) from ∂/∂(the normed output) for post-norm models (Gemma 2: attn_out =
/// ln1_post(x), mlp_out = ln2_post(x), x = pre); the gradient itself for the others.
Matrix postNormBackward(const ModelConfig& cfg, const Matrix& pre, const Weight& w, const Matrix& dOut, bool frozenScale) {
    if (!cfg.postNorms) return dOut;
    Matrix d = Matrix::Zero(pre.rows(), pre.cols());
    normBackward(cfg, pre, w, dOut, frozenScale, d);
    return d;
}

/// The MLP's backward: from d mlp_out to d ln2 (returned), filling g.mlp_post and g.mlp_pre.
Matrix mlpBackward(const ModelConfig& cfg, const LayerWeights& w, const LayerCache& c, LayerGradients& g, const BackwardOptions& options) {
    const bool frozen = options.stops.mlpNonlinearity;
    const Eigen::Index S = c.ln2.rows(), M = c.mlp_pre.cols();
    timesTransposed(postNormBackward(cfg, c.mlp_out_pre_norm, w.ln2_post_w, g.mlp_out, options.stops.normScale), w.W_out, g.mlp_post);
    g.mlp_pre.resize(S, M);
    Matrix dLn2;
    if (cfg.gatedMlp && !w.W_gate.empty()) {
        // mlp_post = act(gate) ⊙ up, up = mlp_pre, gate = ln2·W_gate (recomputed: the cache keeps only the product)
        Matrix gate;
        weightGemm(c.ln2, w.W_gate, Weight{}, gate);
        Matrix actGate = gate;
        applyActivation(cfg.activation, actGate);
        g.mlp_pre = g.mlp_post.cwiseProduct(actGate);
        Matrix dGate(S, M);
        if (!frozen)
            teamFor<TeamSchedule::Static>(S, worthThreadsElementwise(double(S) * double(M) * 8), [&](Eigen::Index i) {
                activationSlopes(cfg.activation, gate.row(i).data(), dGate.row(i).data(), M);
                dGate.row(i).array() *= g.mlp_post.row(i).array() * c.mlp_pre.row(i).array();
            });
        timesTransposed(g.mlp_pre, w.W_in, dLn2);
        if (!frozen) {
            Matrix fromGate;
            timesTransposed(dGate, w.W_gate, fromGate);
            dLn2 += fromGate;
        }
    } else {
        teamFor<TeamSchedule::Static>(S, worthThreadsElementwise(double(S) * double(M) * 8), [&](Eigen::Index i) {
            if (frozen) {
                for (Eigen::Index j = 0; j < M; ++j)
                    g.mlp_pre(i, j) = float(double(g.mlp_post(i, j)) * frozenSlope(cfg.activation, c.mlp_pre(i, j), c.mlp_post(i, j)));
                return;
            }
            activationSlopes(cfg.activation, c.mlp_pre.row(i).data(), g.mlp_pre.row(i).data(), M);
            g.mlp_pre.row(i).array() *= g.mlp_post.row(i).array();
        });
        timesTransposed(g.mlp_pre, w.W_in, dLn2);
    }
    return dLn2;
}

/// The rotary embedding's transpose: each pair rotated back by −position·θ_i of `layer` (a rotation's inverse).
void rotateBack(const ModelConfig& cfg, int layer, Eigen::Index S, Matrix& x) {
    RopeTable back = *ropeTable(cfg, layer, int(S));
    back.sin = -back.sin;
    applyRotary(cfg, back, x);
}

/// One head's attention backward. From dz_h [pos, d_head] (columns of dz): dV_h = Pᵀ·dz_h, dP = dz_h·V_hᵀ on the
/// kept cells, and unless the pattern is frozen the softmax's dS = P ⊙ (dP − rowsum(P ⊙ dP)), times the score
/// scale, into dQ_h = dS·K_h and dK_h = dSᵀ·Q_h (Q, K rotated for rotary models).
void headBackward(const ModelConfig& cfg, int layer, const LayerCache& c, int h, const Matrix& dz, bool frozenPattern,
                  Matrix* dPatternOut, Matrix& dq, Matrix& dk, Matrix& dv) {
    const int L = cfg.d_head;
    const Eigen::Index S = c.z.rows(), col = Eigen::Index(h) * L;
    const Matrix& P = c.pattern[size_t(h)];
    const auto dz_h = dz.middleCols(col, L);
    dv.middleCols(col, L).noalias() = P.transpose() * dz_h;
    Matrix dP = dz_h * c.v.middleCols(col, L).transpose();
    const int window = cfg.windowOf(layer);
    for (Eigen::Index i = 0; i < S; ++i) { // the cells the mask removed hold no pattern: no gradient there
        const Eigen::Index lo = window > 0 ? std::max<Eigen::Index>(0, i - window + 1) : 0;
        for (Eigen::Index j = 0; j < lo; ++j) dP(i, j) = 0;
        for (Eigen::Index j = i + 1; j < S; ++j) dP(i, j) = 0;
    }
    if (frozenPattern) {
        dq.middleCols(col, L).setZero();
        dk.middleCols(col, L).setZero();
    } else {
        const float scale = float(cfg.attnScale(layer));
        Matrix dS(S, S);
        for (Eigen::Index i = 0; i < S; ++i) {
            double dot = 0;
            for (Eigen::Index j = 0; j <= i; ++j) dot += double(P(i, j)) * dP(i, j);
            for (Eigen::Index j = 0; j < S; ++j) dS(i, j) = float(double(P(i, j)) * (dP(i, j) - dot)) * scale;
        }
        if (cfg.attn_logit_softcap > 0) { // s_capped = c·tanh(s/c): ds = ds_capped·(1 − (s_capped/c)²) on the kept cells
            const double cap = cfg.attn_logit_softcap;
            const Matrix& capped = c.attn_scores[size_t(h)];
            for (Eigen::Index i = 0; i < S; ++i)
                for (Eigen::Index j = 0; j <= i; ++j)
                    if (dS(i, j) != 0.0f) {
                        const double t = double(capped(i, j)) / cap;
                        dS(i, j) = float(double(dS(i, j)) * (1.0 - t * t));
                    }
        }
        const bool rotary = cfg.positions == PositionKind::Rotary;
        const Matrix& Q = rotary ? c.q_rot : c.q;
        const Matrix& K = rotary ? c.k_rot : c.k;
        dq.middleCols(col, L).noalias() = dS * K.middleCols(col, L);
        dk.middleCols(col, L).noalias() = dS.transpose() * Q.middleCols(col, L);
    }
    if (dPatternOut) *dPatternOut = std::move(dP);
}

/// For grouped-query attention, the gradient of each shared K/V head: the sum of its query heads' copies.
Matrix sumKvGroups(const ModelConfig& cfg, const Matrix& perQueryHead) {
    const int groups = cfg.groupSize(), L = cfg.d_head;
    if (groups == 1) return perQueryHead;
    Matrix out = Matrix::Zero(perQueryHead.rows(), Eigen::Index(cfg.n_heads / groups) * L);
    for (int h = 0; h < cfg.n_heads; ++h) out.middleCols((h / groups) * L, L) += perQueryHead.middleCols(h * L, L);
    return out;
}

/// The attention block's backward: from d attn_out to d ln1 (returned), filling z, pattern, q, k, v.
Matrix attentionBackward(const ModelConfig& cfg, int layer, const LayerWeights& w, const LayerCache& c, LayerGradients& g,
                         const BackwardOptions& options) {
    const int H = cfg.n_heads, L = cfg.d_head;
    const Eigen::Index S = c.z.rows();
    timesTransposed(postNormBackward(cfg, c.attn_out_pre_norm, w.ln1_post_w, g.attn_out,
                                     options.stops.normScale || options.frozenPostAttentionNorm), w.W_O, g.z);
    g.q.resize(S, Eigen::Index(H) * L);
    g.k.resize(S, Eigen::Index(H) * L);
    g.v.resize(S, Eigen::Index(H) * L);
    g.pattern.resize(options.patternGradients ? size_t(H) : 0);
    teamFor(H, worthThreads(double(H) * double(S) * double(S) * double(L) * 4), [&](int h) {
        headBackward(cfg, layer, c, h, g.z, options.stops.attentionPattern,
                     options.patternGradients ? &g.pattern[size_t(h)] : nullptr, g.q, g.k, g.v);
    });
    if (cfg.positions == PositionKind::Rotary) { // q_rot = R·q, k_rot = R·k: dq = Rᵀ·dq_rot
        rotateBack(cfg, layer, S, g.q);
        rotateBack(cfg, layer, S, g.k);
    }
    // ln1 feeds q = ln1·W_Q + b_Q and the shared K/V heads (through q_norm, k_norm when the model has them)
    Matrix dLn1, part;
    if (cfg.qkNorm) {
        Matrix dPre;
        headNormBackward(cfg, c.q_pre_norm, w.q_norm_w, g.q, options.stops.normScale, dPre);
        timesTransposed(dPre, w.W_Q, dLn1);
        headNormBackward(cfg, c.k_pre_norm, w.k_norm_w, sumKvGroups(cfg, g.k), options.stops.normScale, dPre);
        timesTransposed(dPre, w.W_K, part);
    } else {
        timesTransposed(g.q, w.W_Q, dLn1);
        timesTransposed(sumKvGroups(cfg, g.k), w.W_K, part);
    }
    dLn1 += part;
    timesTransposed(sumKvGroups(cfg, g.v), w.W_V, part);
    dLn1 += part;
    return dLn1;
}

/// Records the first hook point whose gradient is not finite. One vectorised sum of x·0, which is 0 for a finite
/// x and NaN for ±Inf or NaN (Eigen's allFinite tests element by element: 3 % of a gpt2-small backward).
void checkFinite(GradientCache& out, const Matrix& m, const QString& hook) {
    if (out.firstNonFinite.isEmpty() && std::isnan((m.array() * 0.0f).sum())) out.firstNonFinite = hook;
}

/// ∂/∂ln_final [pos, d_model] of Σ seeds: each seed's d_logits times W_U (logits = ln_final·W_U_Tᵀ + b_U), row by
/// row of W_U_T for the nonzero entries (a logit difference reads two rows), or one product for dense ones.
Matrix unembedBackward(const ModelConfig& cfg, const GlobalWeights& gw, int S, std::span<const LogitGradient> seeds) {
    Matrix d = Matrix::Zero(S, cfg.d_model);
    RowVector row(cfg.d_model);
    for (const LogitGradient& seed : seeds) {
        std::vector<Eigen::Index> nonzero;
        for (Eigen::Index v = 0; v < seed.d_logits.size(); ++v)
            if (seed.d_logits(v) != 0.0f) nonzero.push_back(v);
        if (nonzero.size() <= 256 || gw.W_U_T.type == WeightType::Blocks) {
            for (Eigen::Index v : nonzero) {
                gw.W_U_T.copyRow(v, row.data());
                d.row(seed.position) += seed.d_logits(v) * row;
            }
        } else {
            Matrix product;
            weightGemm(Matrix(seed.d_logits), gw.W_U_T, Weight{}, product);
            d.row(seed.position) += product.row(0);
        }
    }
    return d;
}

/// The seeds as gradients of the logits before the final soft-cap (Gemma 2: z_capped = c·tanh(z/c), dz = dz_capped·
/// (1 − (z_capped/c)²)), from the cache's logits, or the row recomputed from ln_final when the cache lacks it.
std::vector<LogitGradient> beforeFinalSoftcap(const Model& model, const ActivationCache& cache, std::span<const LogitGradient> seeds) {
    std::vector<LogitGradient> out(seeds.begin(), seeds.end());
    const ModelConfig& cfg = model.config();
    if (!(cfg.final_logit_softcap > 0)) return out;
    for (LogitGradient& seed : out) {
        const int row = cache.logitRow(seed.position);
        RowVector logits;
        if (row >= 0) {
            logits = cache.logits.row(row);
        } else {
            Matrix m;
            weightGemmTransposed(Matrix(cache.ln_final.row(seed.position)), model.globals().W_U_T, m);
            if (!model.globals().b_U.empty()) m.row(0) += model.globals().b_U.rowVector(0);
            applyFinalSoftcap(cfg, m);
            logits = m.row(0);
        }
        const double cap = cfg.final_logit_softcap;
        for (Eigen::Index v = 0; v < seed.d_logits.size(); ++v)
            if (seed.d_logits(v) != 0.0f) {
                const double t = double(logits(v)) / cap;
                seed.d_logits(v) = float(double(seed.d_logits(v)) * (1.0 - t * t));
            }
    }
    return out;
}

} // namespace

qint64 estimateGradientBytes(const ModelConfig& cfg, int nPositions, const BackwardOptions& options) {
    const double S = nPositions, D = cfg.d_model, H = cfg.n_heads, L = cfg.d_head, M = cfg.d_mlp;
    double perLayer = 5 * S * D + 4 * S * H * L + 2 * S * M;
    if (options.patternGradients) perLayer += H * S * S;
    const double floats = cfg.n_layers * perLayer + 2 * S * D + 2 * S * S + 2 * S * M;
    return qint64(std::min(floats * 4.0, 9.0e18));
}

GradientCache runBackward(const Model& model, const ActivationCache& cache, std::span<const LogitGradient> seeds,
                          const BackwardOptions& options, const Progress& progress) {
    const ModelConfig& cfg = model.config();
    const int S = cache.nPositions(), nLayers = cache.nLayers();
    for (const LogitGradient& seed : seeds) {
        if (seed.position < 0 || seed.position >= S)
            throw InputError(QCoreApplication::translate("backward", "The metric's position %1 is outside the prompt's %2 positions.")
                                 .arg(seed.position).arg(S));
        if (seed.d_logits.size() != cfg.d_vocab)
            throw InputError(QCoreApplication::translate("backward", "The logit gradient has %1 entries but the vocabulary %2.")
                                 .arg(seed.d_logits.size()).arg(cfg.d_vocab));
    }
    if (nLayers != cfg.n_layers)
        throw InputError(QCoreApplication::translate("backward", "The backward pass needs the forward pass's layers (a cache with "
                                                                 "%1 of %2 layers was given).").arg(nLayers).arg(cfg.n_layers));
    const qint64 need = estimateGradientBytes(cfg, S, options);
    requireWithinBudget(need, [&](const CacheBudget& budget) {
        return QCoreApplication::translate("backward", "The gradients of %1 positions need %2 but the memory budget is %3 (%4). "
                                                       "Shorten the prompt, or leave out the pattern gradients.")
            .arg(S).arg(formatBytes(need), formatBytes(budget.bytes), budget.origin);
    });

    GradientCache out;
    out.tokens = cache.tokens;
    out.stops = options.stops;
    out.layers.resize(size_t(nLayers));
    const int total = nLayers + 1;
    progress.step(0, total, QStringLiteral("unembedding"));

    const GlobalWeights& gw = model.globals();
    const Matrix& last = cache.stored(nLayers - 1).resid_post;
    const Matrix dLnFinal = unembedBackward(cfg, gw, S, beforeFinalSoftcap(model, cache, seeds));
    out.ln_final_in = Matrix::Zero(S, cfg.d_model);
    normBackward(cfg, last, gw.ln_final_w, dLnFinal, options.stops.normScale, out.ln_final_in);

    Matrix dResid = out.ln_final_in; // ∂/∂resid_post of the layer below
    for (int l = nLayers - 1; l >= 0; --l) {
        progress.step(nLayers - l, total, QStringLiteral("layer %1").arg(l));
        const std::shared_ptr<const LayerCache> held = cache.layer(l, progress);
        const LayerCache& c = *held;
        const LayerWeights& w = model.layer(l);
        LayerGradients& g = out.layers[size_t(l)];
        const QString prefix = QStringLiteral("blocks.%1.").arg(l);
        // resid_post = resid_mid + mlp_out
        g.resid_post = std::move(dResid);
        g.mlp_out = g.resid_post;
        checkFinite(out, g.resid_post, prefix + QStringLiteral("hook_resid_post"));
        const Matrix dLn2 = mlpBackward(cfg, w, c, g, options);
        checkFinite(out, g.mlp_post, prefix + QStringLiteral("mlp.hook_post"));
        checkFinite(out, g.mlp_pre, prefix + QStringLiteral("mlp.hook_pre"));
        g.resid_mid = g.resid_post;
        normBackward(cfg, c.resid_mid, w.ln2_w, dLn2, options.stops.normScale, g.resid_mid);
        checkFinite(out, g.resid_mid, prefix + QStringLiteral("hook_resid_mid"));
        // resid_mid = resid_pre + attn_out
        g.attn_out = g.resid_mid;
        const Matrix dLn1 = attentionBackward(cfg, l, w, c, g, options);
        checkFinite(out, g.z, prefix + QStringLiteral("attn.hook_z"));
        for (int h = 0; h < int(g.pattern.size()); ++h) checkFinite(out, g.pattern[size_t(h)], prefix + QStringLiteral("attn.hook_pattern"));
        checkFinite(out, g.q, prefix + QStringLiteral("attn.hook_q"));
        checkFinite(out, g.k, prefix + QStringLiteral("attn.hook_k"));
        checkFinite(out, g.v, prefix + QStringLiteral("attn.hook_v"));
        g.resid_pre = g.resid_mid;
        normBackward(cfg, c.resid_pre, w.ln1_w, dLn1, options.stops.normScale, g.resid_pre);
        checkFinite(out, g.resid_pre, prefix + QStringLiteral("hook_resid_pre"));
        dResid = g.resid_pre;
    }
    out.embed = std::move(dResid); // resid_pre 0 = embed + pos_embed
    progress.step(total, total, QStringLiteral("done"));
    return out;
}

} // namespace attnscope
