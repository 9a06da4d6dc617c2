#include "fake_model_stores.h"

#include "safetensors_writer.h"
#include "test_paths.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QCryptographicHash>
#include <QtEndian>
#include <utime.h>

namespace attnscope::test {

namespace {

template <typename T> void put(QByteArray& b, T v) {
    char bytes[sizeof(T)];
    qToLittleEndian(v, bytes);
    b.append(bytes, sizeof(T));
}
void putString(QByteArray& b, const QString& s) {
    const QByteArray u = s.toUtf8();
    put<quint64>(b, quint64(u.size()));
    b.append(u);
}
void putKeyString(QByteArray& b, const QString& key, const QString& v) {
    putString(b, key);
    put<quint32>(b, 8);
    putString(b, v);
}
void putKeyU32(QByteArray& b, const QString& key, quint32 v) {
    putString(b, key);
    put<quint32>(b, 4);
    put<quint32>(b, v);
}

/// Bytes of `numel` elements of a ggml type (ggml's block sizes).
quint64 ggmlBytes(std::uint32_t type, quint64 numel) {
    switch (type) {
    case 0: return numel * 4;
    case 1: return numel * 2;
    case 8: return numel / 32 * 34;
    case 12: return numel / 256 * 144;
    case 14: return numel / 256 * 210;
    default: qFatal("buildGguf: unsupported type %u", type);
    }
}

void mkdirs(const QString& path) {
    if (!QDir().mkpath(path)) qFatal("cannot create %s", qPrintable(path));
}

/// Stores `bytes` as a blob of an HF repository and links it from the snapshot, as huggingface_hub does.
void addHfFile(const QString& repo, const QString& snapshot, const QString& name, const QByteArray& bytes) {
    const QString sha = QString::fromLatin1(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex());
    mkdirs(repo + QStringLiteral("/blobs"));
    const QString blob = repo + QStringLiteral("/blobs/") + sha;
    if (!QFile::exists(blob)) writeFile(blob, bytes);
    const QString link = snapshot + QLatin1Char('/') + name;
    if (!QFile::link(QDir(snapshot).relativeFilePath(blob), link)) qFatal("cannot link %s", qPrintable(link));
}

void setMtime(const QString& path, const QDateTime& t) { // a folder's too, which QFile cannot open
    const utimbuf times{time_t(t.toSecsSinceEpoch()), time_t(t.toSecsSinceEpoch())};
    if (utime(QFile::encodeName(path).constData(), &times) != 0) qFatal("cannot set the time of %s", qPrintable(path));
}

} // namespace

QByteArray buildGguf(const QString& architecture, const QString& name, int fileType, int blockCount,
                     const std::vector<FakeGgufTensor>& tensors) {
    QByteArray b("GGUF");
    put<quint32>(b, 3);
    put<quint64>(b, quint64(tensors.size()));
    put<quint64>(b, 5);
    putKeyString(b, QStringLiteral("general.architecture"), architecture);
    putKeyString(b, QStringLiteral("general.name"), name);
    putKeyU32(b, QStringLiteral("general.file_type"), quint32(fileType));
    putKeyU32(b, architecture + QStringLiteral(".block_count"), quint32(blockCount));
    putString(b, QStringLiteral("tokenizer.ggml.tokens"));
    put<quint32>(b, 9); // array
    put<quint32>(b, 8); // of strings
    put<quint64>(b, 3);
    for (const char* t : {"<s>", "</s>", "hello"}) putString(b, QString::fromLatin1(t));
    quint64 offset = 0;
    std::vector<quint64> sizes;
    for (const FakeGgufTensor& t : tensors) {
        putString(b, t.name);
        put<quint32>(b, quint32(t.ne.size()));
        quint64 numel = 1;
        for (quint64 n : t.ne) {
            put<quint64>(b, n);
            numel *= n;
        }
        put<quint32>(b, t.type);
        put<quint64>(b, offset);
        sizes.push_back(ggmlBytes(t.type, numel));
        offset += (sizes.back() + 31) / 32 * 32;
    }
    b.append(QByteArray((32 - b.size() % 32) % 32, '\0'));
    b.append(QByteArray(qsizetype(offset), '\0'));
    return b;
}

FakeStores buildFakeStores(const QString& root) {
    FakeStores s;
    s.home = root + QStringLiteral("/home");
    s.hfHome = s.home + QStringLiteral("/hf");
    s.hubCache = s.hfHome + QStringLiteral("/hub");
    s.ollama = s.home + QStringLiteral("/ollama-models");
    s.lmStudio = s.home + QStringLiteral("/.lmstudio/models");

    // Hugging Face: gpt2 with two snapshots; refs/main names the one with the older mtime
    const QString gpt2 = s.hubCache + QStringLiteral("/models--gpt2");
    s.gpt2Newest = gpt2 + QStringLiteral("/snapshots/607a30d783dfa663caf39e06633721c8d4cfcd7e");
    s.gpt2Older = gpt2 + QStringLiteral("/snapshots/11c5a3d5811f50298f278a704980280950aedb10");
    for (const QString& snap : {s.gpt2Newest, s.gpt2Older}) { // empty files without ../shared/testdata
        mkdirs(snap);
        for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt"})
            addHfFile(gpt2, snap, QString::fromLatin1(f), readFile(testdata(QStringLiteral("tiny-gpt2/") + QLatin1String(f))));
    }
    mkdirs(gpt2 + QStringLiteral("/refs"));
    writeFile(gpt2 + QStringLiteral("/refs/main"), QFileInfo(s.gpt2Newest).fileName().toLatin1());
    setMtime(s.gpt2Newest, QDateTime::currentDateTime().addDays(-30));
    setMtime(s.gpt2Older, QDateTime::currentDateTime().addDays(-1));

    // Hugging Face: a Llama model stored as F16, no refs/main (newest mtime wins)
    const QString tl = s.hubCache + QStringLiteral("/models--TinyLlama--TinyLlama-1.1B-Chat-v1.0");
    s.tinyLlamaSnapshot = tl + QStringLiteral("/snapshots/fe8a4ea1ffedaf415f4da2f062534de366a451e6");
    const QString tlOld = tl + QStringLiteral("/snapshots/0000000000000000000000000000000000000000");
    mkdirs(s.tinyLlamaSnapshot);
    mkdirs(tlOld);
    const QJsonObject llamaConfig{{"model_type", "llama"}, {"torch_dtype", "float16"}, {"num_hidden_layers", 22},
                                  {"hidden_size", 8}, {"num_attention_heads", 2}, {"vocab_size", 4}};
    addHfFile(tl, s.tinyLlamaSnapshot, QStringLiteral("config.json"), QJsonDocument(llamaConfig).toJson());
    addHfFile(tl, s.tinyLlamaSnapshot, QStringLiteral("model.safetensors"),
              buildSafetensors({{QStringLiteral("model.embed_tokens.weight"), QStringLiteral("F16"), {4, 8}, QByteArray(64, '\0')},
                                {QStringLiteral("model.norm.weight"), QStringLiteral("F16"), {8}, QByteArray(16, '\0')}}));
    setMtime(tlOld, QDateTime::currentDateTime().addDays(-100));
    setMtime(s.tinyLlamaSnapshot, QDateTime::currentDateTime().addDays(-2));

    // Ollama: llama3.2:1b (a Q4_K_M llama GGUF) and a manifest whose blob is missing
    const QByteArray gguf = buildGguf(QStringLiteral("llama"), QStringLiteral("Llama 3.2 1B Instruct"), 15, 16,
                                      {{QStringLiteral("token_embd.weight"), 12, {256, 4}},
                                       {QStringLiteral("output_norm.weight"), 0, {256}},
                                       {QStringLiteral("blk.0.ffn_down.weight"), 14, {256, 2}}});
    const QString digest = QString::fromLatin1(QCryptographicHash::hash(gguf, QCryptographicHash::Sha256).toHex());
    s.ollamaBlob = s.ollama + QStringLiteral("/blobs/sha256-") + digest;
    mkdirs(s.ollama + QStringLiteral("/blobs"));
    writeFile(s.ollamaBlob, gguf);
    auto manifest = [](const QString& modelDigest) {
        const QJsonObject layerModel{{"mediaType", "application/vnd.ollama.image.model"}, {"digest", "sha256:" + modelDigest}, {"size", 1}};
        const QJsonObject layerTemplate{{"mediaType", "application/vnd.ollama.image.template"},
                                        {"digest", "sha256:" + QString(64, QLatin1Char('a'))}, {"size", 1}};
        return QJsonDocument(QJsonObject{{"schemaVersion", 2},
                                         {"mediaType", "application/vnd.docker.distribution.manifest.v2+json"},
                                         {"layers", QJsonArray{layerTemplate, layerModel}}})
            .toJson();
    };
    const QString lib = s.ollama + QStringLiteral("/manifests/registry.ollama.ai/library");
    mkdirs(lib + QStringLiteral("/llama3.2"));
    writeFile(lib + QStringLiteral("/llama3.2/1b"), manifest(digest));
    mkdirs(lib + QStringLiteral("/broken"));
    s.brokenManifest = lib + QStringLiteral("/broken/latest");
    writeFile(s.brokenManifest, manifest(QString(64, QLatin1Char('b'))));

    // LM Studio: <publisher>/<repo>/<file>.gguf
    const QString repo = s.lmStudio + QStringLiteral("/lmstudio-community/Qwen2-0.5B-Instruct-GGUF");
    mkdirs(repo);
    s.lmStudioGguf = repo + QStringLiteral("/qwen2-0_5b-instruct-q4_k_m.gguf");
    writeFile(s.lmStudioGguf, buildGguf(QStringLiteral("qwen2"), QStringLiteral("Qwen2 0.5B Instruct"), 15, 24,
                                        {{QStringLiteral("token_embd.weight"), 12, {256, 2}},
                                         {QStringLiteral("output_norm.weight"), 0, {256}}}));
    return s;
}

void useFakeStores(const FakeStores& s) {
    qputenv("HOME", s.home.toUtf8());
    qputenv("HF_HOME", s.hfHome.toUtf8());
    qputenv("OLLAMA_MODELS", s.ollama.toUtf8());
    qunsetenv("HF_HUB_CACHE");
    qunsetenv("XDG_CACHE_HOME");
}

} // namespace attnscope::test
