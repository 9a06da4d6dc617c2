#include "tests/support/llama_checkpoint.h"

#include "model/formats/gguf_file.h"
#include "tests/support/ggml_test_blocks.h"

#include <QFile>
#include <QtEndian>
#include <cmath>
#include <cstring>
#include <random>

namespace attnscope::test {

namespace {

/// Reads float32 arrays one after the other from a byte buffer.
class FloatCursor {
public:
    FloatCursor(const QByteArray& bytes, qsizetype offset) : bytes_(bytes), at_(offset) {}
    std::vector<float> take(qint64 n) {
        if (at_ + 4 * n > bytes_.size()) qFatal("llama2.c checkpoint: truncated at %lld", qlonglong(at_));
        std::vector<float> v(static_cast<size_t>(n));
        for (qint64 i = 0; i < n; ++i) v[size_t(i)] = qFromLittleEndian<float>(bytes_.constData() + at_ + 4 * i);
        at_ += 4 * n;
        return v;
    }
    void skip(qint64 n) { at_ += 4 * n; }
    qsizetype at() const { return at_; }

private:
    const QByteArray& bytes_;
    qsizetype at_;
};

float roundValue(float v, Storage s) {
    if (s == Storage::F16) return f16Value(f16Bits(v));
    if (s == Storage::BF16) {
        const quint32 bits = quint32(toBf16Bits(v)) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
    return v;
}

void roundAll(std::vector<float>& v, Storage s) {
    for (float& x : v) x = roundValue(x, s);
}

} // namespace

quint16 toBf16Bits(float v) {
    quint32 f;
    std::memcpy(&f, &v, 4);
    return quint16((f + 0x7fff + ((f >> 16) & 1)) >> 16);
}

LlamaSpec smallLlamaSpec(const char* type, int d_model, int n_heads, int n_kv_heads, int d_head, int d_mlp) {
    LlamaSpec s;
    s.modelType = QLatin1String(type);
    s.n_layers = 2;
    s.d_vocab = 512;
    s.n_ctx = 64;
    s.rms_eps = 1e-6;
    s.d_model = d_model;
    s.n_heads = n_heads;
    s.n_kv_heads = n_kv_heads;
    s.d_head = d_head;
    s.d_mlp = d_mlp;
    return s;
}

LlamaCheckpoint readLlama2cCheckpoint(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) qFatal("cannot open %s", qPrintable(path));
    const QByteArray bytes = file.readAll();
    if (bytes.size() < 28) qFatal("%s: too short", qPrintable(path));
    qint32 h[7];
    for (int i = 0; i < 7; ++i) h[i] = qFromLittleEndian<qint32>(bytes.constData() + 4 * i);
    LlamaCheckpoint c;
    LlamaSpec& s = c.spec;
    s.d_model = h[0];
    s.d_mlp = h[1];
    s.n_layers = h[2];
    s.n_heads = h[3];
    s.n_kv_heads = h[4];
    s.d_vocab = std::abs(h[5]);
    s.n_ctx = h[6];
    s.d_head = s.d_model / s.n_heads;
    s.tied = h[5] > 0;
    s.interleavedRope = true;
    const qint64 D = s.d_model, M = s.d_mlp, V = s.d_vocab, L = s.n_layers, KD = qint64(s.n_kv_heads) * s.d_head;
    FloatCursor r(bytes, 28);
    c.embed_tokens = r.take(V * D);
    c.layers.resize(size_t(L));
    // run.c memory_map_weights: each kind of array for all layers, one kind after the other
    for (auto& l : c.layers) l.input_layernorm = r.take(D);
    for (auto& l : c.layers) l.q_proj = r.take(D * D);
    for (auto& l : c.layers) l.k_proj = r.take(KD * D);
    for (auto& l : c.layers) l.v_proj = r.take(KD * D);
    for (auto& l : c.layers) l.o_proj = r.take(D * D);
    for (auto& l : c.layers) l.post_attention_layernorm = r.take(D);
    for (auto& l : c.layers) l.gate_proj = r.take(M * D); // w1
    for (auto& l : c.layers) l.down_proj = r.take(D * M); // w2
    for (auto& l : c.layers) l.up_proj = r.take(M * D);   // w3
    c.norm = r.take(D);
    r.skip(qint64(s.n_ctx) * s.d_head); // freq_cis_real and freq_cis_imag, seq_len·head_size/2 each
    if (!s.tied) c.lm_head = r.take(V * D);
    if (r.at() != bytes.size() && !s.tied) qFatal("%s: %lld bytes left over", qPrintable(path), qlonglong(bytes.size() - r.at()));
    return c;
}

LlamaCheckpoint readGgufLlama(const QString& path) {
    const auto f = GgufFile::open(path);
    auto u = [&](const char* key) { return int(f->u64(QLatin1String(key))); };
    auto tensor = [&](const QString& name) {
        const GgufTensorInfo* t = f->findTensor(name);
        if (!t) qFatal("%s: no tensor %s", qPrintable(path), qPrintable(name));
        std::vector<float> v(static_cast<size_t>(t->numel));
        f->dequantizeRows(*t, 0, t->rows(), v.data());
        return v;
    };
    LlamaCheckpoint c;
    LlamaSpec& s = c.spec;
    s.d_model = u("llama.embedding_length");
    s.d_mlp = u("llama.feed_forward_length");
    s.n_layers = u("llama.block_count");
    s.n_heads = u("llama.attention.head_count");
    s.n_kv_heads = f->contains(QStringLiteral("llama.attention.head_count_kv")) ? u("llama.attention.head_count_kv") : s.n_heads;
    s.d_head = s.d_model / s.n_heads;
    s.n_ctx = u("llama.context_length");
    s.rms_eps = f->f64(QStringLiteral("llama.attention.layer_norm_rms_epsilon"));
    if (f->contains(QStringLiteral("llama.rope.freq_base"))) s.rope_theta = f->f64(QStringLiteral("llama.rope.freq_base"));
    s.interleavedRope = true;
    c.embed_tokens = tensor(QStringLiteral("token_embd.weight"));
    s.d_vocab = int(c.embed_tokens.size() / size_t(s.d_model));
    c.norm = tensor(QStringLiteral("output_norm.weight"));
    s.tied = !f->findTensor(QStringLiteral("output.weight"));
    if (!s.tied) c.lm_head = tensor(QStringLiteral("output.weight"));
    c.layers.resize(size_t(s.n_layers));
    for (int l = 0; l < s.n_layers; ++l) {
        auto t = [&](const char* n) { return tensor(QStringLiteral("blk.%1.%2.weight").arg(l).arg(QLatin1String(n))); };
        LlamaLayerTensors& w = c.layers[size_t(l)];
        w.input_layernorm = t("attn_norm");
        w.q_proj = t("attn_q");
        w.k_proj = t("attn_k");
        w.v_proj = t("attn_v");
        w.o_proj = t("attn_output");
        w.post_attention_layernorm = t("ffn_norm");
        w.gate_proj = t("ffn_gate");
        w.up_proj = t("ffn_up");
        w.down_proj = t("ffn_down");
    }
    return c;
}

std::vector<float> permuteMetaToHf(const std::vector<float>& w, int rows, int cols, int nHeads) {
    // view(n_heads, half, 2, cols).transpose(1, 2): output [h][i][j] = input [h][j][i], i < 2, j < half
    const int headRows = rows / nHeads, half = headRows / 2;
    std::vector<float> out(w.size());
    for (int h = 0; h < nHeads; ++h)
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < half; ++j) {
                const size_t dst = size_t(h * headRows + i * half + j), src = size_t(h * headRows + 2 * j + i);
                std::copy_n(w.begin() + ptrdiff_t(src * size_t(cols)), cols, out.begin() + ptrdiff_t(dst * size_t(cols)));
            }
    return out;
}

LlamaCheckpoint toHfLayout(const LlamaCheckpoint& meta) {
    LlamaCheckpoint hf = meta;
    if (!meta.spec.interleavedRope) return hf;
    const LlamaSpec& s = meta.spec;
    const int QD = s.n_heads * s.d_head, KD = s.n_kv_heads * s.d_head;
    for (LlamaLayerTensors& l : hf.layers) {
        l.q_proj = permuteMetaToHf(l.q_proj, QD, s.d_model, s.n_heads);
        l.k_proj = permuteMetaToHf(l.k_proj, KD, s.d_model, s.n_kv_heads);
        if (!l.q_bias.empty()) l.q_bias = permuteMetaToHf(l.q_bias, QD, 1, s.n_heads);
        if (!l.k_bias.empty()) l.k_bias = permuteMetaToHf(l.k_bias, KD, 1, s.n_kv_heads);
    }
    hf.spec.interleavedRope = false;
    return hf;
}

LlamaSpec smallGemma2Spec() {
    LlamaSpec spec = smallLlamaSpec("gemma2", 32, 4, 2, 8, 48);
    spec.sliding_window = 3;
    spec.query_pre_attn_scalar = 4;
    spec.attn_softcap = 1.5;
    spec.final_softcap = 6;
    return spec;
}

LlamaSpec smallGemma3Spec(const char* type) {
    LlamaSpec spec = smallLlamaSpec(type, 32, 4, 1, 16, 48);
    spec.n_layers = 6;
    spec.sliding_window = 3;
    spec.query_pre_attn_scalar = 16;
    spec.rope_theta = 1e6;
    spec.rope_local_theta = 1e4;
    spec.linear_factor = 8;
    return spec;
}

LlamaCheckpoint roundedTo(const LlamaCheckpoint& c, Storage storage) {
    LlamaCheckpoint r = c;
    roundAll(r.embed_tokens, storage);
    roundAll(r.norm, storage);
    roundAll(r.lm_head, storage);
    for (LlamaLayerTensors& l : r.layers)
        for (std::vector<float>* v : {&l.input_layernorm, &l.q_proj, &l.k_proj, &l.v_proj, &l.q_bias, &l.k_bias, &l.v_bias,
                                      &l.o_proj, &l.o_bias, &l.q_norm, &l.k_norm, &l.post_attention_layernorm,
                                      &l.pre_feedforward_layernorm, &l.post_feedforward_layernorm, &l.gate_proj, &l.up_proj,
                                      &l.down_proj})
            roundAll(*v, storage);
    return r;
}

LlamaCheckpoint randomLlama(const LlamaSpec& spec, std::uint32_t seed, bool qkvBias, bool oBias) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto matrix = [&](int rows, int cols) {
        std::vector<float> v(static_cast<size_t>(rows) * size_t(cols));
        const float scale = 1.0f / std::sqrt(float(cols));
        for (float& x : v) x = normal(rng) * scale;
        return v;
    };
    auto gains = [&](int n) {
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = 1.0f + 0.1f * normal(rng);
        return v;
    };
    auto bias = [&](int n) {
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = 0.1f * normal(rng);
        return v;
    };
    LlamaCheckpoint c;
    c.spec = spec;
    const int D = spec.d_model, QD = spec.n_heads * spec.d_head, KD = spec.n_kv_heads * spec.d_head, M = spec.d_mlp;
    c.embed_tokens = matrix(spec.d_vocab, D);
    for (float& x : c.embed_tokens) x *= std::sqrt(float(D)); // embeddings of unit size per element
    c.layers.resize(size_t(spec.n_layers));
    for (LlamaLayerTensors& l : c.layers) {
        l.input_layernorm = gains(D);
        l.q_proj = matrix(QD, D);
        l.k_proj = matrix(KD, D);
        l.v_proj = matrix(KD, D);
        if (qkvBias) {
            l.q_bias = bias(QD);
            l.k_bias = bias(KD);
            l.v_bias = bias(KD);
        }
        l.o_proj = matrix(D, QD);
        if (oBias) l.o_bias = bias(D);
        if (spec.modelType == QLatin1String("qwen3") || spec.isGemma3()) {
            l.q_norm = gains(spec.d_head);
            l.k_norm = gains(spec.d_head);
            for (std::vector<float>* v : {&l.q_norm, &l.k_norm})
                for (float& x : *v) x = (spec.isGemma3() ? 0.0f : 1.0f) + 3.0f * (x - 1.0f); // (1 +) N(0, 0.3): gains that matter
        }
        l.post_attention_layernorm = gains(D);
        if (spec.isGemma()) { // (1 + w) norms: w around 0
            l.pre_feedforward_layernorm = gains(D);
            l.post_feedforward_layernorm = gains(D);
            for (std::vector<float>* v : {&l.input_layernorm, &l.post_attention_layernorm, &l.pre_feedforward_layernorm,
                                          &l.post_feedforward_layernorm})
                for (float& x : *v) x -= 1.0f;
        }
        l.gate_proj = matrix(M, D);
        l.up_proj = matrix(M, D);
        l.down_proj = matrix(D, M);
    }
    c.norm = gains(D);
    if (spec.isGemma())
        for (float& x : c.norm) x -= 1.0f;
    if (!spec.tied) c.lm_head = matrix(spec.d_vocab, D);
    return c;
}

} // namespace attnscope::test
