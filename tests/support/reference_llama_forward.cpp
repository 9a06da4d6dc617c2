#include "tests/support/reference_llama_forward.h"

#include <cmath>

namespace attnscope::test {

namespace {

using Mat = Eigen::MatrixXd; // column-major is fine here: every access is (row, col)

/// A [rows, cols] row-major float tensor as a float64 matrix.
Mat asMatrix(const std::vector<float>& v, int rows, int cols) {
    if (v.size() != size_t(rows) * size_t(cols)) qFatal("reference: tensor of %zu values, expected %d x %d", v.size(), rows, cols);
    Mat m(rows, cols);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) m(r, c) = double(v[size_t(r) * size_t(cols) + size_t(c)]);
    return m;
}

/// x·Wᵀ + b for nn.Linear's W [out, in]: out[p, o] = Σ_i x[p, i]·W[o, i] + b[o].
Mat linear(const Mat& x, const std::vector<float>& w, int out, const std::vector<float>& bias = {}) {
    const Mat W = asMatrix(w, out, int(x.cols()));
    Mat y(x.rows(), out);
    for (Eigen::Index p = 0; p < x.rows(); ++p)
        for (int o = 0; o < out; ++o) {
            double s = bias.empty() ? 0.0 : double(bias[size_t(o)]);
            for (Eigen::Index i = 0; i < x.cols(); ++i) s += x(p, i) * W(o, i);
            y(p, o) = s;
        }
    return y;
}

/// LlamaRMSNorm: x · (mean(x²) + eps)^(-1/2) · w, row by row.
Mat rmsNorm(const Mat& x, const std::vector<float>& w, double eps) {
    Mat y(x.rows(), x.cols());
    for (Eigen::Index p = 0; p < x.rows(); ++p) {
        double ss = 0;
        for (Eigen::Index i = 0; i < x.cols(); ++i) ss += x(p, i) * x(p, i);
        const double inv = 1.0 / std::sqrt(ss / double(x.cols()) + eps);
        for (Eigen::Index i = 0; i < x.cols(); ++i) y(p, i) = x(p, i) * inv * double(w[size_t(i)]);
    }
    return y;
}

/// Rotates every head of x [pos, heads·d_head] by position·θ_i: pairs (i, i + d/2) (HF rotate_half:
/// x·cos + rotate_half(x)·sin with cos = cat(freqs, freqs)) or (2i, 2i + 1) (run.c).
void rope(Mat& x, int dHead, const std::vector<double>& inv, bool interleaved) {
    const int half = dHead / 2;
    const Eigen::Index heads = x.cols() / dHead;
    for (Eigen::Index p = 0; p < x.rows(); ++p)
        for (Eigen::Index h = 0; h < heads; ++h)
            for (int i = 0; i < half; ++i) {
                const double angle = double(p) * inv[size_t(i)], c = std::cos(angle), s = std::sin(angle);
                const Eigen::Index a = h * dHead + (interleaved ? 2 * i : i), b = h * dHead + (interleaved ? 2 * i + 1 : i + half);
                const double x0 = x(p, a), x1 = x(p, b);
                x(p, a) = x0 * c - x1 * s;
                x(p, b) = x1 * c + x0 * s;
            }
}

/// Qwen3RMSNorm over each head of x [pos, heads·d_head] with the weight w [d_head] (transformers modeling_qwen3.py:
/// q_norm(q_proj(x).view(..., head_dim)) before the rotary embedding).
void headRmsNorm(Mat& x, int dHead, const std::vector<float>& w, double eps) {
    for (Eigen::Index h = 0; h < x.cols() / dHead; ++h) {
        const Mat seg = x.middleCols(h * dHead, dHead);
        x.middleCols(h * dHead, dHead) = rmsNorm(seg, w, eps);
    }
}

double silu(double v) { return v / (1.0 + std::exp(-v)); }
/// gelu_pytorch_tanh (Gemma 2's hidden_activation): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
double geluTanh(double v) { return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))); }

/// Gemma2RMSNorm: x · (mean(x²) + eps)^(-1/2) · (1 + w).
Mat gemmaNorm(const Mat& x, const std::vector<float>& w, double eps) {
    std::vector<float> onePlus(w);
    for (float& v : onePlus) v += 1.0f; // in float32, as the module's (1.0 + self.weight.float())
    return rmsNorm(x, onePlus, eps);
}

/// c·tanh(x/c) elementwise (Gemma 2's soft-caps); x itself without a cap.
void softcap(Mat& x, double cap) {
    if (cap > 0) x = (x.array() / cap).tanh() * cap;
}

} // namespace

std::vector<double> referenceInverseFrequencies(const LlamaSpec& s) {
    std::vector<double> inv;
    for (int i = 0; i < s.d_head / 2; ++i) inv.push_back(1.0 / std::pow(s.rope_theta, double(2 * i) / double(s.d_head)));
    if (s.llama3.factor > 0) { // transformers modeling_rope_utils._compute_llama3_parameters
        const double old = s.llama3.original_max_position_embeddings;
        const double lowWavelen = old / s.llama3.low_freq_factor, highWavelen = old / s.llama3.high_freq_factor;
        for (double& f : inv) {
            const double wavelen = 2.0 * M_PI / f;
            const double scaled = wavelen > lowWavelen ? f / s.llama3.factor : f; // inv_freq_llama
            const double smooth = (old / wavelen - s.llama3.low_freq_factor) / (s.llama3.high_freq_factor - s.llama3.low_freq_factor);
            const bool medium = !(wavelen < highWavelen) && !(wavelen > lowWavelen);
            f = medium ? (1.0 - smooth) * scaled / s.llama3.factor + smooth * scaled : scaled;
        }
    }
    return inv;
}

namespace {

/// Gemma 3's inverse frequencies of one layer (transformers Gemma3TextModel: rotary_emb_local, base
/// rope_local_base_freq and the default rope type, on sliding_attention layers; rotary_emb, base rope_theta and
/// rope_scaling, on full_attention ones; _compute_linear_scaling_rope_parameters divides inv_freq by the factor).
std::vector<double> gemma3InverseFrequencies(const LlamaSpec& s, bool sliding) {
    const double base = sliding ? s.rope_local_theta : s.rope_theta, factor = sliding ? s.local_linear_factor : s.linear_factor;
    std::vector<double> inv;
    for (int i = 0; i < s.d_head / 2; ++i)
        inv.push_back(1.0 / std::pow(base, double(2 * i) / double(s.d_head)) / (factor > 0 ? factor : 1.0));
    return inv;
}

} // namespace

Eigen::MatrixXd referenceLlamaLogits(const LlamaCheckpoint& c, const std::vector<int>& tokens, std::map<QString, Eigen::MatrixXd>* modules) {
    const LlamaSpec& s = c.spec;
    const int S = int(tokens.size()), D = s.d_model, L = s.d_head, H = s.n_heads, KV = s.n_kv_heads;
    const int group = H / KV;
    const Mat E = asMatrix(c.embed_tokens, s.d_vocab, D);
    // Gemma 2 (transformers modeling_gemma2.py): embeddings · float32(√hidden_size), (1 + w) norms, a post-norm after
    // attention and after the MLP, GeGLU (gelu_pytorch_tanh), scores · query_pre_attn_scalar^-1/2 soft-capped before the
    // mask, the window on even layers only, final logits soft-capped. Gemma 3 (modeling_gemma3.py): the same blocks without
    // soft-caps, Gemma3RMSNorm (1 + w) on each head's q and k after the projection and before RoPE (Gemma3Attention
    // q_norm, k_norm), the window on the sliding_attention layers, and each layer type's own RoPE
    const bool gemma = s.isGemma(), gemma3 = s.isGemma3();
    auto norm = [&](const Mat& in, const std::vector<float>& w) { return gemma ? gemmaNorm(in, w, s.rms_eps) : rmsNorm(in, w, s.rms_eps); };
    const double scoreScale = 1.0 / std::sqrt(gemma && s.query_pre_attn_scalar > 0 ? s.query_pre_attn_scalar : double(L));
    Mat x(S, D);
    for (int p = 0; p < S; ++p) x.row(p) = E.row(tokens[size_t(p)]);
    if (gemma) x *= double(float(std::sqrt(double(D))));
    for (size_t layer = 0; layer < c.layers.size(); ++layer) {
        const LlamaLayerTensors& w = c.layers[layer];
        const bool sliding = s.slidingLayer(int(layer));
        const int window = sliding ? s.sliding_window : 0;
        const std::vector<double> inv = gemma3 ? gemma3InverseFrequencies(s, sliding) : referenceInverseFrequencies(s);
        // attention: q, k, v projections (+ biases), RoPE on q and k, GQA (repeat_kv), softmax(q·kᵀ/√d), o_proj
        const Mat h = norm(x, w.input_layernorm);
        Mat q = linear(h, w.q_proj, H * L, w.q_bias), k = linear(h, w.k_proj, KV * L, w.k_bias);
        const Mat v = linear(h, w.v_proj, KV * L, w.v_bias);
        auto headNorm = [&](Mat& m, const std::vector<float>& g) {
            if (!gemma3) return headRmsNorm(m, L, g, s.rms_eps);
            std::vector<float> onePlus(g);
            for (float& e : onePlus) e += 1.0f; // Gemma3RMSNorm: (1.0 + self.weight.float())
            headRmsNorm(m, L, onePlus, s.rms_eps);
        };
        if (!w.q_norm.empty()) headNorm(q, w.q_norm);
        if (!w.k_norm.empty()) headNorm(k, w.k_norm);
        rope(q, L, inv, s.interleavedRope);
        rope(k, L, inv, s.interleavedRope);
        Mat z = Mat::Zero(S, H * L);
        for (int head = 0; head < H; ++head) {
            const int kvHead = head / group;
            for (int i = 0; i < S; ++i) {
                std::vector<double> score(size_t(i) + 1, -INFINITY);
                double maxScore = -INFINITY;
                for (int j = 0; j <= i; ++j) {
                    if (window > 0 && i - j >= window) continue; // outside the window
                    double d = 0;
                    for (int e = 0; e < L; ++e) d += q(i, head * L + e) * k(j, kvHead * L + e);
                    score[size_t(j)] = d * scoreScale;
                    if (s.attn_softcap > 0) score[size_t(j)] = s.attn_softcap * std::tanh(score[size_t(j)] / s.attn_softcap);
                    maxScore = std::max(maxScore, score[size_t(j)]);
                }
                double sum = 0;
                for (double& sc : score) sum += (sc = std::exp(sc - maxScore));
                for (int j = 0; j <= i; ++j)
                    for (int e = 0; e < L; ++e) z(i, head * L + e) += score[size_t(j)] / sum * v(j, kvHead * L + e);
            }
        }
        const QString name = QStringLiteral("model.layers.%1.").arg(layer);
        if (modules) (*modules)[name + QStringLiteral("self_attn.o_proj.input")] = z;
        const Mat attnOut = linear(z, w.o_proj, D, w.o_bias);
        x += gemma ? norm(attnOut, w.post_attention_layernorm) : attnOut;
        // MLP: down(silu(gate(x)) ⊙ up(x)) (Gemma 2: gelu_pytorch_tanh, pre_feedforward_layernorm, then a post-norm)
        const Mat h2 = norm(x, gemma ? w.pre_feedforward_layernorm : w.post_attention_layernorm);
        Mat g = linear(h2, w.gate_proj, s.d_mlp);
        const Mat u = linear(h2, w.up_proj, s.d_mlp);
        for (Eigen::Index p = 0; p < g.rows(); ++p)
            for (Eigen::Index i = 0; i < g.cols(); ++i) g(p, i) = (gemma ? geluTanh(g(p, i)) : silu(g(p, i))) * u(p, i);
        const Mat mlpOut = linear(g, w.down_proj, D);
        const Mat written = gemma ? norm(mlpOut, w.post_feedforward_layernorm) : mlpOut;
        x += written;
        if (modules && gemma) {
            (*modules)[name + QStringLiteral("pre_feedforward_layernorm.output")] = h2;
            (*modules)[name + QStringLiteral("post_feedforward_layernorm.output")] = written;
        }
        if (modules) (*modules)[name + QStringLiteral("output")] = x;
    }
    Mat logits = linear(norm(x, c.norm), s.tied ? c.embed_tokens : c.lm_head, s.d_vocab);
    softcap(logits, s.final_softcap);
    return logits;
}

} // namespace attnscope::test
