#include "model/formats/model_probe.h"

#include "model/core/errors.h"
#include "model/formats/gguf_probe.h"
#include "model/formats/json_file.h"
#include "model/formats/safetensors_file.h"
#include "model/formats/sharded_index.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonObject>
#include <QSet>
#include <QtEndian>
#include <algorithm>

namespace attnscope {

namespace {

const QString kConfig = QStringLiteral("config.json");
const QString kSingle = QStringLiteral("model.safetensors");
const QString kIndex = QStringLiteral("model.safetensors.index.json");

/// Element types and counts of one or more safetensors headers.
struct TensorStats {
    QSet<QString> dtypes;
    std::int64_t elements = 0;
    std::int64_t bytes = 0;
};

/// Reads and validates a safetensors header (not the data) and adds it to `stats`.
void addSafetensorsHeader(const QString& path, TensorStats& stats) {
    const QString label = QFileInfo(path).fileName();
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) throw ModelError(label, QStringLiteral("cannot open: %1").arg(f.errorString()));
    const QByteArray lenBytes = f.read(8);
    if (lenBytes.size() < 8) throw ModelError(label, QStringLiteral("file too small for a safetensors header (%1 bytes)").arg(f.size()));
    const auto n = qFromLittleEndian<quint64>(lenBytes.constData());
    if (n > quint64(kMaxSafetensorsHeaderBytes) || n > quint64(f.size() - 8))
        throw ModelError(label, QStringLiteral("header length %1 is larger than the file or the 100 MB limit").arg(n));
    const QByteArray prefix = lenBytes + f.read(qint64(n));
    const SafetensorsHeader h = parseSafetensorsHeader(prefix, f.size(), label);
    for (const SafetensorsTensor& t : h.tensors) {
        stats.dtypes.insert(dtypeName(t.dtype));
        stats.elements += t.numel;
    }
    stats.bytes += f.size();
}

QString describeDtypes(const QSet<QString>& dtypes) {
    QStringList l(dtypes.begin(), dtypes.end());
    std::sort(l.begin(), l.end());
    if (l.size() == 1) return l.first();
    return l.isEmpty() ? QString() : QStringLiteral("mixed (%1)").arg(l.join(QStringLiteral(", ")));
}

/// config.json's model_type, torch_dtype and layer count into `p` (when the file exists).
void readConfig(const QString& folder, ModelProbe& p, QString* torchDtype) {
    const QString path = QDir(folder).filePath(kConfig);
    if (!QFileInfo::exists(path)) return;
    const QJsonObject o = parseJsonObject(readSmallFile(path, kConfig, 16 << 20), kConfig);
    p.architecture = o.value(QLatin1String("model_type")).toString();
    *torchDtype = o.value(QLatin1String("torch_dtype")).toString();
    // Gemma3ForConditionalGeneration (model_type gemma3) keeps the text model's fields in text_config
    const QJsonObject sizes = o.value(QLatin1String("text_config")).isObject() ? o.value(QLatin1String("text_config")).toObject() : o;
    for (const char* key : {"num_hidden_layers", "n_layer", "num_layers"})
        if (sizes.value(QLatin1String(key)).isDouble()) {
            p.layers = sizes.value(QLatin1String(key)).toInt();
            break;
        }
}

void probeSafetensorsSet(const QString& folder, const QStringList& files, ModelProbe& p) {
    TensorStats stats;
    for (const QString& f : files) addSafetensorsHeader(QDir(folder).filePath(f), stats);
    p.tensorTypes = QStringList(stats.dtypes.begin(), stats.dtypes.end());
    std::sort(p.tensorTypes.begin(), p.tensorTypes.end());
    p.dtype = describeDtypes(stats.dtypes);
    p.parameters = stats.elements;
    p.bytes = stats.bytes;
    if (files.size() > 1) p.detail = QStringLiteral("sharded: %1 files").arg(files.size());
}

void probeHfFolder(const QString& folder, ModelProbe& p) {
    p.format = ModelFormat::HfFolder;
    p.name = QFileInfo(folder).fileName();
    QString torchDtype;
    readConfig(folder, p, &torchDtype);
    const QDir dir(folder);
    if (!dir.exists(kConfig)) throw ModelError(folder, QStringLiteral("no config.json: not a Hugging Face model folder"));
    if (dir.exists(kSingle)) {
        probeSafetensorsSet(folder, {kSingle}, p);
    } else if (dir.exists(kIndex)) {
        const ShardedIndex index = loadShardedIndex(dir.filePath(kIndex), kIndex);
        for (const QString& shard : index.shardFiles)
            if (!QFileInfo(dir.filePath(shard)).isFile())
                throw ModelError(kIndex, QStringLiteral("shard '%1' is missing").arg(shard));
        probeSafetensorsSet(folder, index.shardFiles, p);
    } else {
        p.dtype = torchDtype;
        const bool pytorch = dir.exists(QStringLiteral("pytorch_model.bin")) ||
                             dir.exists(QStringLiteral("pytorch_model.bin.index.json"));
        throw ModelError(folder, pytorch ? QStringLiteral("only PyTorch pickles (pytorch_model.bin), no safetensors weights")
                                         : QStringLiteral("no weights: expected %1 or %2").arg(kSingle, kIndex));
    }
}

void probeSafetensorsFile(const QString& path, ModelProbe& p) {
    p.format = ModelFormat::Safetensors;
    const QFileInfo fi(path);
    p.name = fi.completeBaseName();
    QString torchDtype;
    readConfig(fi.absolutePath(), p, &torchDtype);
    probeSafetensorsSet(fi.absolutePath(), {fi.fileName()}, p);
}

void probeGgufFile(const QString& path, ModelProbe& p) {
    p.format = ModelFormat::Gguf;
    p.bytes = QFileInfo(path).size();
    const GgufSummary s = probeGguf(path);
    p.architecture = s.architecture;
    p.name = s.name.isEmpty() ? QFileInfo(path).fileName() : s.name;
    p.dtype = s.quantization();
    p.tensorTypes = s.tensorTypes.keys();
    p.parameters = s.parameterCount;
    p.layers = s.blockCount;
    p.detail = QStringLiteral("GGUF v%1").arg(s.version);
}

/// llama2.c: the legacy layout (seven int32, then float32 arrays; llama2.c run.c) checked against the
/// file size, or the versioned export's "ak42" header (export.py, versions 1 and 2).
void probeLlama2c(const QString& path, ModelProbe& p) {
    const QString label = QFileInfo(path).fileName();
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) throw ModelError(label, QStringLiteral("cannot open: %1").arg(f.errorString()));
    const QByteArray head = f.read(28);
    p.bytes = f.size();
    p.name = QFileInfo(path).completeBaseName();
    if (head.size() < 28) throw ModelError(label, QStringLiteral("too small for a llama2.c header (%1 bytes)").arg(head.size()));
    std::int32_t v[7];
    for (int i = 0; i < 7; ++i) v[i] = qFromLittleEndian<qint32>(head.constData() + 4 * i);
    if (quint32(v[0]) == 0x616b3432u) { // "ak42": export.py's versioned format
        p.format = ModelFormat::Llama2c;
        p.architecture = QStringLiteral("llama");
        p.detail = QStringLiteral("llama2.c export version %1").arg(v[1]);
        p.dtype = v[1] == 2 ? QStringLiteral("Q8_0") : QStringLiteral("F32");
        return;
    }
    const std::int64_t dim = v[0], hidden = v[1], layers = v[2], heads = v[3], kvHeads = v[4], seq = v[6];
    const std::int64_t vocab = v[5] < 0 ? -std::int64_t(v[5]) : v[5];
    const bool plausible = dim > 0 && hidden > 0 && layers > 0 && heads > 0 && kvHeads > 0 && vocab > 0 && seq > 0 &&
                           dim <= 65536 && hidden <= 1 << 20 && layers <= 4096 && heads <= dim && kvHeads <= heads &&
                           dim % heads == 0 && vocab <= 1 << 24 && seq <= 1 << 24;
    if (!plausible) throw ModelError(label, QStringLiteral("not a llama2.c checkpoint (its first 28 bytes are not a plausible header)"));
    const std::int64_t headSize = dim / heads, kvDim = headSize * kvHeads;
    const std::int64_t floats = vocab * dim + layers * (2 * dim + 2 * dim * dim + 2 * dim * kvDim + 3 * dim * hidden) + dim +
                                seq * headSize + (v[5] < 0 ? vocab * dim : 0);
    if (28 + 4 * floats != p.bytes)
        throw ModelError(label, QStringLiteral("not a llama2.c checkpoint: the header (dim %1, %2 layers, vocab %3) implies "
                                               "%4 bytes, the file has %5")
                                    .arg(dim).arg(layers).arg(vocab).arg(28 + 4 * floats).arg(p.bytes));
    p.format = ModelFormat::Llama2c;
    p.architecture = QStringLiteral("llama");
    p.dtype = QStringLiteral("F32");
    p.tensorTypes = {QStringLiteral("F32")};
    p.parameters = floats - seq * headSize; // the RoPE tables are not parameters
    p.layers = int(layers);
    p.detail = QStringLiteral("llama2.c (legacy export)");
}

} // namespace

QString modelFormatName(ModelFormat format) {
    switch (format) {
    case ModelFormat::HfFolder: return QStringLiteral("Hugging Face folder");
    case ModelFormat::Safetensors: return QStringLiteral("safetensors");
    case ModelFormat::Gguf: return QStringLiteral("GGUF");
    case ModelFormat::Llama2c: return QStringLiteral("llama2.c");
    case ModelFormat::Unknown: break;
    }
    return QStringLiteral("unknown");
}

ModelProbe probeModel(const QString& path) {
    ModelProbe p;
    p.path = path;
    const QFileInfo fi(path);
    try {
        if (!fi.exists()) throw ModelError(path, QStringLiteral("no such file or folder"));
        if (fi.isDir()) {
            probeHfFolder(fi.absoluteFilePath(), p);
        } else if (hasGgufMagic(path) || path.endsWith(QLatin1String(".gguf"), Qt::CaseInsensitive)) {
            probeGgufFile(path, p);
        } else if (path.endsWith(QLatin1String(".safetensors"), Qt::CaseInsensitive)) {
            probeSafetensorsFile(path, p);
        } else if (fi.fileName() == kIndex || fi.fileName() == kConfig) {
            probeHfFolder(fi.absolutePath(), p);
        } else if (path.endsWith(QLatin1String(".bin"), Qt::CaseInsensitive)) {
            probeLlama2c(path, p);
        } else {
            p.name = fi.fileName();
            p.bytes = fi.size();
            throw ModelError(fi.fileName(), QStringLiteral("not a model file (expected a folder with config.json, "
                                                           ".safetensors, .gguf or a llama2.c .bin)"));
        }
    } catch (const ModelError& e) {
        p.problem = e.message();
    }
    return p;
}

} // namespace attnscope
