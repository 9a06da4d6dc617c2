#include "hooked_forward64.h"

#include <cmath>
#include <stdexcept>

namespace attnscope::test {

namespace {

Matrix64 dbl(const Weight& w) { return w.toMatrix().cast<double>(); }
Eigen::RowVectorXd row64(const Weight& w) { return w.empty() ? Eigen::RowVectorXd() : Eigen::RowVectorXd(dbl(w).row(0)); }

Matrix64 linear(const Matrix64& x, const Weight& W, const Weight& b) {
    Matrix64 y = x * dbl(W);
    if (!b.empty()) y.rowwise() += row64(b);
    return y;
}

double act(ActivationKind k, double x) {
    switch (k) {
    case ActivationKind::GeluNew: return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case ActivationKind::GeluExact: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case ActivationKind::Silu: return x / (1.0 + std::exp(-x));
    case ActivationKind::Relu: return x > 0 ? x : 0.0;
    }
    throw std::runtime_error("hooked_forward64: unknown activation");
}
/// act′(0): gelu_new, GELU and SiLU 1/2, ReLU 0.
double slopeAtZero(ActivationKind k) { return k == ActivationKind::Relu ? 0.0 : 0.5; }

struct Run {
    const Model& model;
    const ModelConfig& c;
    const Hooked64Options& o;

    /// The delta at `hook`, or nullptr.
    const Matrix64* deltaAt(const QString& hook) const {
        if (hook == o.hook) return &o.delta;
        for (const auto& [name, d] : o.more)
            if (name == hook) return &d;
        return nullptr;
    }

    void perturb(const QString& hook, Matrix64& x) const {
        if (const Matrix64* d = deltaAt(hook)) x += *d;
    }

    Matrix64 norm(const QString& name, const Matrix64& x, const Weight& w, const Weight& b) const {
        Matrix64 y(x.rows(), x.cols());
        Eigen::VectorXd divisors(x.rows());
        for (Eigen::Index i = 0; i < x.rows(); ++i) {
            const double mean = c.norm == NormKind::LayerNorm ? x.row(i).mean() : 0.0;
            const Eigen::RowVectorXd centred = x.row(i).array() - mean;
            divisors(i) = std::sqrt(centred.squaredNorm() / double(x.cols()) + c.norm_eps);
        }
        if (o.record) o.record->divisors[name] = divisors;
        if (o.freezeNorm || (o.freezePostAttentionNorm && name.endsWith(QLatin1String(".ln1_post"))))
            divisors = o.frozen->divisors.at(name);
        const Eigen::RowVectorXd g = row64(w), beta = row64(b);
        for (Eigen::Index i = 0; i < x.rows(); ++i) {
            const double mean = c.norm == NormKind::LayerNorm ? x.row(i).mean() : 0.0;
            y.row(i) = ((x.row(i).array() - mean) / divisors(i)).matrix().cwiseProduct(g);
            if (beta.size()) y.row(i) += beta;
        }
        return y;
    }

    /// The per-head RMSNorm of q or k (ModelConfig::qkNorm: transformers Qwen3RMSNorm over head_dim) of x [pos, n·d_head];
    /// its divisors are recorded and frozen under `name` like the other norms'.
    Matrix64 headNorm(const QString& name, const Matrix64& x, const Weight& w) const {
        const int L = c.d_head;
        const Eigen::Index n = x.cols() / L;
        Eigen::VectorXd divisors(x.rows() * n);
        for (Eigen::Index i = 0; i < x.rows(); ++i)
            for (Eigen::Index h = 0; h < n; ++h)
                divisors(i * n + h) = std::sqrt(x.row(i).segment(h * L, L).squaredNorm() / double(L) + c.norm_eps);
        if (o.record) o.record->divisors[name] = divisors;
        if (o.freezeNorm) divisors = o.frozen->divisors.at(name);
        const Eigen::RowVectorXd g = row64(w);
        Matrix64 y(x.rows(), x.cols());
        for (Eigen::Index i = 0; i < x.rows(); ++i)
            for (Eigen::Index h = 0; h < n; ++h) y.row(i).segment(h * L, L) = x.row(i).segment(h * L, L).cwiseProduct(g) / divisors(i * n + h);
        return y;
    }

    /// Rotates each head's pairs by position·θ_i, θ_i = base^(−2i/d_head) (divided by a linear scaling's factor) of
    /// layer l (Gemma 3: its sliding layers' base and scaling differ from its global ones'): pairs (i, i + d/2) or (2i, 2i + 1).
    Matrix64 rotate(const Matrix64& x, int l) const {
        const bool local = c.local_rotary_base > 0 && l < int(c.windowedLayers.size()) && c.windowedLayers[size_t(l)];
        const RopeScaling& scaling = local ? c.local_rope_scaling : c.rope_scaling;
        if (scaling.kind != RopeScaling::Kind::None && scaling.kind != RopeScaling::Kind::Linear)
            throw std::runtime_error("hooked_forward64: no rope scaling but linear");
        const double base = local ? c.local_rotary_base : c.rotary_base;
        const double factor = scaling.kind == RopeScaling::Kind::Linear ? scaling.factor : 1.0;
        const int L = c.d_head, half = L / 2;
        Matrix64 y = x;
        for (Eigen::Index p = 0; p < x.rows(); ++p)
            for (Eigen::Index h0 = 0; h0 < x.cols(); h0 += L)
                for (int i = 0; i < half; ++i) {
                    const double a = double(p) * std::pow(base, -2.0 * i / L) / factor;
                    const Eigen::Index i0 = h0 + (c.rope_layout == RopeLayout::Interleaved ? 2 * i : i);
                    const Eigen::Index i1 = h0 + (c.rope_layout == RopeLayout::Interleaved ? 2 * i + 1 : i + half);
                    y(p, i0) = x(p, i0) * std::cos(a) - x(p, i1) * std::sin(a);
                    y(p, i1) = x(p, i1) * std::cos(a) + x(p, i0) * std::sin(a);
                }
        return y;
    }

    Matrix64 repeatKv(const Matrix64& x) const {
        const int L = c.d_head, groups = c.n_heads / c.n_kv_heads;
        Matrix64 out(x.rows(), Eigen::Index(c.n_heads) * L);
        for (int h = 0; h < c.n_heads; ++h) out.middleCols(h * L, L) = x.middleCols((h / groups) * L, L);
        return out;
    }

    /// x: resid_pre, a: ln1(x). A head whose q, k or v input is perturbed reads its projection of ln1(x + delta).
    Matrix64 attention(int l, const LayerWeights& w, const Matrix64& x, const Matrix64& a) const {
        const QString p = QStringLiteral("blocks.%1.attn.").arg(l);
        const Eigen::Index S = a.rows();
        const int H = c.n_heads, L = c.d_head;
        // q = q_norm(ln1·W_Q + b_Q) when the model has q/k norms (Qwen 3), else the projection; k likewise
        auto queries = [&](const Matrix64& in) {
            const Matrix64 y = linear(in, w.W_Q, w.b_Q);
            return c.qkNorm ? headNorm(p + "q_norm", y, w.q_norm_w) : y;
        };
        auto keys = [&](const Matrix64& in) {
            const Matrix64 y = linear(in, w.W_K, w.b_K);
            return c.qkNorm ? headNorm(p + "k_norm", y, w.k_norm_w) : y;
        };
        Matrix64 q = queries(a), k = repeatKv(keys(a)), v = repeatKv(linear(a, w.W_V, w.b_V));
        for (int h = 0; h < H; ++h)
            for (const char* name : {"q", "k", "v"}) {
                const Matrix64* d = deltaAt(QStringLiteral("blocks.%1.hook_%2_input.%3").arg(l).arg(QLatin1String(name)).arg(h));
                if (!d) continue;
                const Matrix64 a2 = norm(QStringLiteral("blocks.%1.ln1").arg(l), x + *d, w.ln1_w, w.ln1_b);
                const int kv = c.kvHeadOf(h);
                if (name[0] == 'q') q.middleCols(h * L, L) = queries(a2).middleCols(h * L, L);
                else if (name[0] == 'k') k.middleCols(h * L, L) = keys(a2).middleCols(kv * L, L);
                else v.middleCols(h * L, L) = linear(a2, w.W_V, w.b_V).middleCols(kv * L, L);
            }
        perturb(p + "hook_q", q);
        perturb(p + "hook_k", k);
        perturb(p + "hook_v", v);
        if (c.positions == PositionKind::Rotary) {
            q = rotate(q, l);
            k = rotate(k, l);
        }
        const double scale = c.attnScale(l);
        const int window = c.windowOf(l);
        Matrix64 z = Matrix64::Zero(S, Eigen::Index(H) * L);
        std::vector<Matrix64> patterns;
        for (int h = 0; h < H; ++h) {
            Matrix64 P = Matrix64::Zero(S, S);
            for (Eigen::Index i = 0; i < S; ++i) {
                const Eigen::Index lo = window > 0 ? std::max<Eigen::Index>(0, i - window + 1) : 0;
                double m = -INFINITY;
                for (Eigen::Index j = lo; j <= i; ++j) {
                    P(i, j) = q.row(i).segment(h * L, L).dot(k.row(j).segment(h * L, L)) * scale;
                    if (c.attn_logit_softcap > 0) P(i, j) = c.attn_logit_softcap * std::tanh(P(i, j) / c.attn_logit_softcap);
                    m = std::max(m, P(i, j));
                }
                double sum = 0;
                for (Eigen::Index j = lo; j <= i; ++j) sum += (P(i, j) = std::exp(P(i, j) - m));
                for (Eigen::Index j = lo; j <= i; ++j) P(i, j) /= sum;
            }
            patterns.push_back(P);
            if (o.freezePattern) P = o.frozen->patterns.at(l)[size_t(h)];
            Matrix64 d = Matrix64::Zero(S, S);
            if (o.hook == p + QStringLiteral("hook_pattern.%1").arg(h)) d = o.delta;
            for (Eigen::Index i = 0; i < S; ++i) // masked cells stay 0
                for (Eigen::Index j = window > 0 ? std::max<Eigen::Index>(0, i - window + 1) : 0; j <= i; ++j)
                    P(i, j) += d(i, j);
            z.middleCols(h * L, L) = P * v.middleCols(h * L, L);
        }
        if (o.record) o.record->patterns[l] = patterns;
        perturb(p + "hook_z", z);
        return linear(z, w.W_O, w.b_O);
    }

    Matrix64 mlp(int l, const LayerWeights& w, const Matrix64& a) const {
        const QString p = QStringLiteral("blocks.%1.mlp.").arg(l);
        Matrix64 pre = linear(a, w.W_in, w.b_in);
        perturb(p + "hook_pre", pre);
        Matrix64 post(pre.rows(), pre.cols()), factor(pre.rows(), pre.cols());
        if (c.gatedMlp && !w.W_gate.empty()) {
            const Matrix64 gate = linear(a, w.W_gate, Weight{});
            for (Eigen::Index i = 0; i < pre.size(); ++i) factor(i) = act(c.activation, gate(i));
            if (o.record) o.record->mlpFactors[l] = factor;
            if (o.freezeMlp) factor = o.frozen->mlpFactors.at(l);
            post = factor.cwiseProduct(pre);
        } else {
            for (Eigen::Index i = 0; i < pre.size(); ++i)
                factor(i) = pre(i) != 0.0 ? act(c.activation, pre(i)) / pre(i) : slopeAtZero(c.activation);
            if (o.record) o.record->mlpFactors[l] = factor;
            if (o.freezeMlp) factor = o.frozen->mlpFactors.at(l);
            post = factor.cwiseProduct(pre);
        }
        perturb(p + "hook_post", post);
        return linear(post, w.W_out, w.b_out);
    }
};

} // namespace

Matrix64 hookedLogits64(const Model& model, const std::vector<int>& tokens, const Hooked64Options& o) {
    const ModelConfig& c = model.config();
    if ((o.freezeNorm || o.freezePostAttentionNorm || o.freezePattern || o.freezeMlp) && !o.frozen)
        throw std::runtime_error("hooked_forward64: freezing needs the base run's values");
    const Run run{model, c, o};
    const GlobalWeights& g = model.globals();
    const Eigen::Index S = Eigen::Index(tokens.size());
    Matrix64 x(S, c.d_model);
    for (Eigen::Index p = 0; p < S; ++p) x.row(p) = g.W_E.rowVector(tokens[size_t(p)]).cast<double>() * c.embed_scale;
    run.perturb(QStringLiteral("hook_embed"), x);
    if (c.positions == PositionKind::Learned)
        for (Eigen::Index p = 0; p < S; ++p) x.row(p) += g.W_pos.rowVector(p).cast<double>();
    for (int l = 0; l < c.n_layers; ++l) {
        const LayerWeights& w = model.layer(l);
        const QString p = QStringLiteral("blocks.%1.").arg(l);
        run.perturb(p + "hook_resid_pre", x);
        Matrix64 attnOut = run.attention(l, w, x, run.norm(p + "ln1", x, w.ln1_w, w.ln1_b));
        if (c.postNorms) attnOut = run.norm(p + "ln1_post", attnOut, w.ln1_post_w, Weight{}); // Gemma 2
        run.perturb(p + "hook_attn_out", attnOut);
        x += attnOut;
        run.perturb(p + "hook_resid_mid", x);
        Matrix64 mlpIn = x;
        run.perturb(p + "hook_mlp_in", mlpIn);
        Matrix64 mlpOut = run.mlp(l, w, run.norm(p + "ln2", mlpIn, w.ln2_w, w.ln2_b));
        if (c.postNorms) mlpOut = run.norm(p + "ln2_post", mlpOut, w.ln2_post_w, Weight{});
        run.perturb(p + "hook_mlp_out", mlpOut);
        x += mlpOut;
        run.perturb(p + "hook_resid_post", x);
    }
    Matrix64 logits = run.norm(QStringLiteral("ln_final"), x, g.ln_final_w, g.ln_final_b) * dbl(g.W_U_T).transpose();
    if (!g.b_U.empty()) logits.rowwise() += row64(g.b_U);
    if (c.final_logit_softcap > 0) logits = (logits.array() / c.final_logit_softcap).tanh() * c.final_logit_softcap;
    return logits;
}

} // namespace attnscope::test
