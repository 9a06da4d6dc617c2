#include "handmade_model.h"

#include <random>

namespace attnscope::test {

namespace {

Weight viewOf(const Matrix& m) {
    if (m.size() == 0) return {};
    return Weight{m.data(), m.rows(), m.cols(), m.cols()};
}

class HandmadeResolver : public WeightResolver {
public:
    explicit HandmadeResolver(HandmadeWeights w) : w_(std::move(w)) {}
    GlobalWeights globals() override {
        return {viewOf(w_.W_E), viewOf(w_.W_pos), viewOf(w_.ln_final_w), viewOf(w_.ln_final_b), viewOf(w_.W_U_T),
                viewOf(w_.b_U)};
    }
    LayerWeights layer(int l) override {
        const HandmadeLayer& x = w_.layers[size_t(l)];
        LayerWeights lw;
        lw.ln1_w = viewOf(x.ln1_w), lw.ln1_b = viewOf(x.ln1_b);
        lw.W_Q = viewOf(x.W_Q), lw.W_K = viewOf(x.W_K), lw.W_V = viewOf(x.W_V);
        lw.b_Q = viewOf(x.b_Q), lw.b_K = viewOf(x.b_K), lw.b_V = viewOf(x.b_V);
        lw.W_O = viewOf(x.W_O), lw.b_O = viewOf(x.b_O);
        lw.ln2_w = viewOf(x.ln2_w), lw.ln2_b = viewOf(x.ln2_b);
        lw.W_in = viewOf(x.W_in), lw.b_in = viewOf(x.b_in);
        lw.W_out = viewOf(x.W_out), lw.b_out = viewOf(x.b_out);
        return lw;
    }

private:
    HandmadeWeights w_;
};

/// Names ids only; enough for analyses that never tokenize text.
class IdTokenizer : public Tokenizer {
public:
    IdTokenizer(int vocab, int bos) : vocab_(vocab), bos_(bos) {}
    std::vector<int> encode(const QString&) const override { return {}; }
    QByteArray decodeBytes(std::span<const int> ids) const override {
        QByteArray out;
        for (int id : ids) out += "t" + QByteArray::number(id);
        return out;
    }
    QString displayToken(int id) const override { return QStringLiteral("t%1").arg(id); }
    QString tokenString(int id) const override { return displayToken(id); }
    std::optional<int> tokenId(const QString& s) const override {
        bool ok = false;
        const int id = s.mid(1).toInt(&ok);
        if (!s.startsWith(QLatin1Char('t')) || !ok || id < 0 || id >= vocab_) return std::nullopt;
        return id;
    }
    int vocabSize() const override { return vocab_; }
    std::optional<int> bosId() const override { return bos_ >= 0 ? std::optional<int>(bos_) : std::nullopt; }

private:
    int vocab_, bos_;
};

} // namespace

ModelConfig gpt2Config(int n_layers, int n_heads, int d_model, int n_ctx, int d_vocab) {
    ModelConfig cfg;
    cfg.modelType = QStringLiteral("gpt2");
    cfg.n_layers = n_layers;
    cfg.n_heads = cfg.n_kv_heads = n_heads;
    cfg.d_model = d_model;
    cfg.d_head = d_model / n_heads;
    cfg.d_mlp = 4 * d_model;
    cfg.n_ctx = n_ctx;
    cfg.d_vocab = d_vocab;
    return cfg;
}

HandmadeWeights zeroWeights(const ModelConfig& cfg) {
    const int D = cfg.d_model, HL = cfg.n_heads * cfg.d_head, M = cfg.d_mlp;
    HandmadeWeights w;
    w.cfg = cfg;
    w.W_E = Matrix::Zero(cfg.d_vocab, D);
    w.W_pos = Matrix::Zero(cfg.n_ctx, D);
    w.ln_final_w = Matrix::Ones(1, D);
    w.ln_final_b = Matrix::Zero(1, D);
    w.W_U_T = Matrix::Zero(cfg.d_vocab, D);
    for (int l = 0; l < cfg.n_layers; ++l) {
        HandmadeLayer x;
        x.ln1_w = x.ln2_w = Matrix::Ones(1, D);
        x.ln1_b = x.ln2_b = x.b_O = x.b_out = Matrix::Zero(1, D);
        x.W_Q = x.W_K = x.W_V = Matrix::Zero(D, HL);
        x.b_Q = x.b_K = x.b_V = Matrix::Zero(1, HL);
        x.W_O = Matrix::Zero(HL, D);
        x.W_in = Matrix::Zero(D, M);
        x.b_in = Matrix::Zero(1, M);
        x.W_out = Matrix::Zero(M, D);
        w.layers.push_back(std::move(x));
    }
    return w;
}

HandmadeWeights randomWeights(const ModelConfig& cfg, std::uint32_t seed, float stddev) {
    HandmadeWeights w = zeroWeights(cfg);
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, stddev);
    auto fill = [&](Matrix& m) {
        for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] += normal(rng);
    };
    fill(w.W_E), fill(w.W_pos), fill(w.ln_final_w), fill(w.ln_final_b), fill(w.W_U_T);
    w.b_U = Matrix::Zero(1, cfg.d_vocab);
    fill(w.b_U);
    for (HandmadeLayer& x : w.layers)
        for (Matrix* m : {&x.ln1_w, &x.ln1_b, &x.W_Q, &x.W_K, &x.W_V, &x.b_Q, &x.b_K, &x.b_V, &x.W_O, &x.b_O, &x.ln2_w,
                          &x.ln2_b, &x.W_in, &x.b_in, &x.W_out, &x.b_out})
            fill(*m);
    return w;
}

HandmadeWeights plantedInductionWeights() {
    constexpr int V = 8, P = 16, L = 40;
    constexpr int tok = 0, pos = 2 * V, prev = 2 * V + 2 * P, out = 4 * V + 2 * P, D = 6 * V + 2 * P;
    ModelConfig cfg = gpt2Config(2, 2, D, P, V);
    HandmadeWeights w = zeroWeights(cfg);
    // a signed pair: +x at base + 2i, −x at base + 2i + 1 (a row of `m`, or a column when `column`)
    auto pair = [](Matrix& m, int row, int base, int i, float x) {
        m(row, base + 2 * i) = x;
        m(row, base + 2 * i + 1) = -x;
    };
    auto pairRows = [](Matrix& m, int col, int base, int i, float x) {
        m(base + 2 * i, col) = x;
        m(base + 2 * i + 1, col) = -x;
    };
    for (int t = 0; t < V; ++t) pair(w.W_E, t, tok, t, 1.0f);
    for (int p = 0; p < P; ++p) pair(w.W_pos, p, pos, p, 1.0f);
    for (int t = 0; t < V; ++t) pair(w.W_U_T, t, out, t, 4.0f);
    const float c = 1.25f, g = 0.25f;
    HandmadeLayer& l0 = w.layers[0];
    HandmadeLayer& l1 = w.layers[1];
    for (int p = 0; p < P; ++p) pairRows(l0.W_Q, p, pos, p, c);                 // L0H0 query: position i
    for (int p = 0; p + 1 < P; ++p) pairRows(l0.W_K, p + 1, pos, p, c);         // key: position j + 1
    for (int t = 0; t < V; ++t) {
        pairRows(l0.W_V, t, tok, t, 0.5f);      // value: the token at j
        pair(l0.W_O, t, prev, t, g);            // writes it as "previous token"
        pairRows(l1.W_Q, t, tok, t, c);         // L1H0 query: the current token
        pairRows(l1.W_K, t, prev, t, c);        // key: the previous token of j
        pairRows(l1.W_V, t, tok, t, 0.5f);      // value: the token at j
        pair(l1.W_O, t, out, t, g);             // writes it where W_U reads
    }
    std::mt19937 rng(7);
    std::normal_distribution<float> noise(0.0f, 0.05f);
    for (HandmadeLayer* x : {&l0, &l1}) { // the distractor heads H1: columns (rows of W_O) L..2L−1
        for (Matrix* m : {&x->W_Q, &x->W_K, &x->W_V}) m->middleCols(L, L) = m->middleCols(L, L).unaryExpr([&](float) { return noise(rng); });
        x->W_O.middleRows(L, L) = x->W_O.middleRows(L, L).unaryExpr([&](float) { return noise(rng); });
    }
    return w;
}

std::shared_ptr<const Model> makeModel(HandmadeWeights weights) {
    const ModelConfig cfg = weights.cfg;
    ModelInfo info;
    info.name = QStringLiteral("handmade");
    info.storageDtype = QStringLiteral("F32");
    return std::make_shared<const Model>(cfg, info, std::make_unique<IdTokenizer>(cfg.d_vocab, cfg.bos_token_id),
                                         std::make_unique<HandmadeResolver>(std::move(weights)));
}

} // namespace attnscope::test
