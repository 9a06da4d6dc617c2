#include "bench/checkpoint_writer.h"

#include "model/core/errors.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <random>
#include <vector>

namespace attnscope::bench {

namespace {

struct TensorSpec {
    QString name;
    std::vector<qint64> shape;
    enum Fill { Normal, Ones, Zeros } fill = Normal;
    qint64 count() const {
        qint64 n = 1;
        for (qint64 s : shape) n *= s;
        return n;
    }
};

std::vector<TensorSpec> gpt2Tensors(const Gpt2Shape& s) {
    const qint64 D = s.d_model, M = 4 * D;
    std::vector<TensorSpec> t;
    t.push_back({QStringLiteral("wte.weight"), {s.d_vocab, D}});
    t.push_back({QStringLiteral("wpe.weight"), {s.n_ctx, D}});
    for (int l = 0; l < s.n_layers; ++l) {
        const QString h = QStringLiteral("h.%1.").arg(l);
        t.push_back({h + QStringLiteral("ln_1.weight"), {D}, TensorSpec::Ones});
        t.push_back({h + QStringLiteral("ln_1.bias"), {D}, TensorSpec::Zeros});
        t.push_back({h + QStringLiteral("attn.c_attn.weight"), {D, 3 * D}});
        t.push_back({h + QStringLiteral("attn.c_attn.bias"), {3 * D}});
        t.push_back({h + QStringLiteral("attn.c_proj.weight"), {D, D}});
        t.push_back({h + QStringLiteral("attn.c_proj.bias"), {D}});
        t.push_back({h + QStringLiteral("ln_2.weight"), {D}, TensorSpec::Ones});
        t.push_back({h + QStringLiteral("ln_2.bias"), {D}, TensorSpec::Zeros});
        t.push_back({h + QStringLiteral("mlp.c_fc.weight"), {D, M}});
        t.push_back({h + QStringLiteral("mlp.c_fc.bias"), {M}});
        t.push_back({h + QStringLiteral("mlp.c_proj.weight"), {M, D}});
        t.push_back({h + QStringLiteral("mlp.c_proj.bias"), {D}});
    }
    t.push_back({QStringLiteral("ln_f.weight"), {D}, TensorSpec::Ones});
    t.push_back({QStringLiteral("ln_f.bias"), {D}, TensorSpec::Zeros});
    return t;
}

void fill(const TensorSpec& t, float* out, unsigned seed) {
    const qint64 n = t.count();
    if (t.fill != TensorSpec::Normal) {
        std::fill(out, out + n, t.fill == TensorSpec::Ones ? 1.0f : 0.0f);
        return;
    }
    // Chunks with their own generator, so the values do not depend on the thread count.
    const qint64 chunk = 1 << 20;
#pragma omp parallel for schedule(dynamic)
    for (qint64 c0 = 0; c0 < n; c0 += chunk) {
        std::mt19937 gen(seed ^ unsigned(qHash(t.name)) ^ unsigned(c0 / chunk * 2654435761u));
        std::normal_distribution<float> normal(0.0f, 0.02f);
        for (qint64 i = c0; i < std::min(n, c0 + chunk); ++i) out[i] = normal(gen);
    }
}

void copyFile(const QString& from, const QString& to) {
    QFile::remove(to);
    if (!QFile::copy(from, to)) throw InputError(QStringLiteral("%1: cannot copy to %2").arg(from, to));
}

} // namespace

Gpt2Shape gpt2Shape(const QString& name) {
    if (name == QLatin1String("gpt2-small") || name == QLatin1String("small")) return {QStringLiteral("gpt2-small"), 12, 12, 768};
    if (name == QLatin1String("gpt2-medium") || name == QLatin1String("medium")) return {QStringLiteral("gpt2-medium"), 24, 16, 1024};
    if (name == QLatin1String("gpt2-xl") || name == QLatin1String("xl")) return {QStringLiteral("gpt2-xl"), 48, 25, 1600};
    throw InputError(QStringLiteral("unknown model size '%1' (small, medium, xl)").arg(name));
}

void writeRandomGpt2(const Gpt2Shape& shape, const QString& dir, const QString& tokenizerDir, unsigned seed) {
    QDir().mkpath(dir);
    const QDir d(dir);

    QJsonObject config{{"model_type", "gpt2"},
                       {"architectures", QJsonArray{"GPT2LMHeadModel"}},
                       {"activation_function", "gelu_new"},
                       {"n_layer", shape.n_layers},
                       {"n_head", shape.n_heads},
                       {"n_embd", shape.d_model},
                       {"n_positions", shape.n_ctx},
                       {"n_ctx", shape.n_ctx},
                       {"n_inner", QJsonValue::Null},
                       {"vocab_size", shape.d_vocab},
                       {"layer_norm_epsilon", 1e-5},
                       {"bos_token_id", 50256},
                       {"eos_token_id", 50256},
                       {"tie_word_embeddings", true},
                       {"torch_dtype", "float32"}};
    QFile cf(d.filePath(QStringLiteral("config.json")));
    if (!cf.open(QIODevice::WriteOnly) || cf.write(QJsonDocument(config).toJson()) < 0)
        throw InputError(QStringLiteral("%1: cannot write").arg(cf.fileName()));

    copyFile(QDir(tokenizerDir).filePath(QStringLiteral("encoder.json")), d.filePath(QStringLiteral("vocab.json")));
    copyFile(QDir(tokenizerDir).filePath(QStringLiteral("vocab.bpe")), d.filePath(QStringLiteral("merges.txt")));

    // safetensors: u64 header length, JSON header {name: {dtype, shape, data_offsets}}, raw little-endian data
    const std::vector<TensorSpec> tensors = gpt2Tensors(shape);
    QJsonObject header{{"__metadata__", QJsonObject{{"format", "pt"}}}};
    qint64 offset = 0;
    for (const TensorSpec& t : tensors) {
        QJsonArray dims;
        for (qint64 s : t.shape) dims.append(s);
        const qint64 bytes = t.count() * 4;
        header[t.name] = QJsonObject{{"dtype", "F32"}, {"shape", dims}, {"data_offsets", QJsonArray{offset, offset + bytes}}};
        offset += bytes;
    }
    QByteArray json = QJsonDocument(header).toJson(QJsonDocument::Compact);
    while (json.size() % 8) json.append(' ');
    QFile wf(d.filePath(QStringLiteral("model.safetensors")));
    if (!wf.open(QIODevice::WriteOnly)) throw InputError(QStringLiteral("%1: cannot write").arg(wf.fileName()));
    const quint64 n = quint64(json.size());
    bool ok = wf.write(reinterpret_cast<const char*>(&n), 8) == 8 && wf.write(json) == json.size();
    std::vector<float> buf;
    for (const TensorSpec& t : tensors) {
        buf.resize(size_t(t.count()));
        fill(t, buf.data(), seed);
        const qint64 bytes = t.count() * 4;
        ok = ok && wf.write(reinterpret_cast<const char*>(buf.data()), bytes) == bytes;
    }
    if (!ok) throw InputError(QStringLiteral("%1: write failed (%2)").arg(wf.fileName(), wf.errorString()));
}

} // namespace attnscope::bench
