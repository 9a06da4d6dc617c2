#include "model/formats/gguf_model.h"

#include "model/core/errors.h"
#include "model/formats/ggml_quants.h"
#include "model/formats/open_support.h"
#include "model/formats/safetensors_file.h"
#include "model/tokenizers/gpt2_bpe_tokenizer.h"
#include "model/tokenizers/lazy_tokenizer.h"
#include "model/tokenizers/spm_tokenizer.h"
#include "model/tokenizers/token_display.h"

#include <QFileInfo>
#include <climits>
#include <mutex>

namespace attnscope {

namespace {

/// Reads a GGUF file's metadata for one architecture, each error naming the file and the key.
class GgufKeys {
public:
    GgufKeys(const GgufFile& f, QString arch) : f_(f), arch_(std::move(arch)) {}

    [[noreturn]] void fail(const QString& problem) const { throw ModelError(f_.label(), problem); }
    QString key(const char* suffix) const { return arch_ + QLatin1Char('.') + QLatin1String(suffix); }

    int positive(const char* suffix) const {
        const QString k = key(suffix);
        if (!f_.contains(k)) fail(QStringLiteral("missing metadata key %1").arg(k));
        return checked(k, f_.u64(k));
    }
    int positiveOr(const char* suffix, int dflt) const {
        const QString k = key(suffix);
        return f_.contains(k) ? checked(k, f_.u64(k)) : dflt;
    }
    double numberOr(const char* suffix, double dflt) const {
        const QString k = key(suffix);
        if (!f_.contains(k)) return dflt;
        const double v = f_.f64(k);
        if (!(v > 0) || !std::isfinite(v)) fail(QStringLiteral("%1 must be a positive number (got %2)").arg(k).arg(v));
        return v;
    }

private:
    int checked(const QString& k, std::uint64_t v) const {
        if (v == 0 || v > std::uint64_t(INT_MAX / 4)) fail(QStringLiteral("%1 must be a positive size (got %2)").arg(k).arg(v));
        return int(v);
    }
    const GgufFile& f_;
    QString arch_;
};

/// llama.cpp's pre-tokenizer regexes by tokenizer.ggml.pre (src/llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_*).
QStringList splitPatternsFor(const QString& pre, const GgufFile& f) {
    static const QString llama3 = QStringLiteral(
        "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");
    static const QString qwen2 = QStringLiteral(
        "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");
    if (pre.isEmpty() || pre == QLatin1String("default") || pre == QLatin1String("gpt-2") || pre == QLatin1String("gpt2"))
        return {Gpt2BpeTokenizer::gpt2Pattern()};
    if (pre == QLatin1String("llama3") || pre == QLatin1String("llama-bpe") || pre == QLatin1String("llama-v3") ||
        pre == QLatin1String("smaug-bpe"))
        return {llama3};
    if (pre == QLatin1String("qwen2") || pre == QLatin1String("deepseek-r1-qwen")) return {qwen2};
    throw ModelError(f.label(), QStringLiteral("tokenizer.ggml.pre '%1' is not supported; supported: default, gpt-2, "
                                               "llama-bpe (llama3), qwen2").arg(pre));
}

std::optional<int> tokenIdOr(const GgufFile& f, const QString& key, int vocab) {
    if (!f.contains(key)) return std::nullopt;
    const std::uint64_t v = f.u64(key);
    if (v >= std::uint64_t(vocab))
        throw ModelError(f.label(), QStringLiteral("%1 = %2 is outside the vocabulary of %3 tokens").arg(key).arg(v).arg(vocab));
    return int(v);
}

std::vector<TokenType> tokenTypes(const GgufFile& f, size_t n) {
    std::vector<TokenType> types;
    const QString key = QStringLiteral("tokenizer.ggml.token_type");
    if (!f.contains(key)) return types;
    const std::vector<std::int64_t> raw = f.intArray(key);
    if (raw.size() != n)
        throw ModelError(f.label(), QStringLiteral("%1 has %2 entries but tokenizer.ggml.tokens has %3").arg(key).arg(raw.size()).arg(n));
    types.reserve(n);
    for (std::int64_t t : raw)
        types.push_back(t >= 1 && t <= 6 ? TokenType(t) : TokenType::Undefined);
    return types;
}

/// The weights of a GGUF model by llama.cpp's names (blk.{l}.attn_q.weight, …): matrices are ggml
/// [in, out] = rows of `in` elements, nn.Linear's [out, in], viewed transposed in place.
class GgufWeightResolver : public WeightResolver {
public:
    GgufWeightResolver(const ModelConfig& c, std::shared_ptr<const GgufFile> file, const Progress& progress, qint64& done,
                       qint64 total)
        : c_(c), file_(std::move(file)), layers_(size_t(c.n_layers)), decodedW_O_(size_t(c.n_layers)) {
        const std::int64_t D = c.d_model, V = c.d_vocab, M = c.d_mlp;
        const std::int64_t QD = std::int64_t(c.n_heads) * c.d_head, KD = std::int64_t(c.n_kv_heads) * c.d_head;
        auto step = [&](const QString& what) { progress.step(++done, total, what); };
        embed_ = require(QStringLiteral("token_embd.weight"), {D, V});
        step(QStringLiteral("Checking token_embd.weight"));
        norm_ = require(QStringLiteral("output_norm.weight"), {D});
        output_ = optional(QStringLiteral("output.weight"), {D, V});
        step(QStringLiteral("Checking the output weights"));
        for (int l = 0; l < c.n_layers; ++l) {
            const QString p = QStringLiteral("blk.%1.").arg(l);
            Refs& r = layers_[size_t(l)];
            r.ln1 = require(p + QStringLiteral("attn_norm.weight"), {D});
            r.q = require(p + QStringLiteral("attn_q.weight"), {D, QD});
            r.k = require(p + QStringLiteral("attn_k.weight"), {D, KD});
            r.v = require(p + QStringLiteral("attn_v.weight"), {D, KD});
            r.o = require(p + QStringLiteral("attn_output.weight"), {QD, D});
            r.q_b = optional(p + QStringLiteral("attn_q.bias"), {QD});
            r.k_b = optional(p + QStringLiteral("attn_k.bias"), {KD});
            r.v_b = optional(p + QStringLiteral("attn_v.bias"), {KD});
            r.o_b = optional(p + QStringLiteral("attn_output.bias"), {D});
            if (c.qkNorm) { // qwen3: llama.cpp LLM_TENSOR_ATTN_Q_NORM / ATTN_K_NORM, [d_head] as transformers stores them
                r.q_norm = require(p + QStringLiteral("attn_q_norm.weight"), {c.d_head});
                r.k_norm = require(p + QStringLiteral("attn_k_norm.weight"), {c.d_head});
            }
            if (c.postNorms) { // gemma2: llama.cpp LLM_TENSOR_ATTN_POST_NORM, LLM_TENSOR_FFN_POST_NORM
                r.ln1_post = require(p + QStringLiteral("post_attention_norm.weight"), {D});
                r.ln2_post = require(p + QStringLiteral("post_ffw_norm.weight"), {D});
            }
            r.ln2 = require(p + QStringLiteral("ffn_norm.weight"), {D});
            r.gate = require(p + QStringLiteral("ffn_gate.weight"), {D, M});
            r.up = require(p + QStringLiteral("ffn_up.weight"), {D, M});
            r.down = require(p + QStringLiteral("ffn_down.weight"), {M, D});
            step(QStringLiteral("Checking layer %1").arg(l));
        }
        for (const GgmlType t : types_) dtypes_ << ggmlTypeName(t);
    }

    GlobalWeights globals() override {
        GlobalWeights g;
        g.W_E = rowsWeight(*embed_);
        g.ln_final_w = rowsWeight(*norm_);
        g.W_U_T = output_ ? rowsWeight(*output_) : g.W_E;
        checkScales({embed_, output_});
        return g;
    }

    LayerWeights layer(int l) override {
        const Refs& r = layers_[size_t(l)];
        // a quantized layer's block scales: NaN/Inf is an error when the layer is first used, not silent
        checkScales({r.q, r.k, r.v, r.o, r.gate, r.up, r.down});
        LayerWeights w;
        w.ln1_w = rowsWeight(*r.ln1);
        w.W_Q = linear(*r.q);
        w.W_K = linear(*r.k);
        w.W_V = linear(*r.v);
        w.W_O = linear(*r.o);
        if (w.W_O.type == WeightType::Blocks && c_.d_head % w.W_O.decoder->blockElements != 0) {
            // W_O's heads are row blocks [d_head, d_model] of a matrix stored as d_model rows of n_heads·d_head: when
            // d_head is not a whole number of quantization blocks a head starts inside a block, which no view can
            // address, so the matrix is decoded to float32 once (tiny models: stories260K's d_head is 8)
            decodedW_O_[size_t(l)] = w.W_O.toMatrix();
            const Matrix& m = decodedW_O_[size_t(l)];
            w.W_O = f32Weight(m.data(), m.rows(), m.cols());
        }
        if (r.q_b) w.b_Q = rowsWeight(*r.q_b);
        if (r.k_b) w.b_K = rowsWeight(*r.k_b);
        if (r.v_b) w.b_V = rowsWeight(*r.v_b);
        if (r.o_b) w.b_O = rowsWeight(*r.o_b);
        if (r.q_norm) w.q_norm_w = rowsWeight(*r.q_norm);
        if (r.k_norm) w.k_norm_w = rowsWeight(*r.k_norm);
        w.ln2_w = rowsWeight(*r.ln2);
        if (r.ln1_post) w.ln1_post_w = rowsWeight(*r.ln1_post); // stored as 1 + w already (convert_hf_to_gguf.py Gemma2Model)
        if (r.ln2_post) w.ln2_post_w = rowsWeight(*r.ln2_post);
        w.W_gate = linear(*r.gate);
        w.W_in = linear(*r.up);
        w.W_out = linear(*r.down);
        return w;
    }

    QString storageDtype() const { return dtypes_.size() == 1 ? dtypes_.front() : dtypes_.join(QLatin1Char('+')); }

private:
    struct Refs {
        const GgufTensorInfo *ln1 = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *q_b = nullptr,
                             *k_b = nullptr, *v_b = nullptr, *o_b = nullptr, *q_norm = nullptr, *k_norm = nullptr,
                             *ln1_post = nullptr, *ln2 = nullptr, *ln2_post = nullptr, *gate = nullptr, *up = nullptr,
                             *down = nullptr;
    };

    const GgufTensorInfo* optional(const QString& name, const std::vector<std::int64_t>& ne) {
        const GgufTensorInfo* t = file_->findTensor(name);
        if (!t) return nullptr;
        if (t->shape() != ne)
            throw ModelError(file_->label(), QStringLiteral("tensor %1 has ne %2 but the metadata implies %3")
                                                 .arg(name, shapeString(t->shape()), shapeString(ne)));
        if (ne.size() == 1 && isQuantized(t->type))
            throw ModelError(file_->label(), QStringLiteral("tensor %1 is %2; vectors must be F32, F16 or BF16")
                                                 .arg(name, ggmlTypeName(t->type)));
        if (std::find(types_.begin(), types_.end(), t->type) == types_.end()) types_.push_back(t->type);
        return t;
    }
    const GgufTensorInfo* require(const QString& name, const std::vector<std::int64_t>& ne) {
        const GgufTensorInfo* t = optional(name, ne);
        if (!t) throw ModelError(file_->label(), QStringLiteral("missing tensor %1").arg(name));
        return t;
    }

    /// [rows, ne[0]] as stored (rows of ne[0] elements).
    Weight rowsWeight(const GgufTensorInfo& t) const {
        Weight w;
        w.ptr = file_->view(t).data;
        w.rows = t.rows();
        w.cols = t.rowLength();
        w.stride = t.rowLength();
        switch (t.type) {
        case GgmlType::F32: w.type = WeightType::F32; break;
        case GgmlType::F16: w.type = WeightType::F16; break;
        case GgmlType::BF16: w.type = WeightType::BF16; break;
        default:
            w.type = WeightType::Blocks;
            w.decoder = blockDecoder(t.type);
            break;
        }
        return w;
    }
    /// A matrix [in, out] of a tensor stored as out rows of in elements.
    Weight linear(const GgufTensorInfo& t) const { return rowsWeight(t).t(); }

    void checkScales(std::initializer_list<const GgufTensorInfo*> ts) const {
        for (const GgufTensorInfo* t : ts)
            if (t && isQuantized(t->type)) file_->checkScales(*t);
    }

    ModelConfig c_;
    std::shared_ptr<const GgufFile> file_;
    const GgufTensorInfo *embed_ = nullptr, *norm_ = nullptr, *output_ = nullptr;
    std::vector<Refs> layers_;
    std::vector<Matrix> decodedW_O_; ///< [layer] W_O decoded when its heads split quantization blocks, else empty
    std::vector<GgmlType> types_;
    QStringList dtypes_;
};

} // namespace

ModelConfig ggufModelConfig(const GgufFile& f) {
    const QString archKey = QStringLiteral("general.architecture");
    if (!f.contains(archKey)) throw ModelError(f.label(), QStringLiteral("missing metadata key %1").arg(archKey));
    const QString arch = f.string(archKey);
    const QStringList architectures = openableGgufArchitectures();
    if (!architectures.contains(arch))
        throw ModelError(f.label(), QStringLiteral("general.architecture '%1' is not supported; supported: %2")
                                        .arg(arch, architectures.join(QStringLiteral(", "))));
    const GgufKeys k(f, arch);
    ModelConfig c;
    const bool qwen = arch == QLatin1String("qwen2") || arch == QLatin1String("qwen3");
    c.modelType = qwen ? arch : QStringLiteral("llama");
    c.qkNorm = arch == QLatin1String("qwen3") || arch == QLatin1String("gemma3");
    c.architecture = arch;
    c.n_layers = k.positive("block_count");
    c.d_model = k.positive("embedding_length");
    c.d_mlp = k.positive("feed_forward_length");
    c.n_heads = k.positive("attention.head_count");
    c.n_kv_heads = k.positiveOr("attention.head_count_kv", c.n_heads);
    if (c.n_heads % c.n_kv_heads != 0)
        k.fail(QStringLiteral("%1 (%2) is not a multiple of %3 (%4)").arg(k.key("attention.head_count")).arg(c.n_heads)
                   .arg(k.key("attention.head_count_kv")).arg(c.n_kv_heads));
    if (!f.contains(k.key("attention.key_length")) && c.d_model % c.n_heads != 0)
        k.fail(QStringLiteral("%1 (%2) is not divisible by %3 (%4)").arg(k.key("embedding_length")).arg(c.d_model)
                   .arg(k.key("attention.head_count")).arg(c.n_heads));
    c.d_head = k.positiveOr("attention.key_length", c.d_model / c.n_heads);
    if (k.positiveOr("attention.value_length", c.d_head) != c.d_head)
        k.fail(QStringLiteral("%1 differs from %2: not supported").arg(k.key("attention.value_length"), k.key("attention.key_length")));
    if (c.d_head % 2 != 0) k.fail(QStringLiteral("head dimension %1 is odd: rotary embeddings need pairs").arg(c.d_head));
    if (k.positiveOr("rope.dimension_count", c.d_head) != c.d_head)
        k.fail(QStringLiteral("%1 (%2) is smaller than the head dimension (%3): partial rotary embeddings are not supported")
                   .arg(k.key("rope.dimension_count")).arg(k.positiveOr("rope.dimension_count", c.d_head)).arg(c.d_head));
    c.n_ctx = k.positive("context_length");
    const GgufTensorInfo* embed = f.findTensor(QStringLiteral("token_embd.weight"));
    if (!embed || embed->nDims != 2) k.fail(QStringLiteral("missing tensor token_embd.weight (2-D)"));
    if (embed->ne[1] <= 0 || embed->ne[1] > INT_MAX / 4) k.fail(QStringLiteral("token_embd.weight has %1 rows").arg(embed->ne[1]));
    c.d_vocab = int(embed->ne[1]);
    c.norm = NormKind::RMSNorm;
    c.norm_eps = k.numberOr("attention.layer_norm_rms_epsilon", 1e-5);
    c.positions = PositionKind::Rotary;
    c.rope_layout = qwen ? RopeLayout::HalfSplit : RopeLayout::Interleaved; // llama.cpp LLAMA_ROPE_TYPE_NEOX for qwen2/3
    c.rotary_base = k.numberOr("rope.freq_base", 10000.0);
    const QString scalingKey = k.key("rope.scaling.type");
    if (f.contains(scalingKey)) {
        const QString type = f.string(scalingKey);
        if (type == QLatin1String("linear")) {
            c.rope_scaling.kind = RopeScaling::Kind::Linear;
            c.rope_scaling.factor = k.numberOr("rope.scaling.factor", 1.0);
        } else if (type != QLatin1String("none")) {
            k.fail(QStringLiteral("%1 '%2' is not supported; supported: none, linear").arg(scalingKey, type));
        }
    }
    if (const GgufTensorInfo* freqs = f.findTensor(QStringLiteral("rope_freqs.weight"))) { // Llama 3.1's scaling
        if (freqs->type != GgmlType::F32 || freqs->numel != c.d_head / 2)
            k.fail(QStringLiteral("rope_freqs.weight must be %1 F32 values").arg(c.d_head / 2));
        const float* v = reinterpret_cast<const float*>(f.view(*freqs).data);
        c.rope_scaling.kind = RopeScaling::Kind::Factors;
        c.rope_scaling.freq_factors.assign(v, v + freqs->numel);
        for (double x : c.rope_scaling.freq_factors)
            if (!(x > 0) || !std::isfinite(x)) k.fail(QStringLiteral("rope_freqs.weight holds %1").arg(x));
    }
    c.sliding_window = k.positiveOr("attention.sliding_window", 0);
    c.gatedMlp = true;
    c.activation = ActivationKind::Silu;
    const bool gemma3 = arch == QLatin1String("gemma3");
    if (arch == QLatin1String("gemma2") || gemma3) { // llama.cpp llm_build_gemma2, llm_build_gemma3 (norm weights, q/k norms
        c.modelType = arch;                          // included, stored as 1 + w by the converter)
        c.postNorms = true;
        c.activation = ActivationKind::GeluNew; // gelu_pytorch_tanh
        c.rope_layout = RopeLayout::HalfSplit;  // LLAMA_ROPE_TYPE_NEOX
        c.norm_eps = k.numberOr("attention.layer_norm_rms_epsilon", 1e-6);
        c.embed_scale = double(std::sqrt(float(c.d_model))); // ggml_scale(inpL, sqrtf(n_embd))
        // llama.cpp scales q by 1/√(n_embd / n_head) for the 27Bs (Gemma 2: 46 layers, Gemma 3: 62), else 1/√head_dim,
        // and keeps no key for it
        c.query_pre_attn_scalar = c.n_layers == (gemma3 ? 62 : 46) ? double(c.d_model / c.n_heads) : double(c.d_head);
        c.attn_logit_softcap = gemma3 ? 0 : k.numberOr("attn_logit_softcapping", 50.0); // Gemma 3 has none
        c.final_logit_softcap = gemma3 ? 0 : k.numberOr("final_logit_softcapping", 30.0);
        c.sliding_window = k.positiveOr("attention.sliding_window", std::min(4096, c.n_ctx)); // n_swa's default
        // Gemma 2: il % 2 == 0 uses KQ_mask_swa; Gemma 3: set_swa_pattern(6), five sliding layers, then a global one
        const int pattern = gemma3 ? 6 : 2;
        c.windowedLayers.assign(size_t(c.n_layers), 0);
        for (int l = 0; l < c.n_layers; ++l) c.windowedLayers[size_t(l)] = (l + 1) % pattern != 0;
        if (gemma3) { // rope.freq_base (and rope.scaling) are the global layers'; the sliding ones keep 10 000, unscaled
            c.rotary_base = k.numberOr("rope.freq_base", 1e6);  // (rope_freq_base_train_swa, rope_freq_scale_train_swa 1)
            c.local_rotary_base = k.numberOr("rope.freq_base_swa", 10000.0);
        }
    }
    if (c.sliding_window > c.n_ctx)
        k.fail(QStringLiteral("%1 (%2) is larger than %3 (%4)").arg(k.key("attention.sliding_window")).arg(c.sliding_window)
                   .arg(k.key("context_length")).arg(c.n_ctx));
    c.scale_attn_weights = true;
    c.tie_word_embeddings = !f.findTensor(QStringLiteral("output.weight"));
    const QString bos = QStringLiteral("tokenizer.ggml.bos_token_id"), eos = QStringLiteral("tokenizer.ggml.eos_token_id");
    c.bos_token_id = f.contains(bos) ? int(std::min<std::uint64_t>(f.u64(bos), INT_MAX)) : -1;
    c.eos_token_id = f.contains(eos) ? int(std::min<std::uint64_t>(f.u64(eos), INT_MAX)) : -1;
    return c;
}

std::unique_ptr<Tokenizer> ggufTokenizer(const GgufFile& f) {
    const QString modelKey = QStringLiteral("tokenizer.ggml.model"), tokensKey = QStringLiteral("tokenizer.ggml.tokens");
    if (!f.contains(modelKey)) throw ModelError(f.label(), QStringLiteral("missing metadata key %1: no tokenizer in the file").arg(modelKey));
    const QString model = f.string(modelKey);
    if (!f.contains(tokensKey)) throw ModelError(f.label(), QStringLiteral("missing metadata key %1").arg(tokensKey));
    const std::vector<QByteArrayView> tokens = f.stringArray(tokensKey);
    const int n = int(tokens.size());
    auto flagOr = [&](const char* key, bool dflt) {
        const QString k = QLatin1String(key);
        return f.contains(k) ? f.boolean(k) : dflt;
    };
    if (model == QLatin1String("llama")) {
        SpmVocab v;
        v.pieces.reserve(tokens.size());
        for (QByteArrayView t : tokens) v.pieces.push_back(t.toByteArray());
        const QString scoresKey = QStringLiteral("tokenizer.ggml.scores");
        if (f.contains(scoresKey)) {
            const std::vector<float> s = f.f32Array(scoresKey);
            if (s.size() != tokens.size())
                throw ModelError(f.label(), QStringLiteral("%1 has %2 entries but %3 has %4").arg(scoresKey).arg(s.size()).arg(tokensKey).arg(n));
            v.scores = s;
        } else {
            v.scores.assign(tokens.size(), 0.0f);
        }
        v.types = tokenTypes(f, tokens.size());
        v.bos = tokenIdOr(f, QStringLiteral("tokenizer.ggml.bos_token_id"), n);
        v.eos = tokenIdOr(f, QStringLiteral("tokenizer.ggml.eos_token_id"), n);
        v.unk = tokenIdOr(f, QStringLiteral("tokenizer.ggml.unknown_token_id"), n);
        v.addBos = flagOr("tokenizer.ggml.add_bos_token", true);
        v.spacePrefix = flagOr("tokenizer.ggml.add_space_prefix", true) ? SpmVocab::SpacePrefix::Always : SpmVocab::SpacePrefix::Never;
        return SpmTokenizer::fromVocab(std::move(v), f.label());
    }
    if (model == QLatin1String("gpt2")) {
        std::vector<QString> strings;
        strings.reserve(tokens.size());
        for (QByteArrayView t : tokens) strings.push_back(utf8Text(t));
        QStringList merges;
        const QString mergesKey = QStringLiteral("tokenizer.ggml.merges");
        if (f.contains(mergesKey))
            for (QByteArrayView m : f.stringArray(mergesKey)) merges << utf8Text(m);
        ByteLevelOptions options;
        const QString preKey = QStringLiteral("tokenizer.ggml.pre");
        options.splitPatterns = splitPatternsFor(f.contains(preKey) ? f.string(preKey) : QString(), f);
        options.ignoreMerges = f.contains(preKey) && f.string(preKey).startsWith(QLatin1String("llama"));
        return Gpt2BpeTokenizer::fromTokensAndMerges(strings, merges, tokenTypes(f, tokens.size()),
                                                     tokenIdOr(f, QStringLiteral("tokenizer.ggml.bos_token_id"), n),
                                                     flagOr("tokenizer.ggml.add_bos_token", false), options, f.label());
    }
    throw ModelError(f.label(), QStringLiteral("%1 '%2' is not supported; supported: llama, gpt2").arg(modelKey, model));
}

std::shared_ptr<const Model> loadGgufModel(const QString& path, const Progress& progress) {
    const QString label = QFileInfo(path).fileName();
    progress.step(0, 1, QStringLiteral("Reading %1").arg(label));
    const std::shared_ptr<const GgufFile> file = GgufFile::open(path, label);
    const ModelConfig config = ggufModelConfig(*file);
    const qint64 total = 3 + config.n_layers + 1;
    qint64 done = 1;
    auto resolver = std::make_unique<GgufWeightResolver>(config, file, progress, done, total);
    ModelInfo info;
    info.name = QFileInfo(path).completeBaseName();
    info.path = path;
    info.weightFiles << label;
    info.fileBytes = file->fileSize();
    info.storageDtype = resolver->storageDtype();
    progress.step(++done, total, QStringLiteral("Reading the tokenizer"));
    // the vocabulary is parsed on a background thread, as for the other formats (errors at first use)
    std::unique_ptr<Tokenizer> tokenizer = std::make_unique<LazyTokenizer>([file, d_vocab = config.d_vocab] {
        std::unique_ptr<Tokenizer> t = ggufTokenizer(*file);
        if (t->vocabSize() > d_vocab)
            throw ModelError(file->label(), QStringLiteral("the tokenizer has %1 tokens but token_embd.weight has %2 rows")
                                                .arg(t->vocabSize()).arg(d_vocab));
        return t;
    });
    progress.step(total, total, QStringLiteral("Loaded %1").arg(info.name));
    return std::make_shared<const Model>(config, std::move(info), std::move(tokenizer), std::move(resolver));
}

} // namespace attnscope
