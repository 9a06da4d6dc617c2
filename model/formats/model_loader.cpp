#include "model/formats/model_loader.h"

#include "model/core/errors.h"
#include "model/formats/gguf_model.h"
#include "model/formats/gguf_probe.h"
#include "model/formats/gpt2_weight_resolver.h"
#include "model/formats/hf_repo_folder.h"
#include "model/formats/llama2c_model.h"
#include "model/formats/llama_weight_resolver.h"
#include "model/formats/hf_config.h"
#include "model/formats/sharded_index.h"
#include "model/tokenizers/lazy_tokenizer.h"
#include "model/tokenizers/tokenizer_loader.h"

#include <QDir>
#include <QFloat16>
#include <QFileInfo>
#include <cstring>

namespace attnscope {

namespace {

const QString kSingleFile = QStringLiteral("model.safetensors");
const QString kIndexFile = QStringLiteral("model.safetensors.index.json");
const QString kConfigFile = QStringLiteral("config.json");

/// Where a model's files are: its folder and either one weight file or an index.
struct ModelLocation {
    QString folder;
    QString weightsFile; ///< file name inside folder
    bool sharded = false;
};

ModelLocation locate(const QString& path) {
    const QFileInfo fi(path);
    if (!fi.exists()) throw ModelError(path, QStringLiteral("no such file or folder"));
    ModelLocation loc;
    if (fi.isDir()) {
        loc.folder = fi.absoluteFilePath();
        const QDir dir(loc.folder);
        // Same preference as transformers: a single model.safetensors before an index.
        if (dir.exists(kSingleFile)) {
            loc.weightsFile = kSingleFile;
        } else if (dir.exists(kIndexFile)) {
            loc.weightsFile = kIndexFile;
            loc.sharded = true;
        } else {
            QString hint;
            if (dir.exists(QStringLiteral("pytorch_model.bin")))
                hint = QStringLiteral(" (pytorch_model.bin is not supported; convert it to safetensors)");
            throw ModelError(path, QStringLiteral("no weights found: expected %1 or %2%3").arg(kSingleFile, kIndexFile, hint));
        }
        return loc;
    }
    loc.folder = fi.absolutePath();
    loc.weightsFile = fi.fileName();
    if (loc.weightsFile.endsWith(QLatin1String(".index.json")))
        loc.sharded = true;
    else if (!loc.weightsFile.endsWith(QLatin1String(".safetensors")))
        throw ModelError(path, QStringLiteral("not a model folder, .safetensors, .gguf or llama2.c .bin file, or %1").arg(kIndexFile));
    return loc;
}

/// Opens the weight files (validating each header) into a TensorSet.
TensorSet openWeights(const ModelLocation& loc, const Progress& progress, qint64& done, qint64 total) {
    const QDir dir(loc.folder);
    TensorSet set;
    if (!loc.sharded) {
        progress.step(done, total, QStringLiteral("Reading %1").arg(loc.weightsFile));
        set.add(SafetensorsFile::open(dir.filePath(loc.weightsFile), loc.weightsFile));
        ++done;
        return set;
    }
    const ShardedIndex index = loadShardedIndex(dir.filePath(loc.weightsFile), loc.weightsFile);
    for (const QString& shard : index.shardFiles) {
        progress.step(done, total, QStringLiteral("Reading %1").arg(shard));
        const QString shardPath = dir.filePath(shard);
        if (!QFileInfo(shardPath).isFile())
            throw ModelError(loc.weightsFile, QStringLiteral("shard '%1' is missing (expected %2)").arg(shard, shardPath));
        set.add(SafetensorsFile::open(shardPath, shard));
        ++done;
    }
    for (auto it = index.weightMap.begin(); it != index.weightMap.end(); ++it) {
        const TensorRef* ref = set.find(it.key());
        if (!ref || ref->file->label() != it.value())
            throw ModelError(it.value(), QStringLiteral("tensor %1 listed in %2 is not in this file").arg(it.key(), loc.weightsFile));
    }
    return set;
}

qint64 countShards(const ModelLocation& loc) {
    if (!loc.sharded) return 1;
    return loadShardedIndex(QDir(loc.folder).filePath(loc.weightsFile), loc.weightsFile).shardFiles.size();
}

/// A tokenizer file given apart goes with a llama2.c checkpoint (.bin) only: any other model has its own, and
/// the file would be silently ignored.
void refuseSeparateTokenizer(const QString& path, const LoadOptions& options) {
    if (!options.tokenizerPath.isEmpty())
        throw ModelError(path, QStringLiteral("this model has its own tokenizer; a separate tokenizer file (%1) goes with a "
                                              "llama2.c checkpoint (.bin) only")
                                   .arg(options.tokenizerPath));
}

} // namespace

std::unique_ptr<Tokenizer> loadTokenizerOnly(const QString& path, const LoadOptions& options) {
    const QFileInfo fi(path);
    if (!fi.exists()) throw ModelError(path, QStringLiteral("no such file or folder"));
    const QString name = fi.fileName().toLower();
    if (!fi.isFile() || !name.endsWith(QLatin1String(".bin")) || hasGgufMagic(path)) refuseSeparateTokenizer(path, options);
    if (fi.isDir()) return loadTokenizerFromFolder(fi.absoluteFilePath());
    if (name.endsWith(QLatin1String(".gguf")) || hasGgufMagic(path)) return ggufTokenizer(*GgufFile::open(path, fi.fileName()));
    if (name.endsWith(QLatin1String(".safetensors")) || name.endsWith(QLatin1String(".index.json")))
        return loadTokenizerFromFolder(fi.absolutePath());
    if (name.endsWith(QLatin1String(".bin")) && !options.tokenizerPath.isEmpty()) return loadTokenizerFile(options.tokenizerPath);
    if (name.endsWith(QLatin1String(".bin")) && name != QLatin1String("tokenizer.bin") && fi.dir().exists(QStringLiteral("tokenizer.bin")))
        return loadTokenizerFile(fi.dir().filePath(QStringLiteral("tokenizer.bin")));
    // a checkpoint is not a tokenizer: read as one it failed with a message about "token 1" of the weights
    if (name.endsWith(QLatin1String(".bin")) && isLlama2cCheckpoint(path)) throw llama2cMissingTokenizer(fi.fileName());
    return loadTokenizerFile(path); // tokenizer.json, tokenizer.model, a llama2.c tokenizer.bin
}

namespace {

/// x rounded to nearest even in the storage dtype "BF16" or "F16" (as torch.tensor(x, dtype=...)); x for others.
double roundedToStorage(double x, const QString& dtype) {
    const float f = float(x);
    if (dtype == QLatin1String("F16")) return double(float(qfloat16(f)));
    if (dtype != QLatin1String("BF16")) return double(f);
    quint32 bits;
    std::memcpy(&bits, &f, 4);
    bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
    float r;
    std::memcpy(&r, &bits, 4);
    return double(r);
}

} // namespace

std::shared_ptr<const Model> loadModel(const QString& path, const Progress& progress, const LoadOptions& options) {
    const QFileInfo fi(path);
    // GGUF by its magic: Ollama's blobs have no extension
    if (fi.isFile() && (path.endsWith(QLatin1String(".gguf"), Qt::CaseInsensitive) || hasGgufMagic(path))) {
        refuseSeparateTokenizer(path, options);
        return loadGgufModel(path, progress);
    }
    if (fi.isFile() && path.endsWith(QLatin1String(".bin"), Qt::CaseInsensitive))
        return loadLlama2cModel(path, options.tokenizerPath, progress);
    refuseSeparateTokenizer(path, options);
    const ModelLocation loc = locate(path);
    const QDir dir(loc.folder);

    progress.checkCancelled();
    ModelConfig config = loadHfConfig(dir.filePath(kConfigFile), kConfigFile);
    const bool gpt2 = config.modelType == QLatin1String("gpt2");

    const qint64 nFiles = countShards(loc);
    const qint64 nTensors = gpt2 ? Gpt2WeightResolver::tensorCount(config) : LlamaWeightResolver::tensorCount(config);
    const qint64 total = 1 + nFiles + nTensors + 1;
    qint64 done = 1;
    progress.step(done, total, QStringLiteral("Read %1").arg(kConfigFile));

    TensorSet tensors = openWeights(loc, progress, done, total);

    ModelInfo info;
    const QString repoId = hfRepoIdForPath(loc.folder); // a Hugging Face cache snapshot: "ORG/NAME", not the commit
    info.name = repoId.isEmpty() ? dir.dirName() : repoId;
    info.path = path;
    for (const auto& f : tensors.files()) {
        info.weightFiles << f->label();
        info.fileBytes += f->fileSize();
    }

    std::unique_ptr<WeightResolver> resolver;
    if (gpt2) {
        auto r = std::make_unique<Gpt2WeightResolver>(config, std::move(tensors), loc.weightsFile, kConfigFile, progress, done, total);
        info.storageDtype = r->storageDtype();
        resolver = std::move(r);
    } else {
        auto r = std::make_unique<LlamaWeightResolver>(config, std::move(tensors), loc.weightsFile, kConfigFile, progress, done, total);
        info.storageDtype = r->storageDtype();
        resolver = std::move(r);
    }
    done += nTensors;
    // Gemma's √d_model embedding factor is a tensor of the weights' dtype in transformers (Gemma2Model normalizer)
    if (config.embed_scale != 1.0) config.embed_scale = roundedToStorage(config.embed_scale, info.storageDtype);

    progress.step(done, total, QStringLiteral("Reading the tokenizer"));
    requireTokenizerFiles(loc.folder); // a missing tokenizer fails the open; parsing errors fail first use
    // Parsed on a background thread (~0.1 s for GPT-2's 50k entries); waited for on first use, where
    // a bad tokenizer file or a vocabulary larger than vocab_size throws ModelError.
    std::unique_ptr<Tokenizer> tokenizer = std::make_unique<LazyTokenizer>([folder = loc.folder, d_vocab = config.d_vocab] {
        std::unique_ptr<Tokenizer> t = loadTokenizerFromFolder(folder);
        // larger only by special added tokens past the embedding (Gemma 3 1B's <image_soft_token>): as transformers
        if (t->vocabSize() > d_vocab && !onlyControlTokensFrom(*t, d_vocab))
            throw ModelError(kConfigFile, QStringLiteral("the tokenizer has %1 tokens but vocab_size is %2")
                                              .arg(t->vocabSize()).arg(d_vocab));
        return t;
    });
    progress.step(total, total, QStringLiteral("Loaded %1").arg(info.name));

    return std::make_shared<const Model>(config, std::move(info), std::move(tokenizer), std::move(resolver));
}

} // namespace attnscope
