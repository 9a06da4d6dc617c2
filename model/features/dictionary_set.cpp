#include "model/features/dictionary_set.h"

#include "model/core/errors.h"
#include "model/features/circuit_tracer_set.h"
#include "model/features/gemma_scope2_layout.h"
#include "model/features/gemma_scope_params.h"
#include "model/features/hook_point.h"
#include "model/features/llama_scope_folder.h"
#include "model/features/saelens_folder.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>

namespace attnscope {

namespace {

bool isPickleName(const QString& name) {
    static const QStringList ext{QStringLiteral(".pt"), QStringLiteral(".pth"), QStringLiteral(".pkl"), QStringLiteral(".pickle"),
                                 QStringLiteral(".bin")};
    for (const QString& e : ext)
        if (name.endsWith(e, Qt::CaseInsensitive)) return true;
    return false;
}

[[noreturn]] void refusePickle(const QString& path) {
    // Qwen Scope (Qwen/SAE-Res-*: layer{n}.sae.pt, torch.save of W_enc [d_sae, d_in], W_dec [d_in, d_sae], b_enc, b_dec)
    static const QRegularExpression qwenScope(QStringLiteral("^layer\\d+\\.sae\\.pt$"));
    if (qwenScope.match(QFileInfo(path).fileName()).hasMatch())
        throw ModelError(QDir::toNativeSeparators(path),
                         QStringLiteral("a Qwen Scope SAE saved as a PyTorch pickle; AttnScope never unpickles files, which can run "
                                        "code. Load it with SAELens (its qwen_scope loader: SAE.from_pretrained on the qwen-scope "
                                        "release) and save it with sae.save_model(folder): the folder (cfg.json + "
                                        "sae_weights.safetensors, architecture topk) opens here"));
    throw ModelError(QDir::toNativeSeparators(path),
                     QStringLiteral("a Python pickle (OpenAI's GPT-2 SAEs are saved this way); AttnScope never unpickles files, which can "
                                    "run code. Use their SAELens conversion instead: the releases gpt2-small-resid-post-v5-32k and "
                                    "gpt2-small-resid-post-v5-128k (cfg.json + sae_weights.safetensors folders)"));
}

DictionarySet single(SparseCoder sae, const QString& path) { return singleDictionary(std::move(sae), path); }

} // namespace

DictionarySet singleDictionary(SparseCoder sae, const QString& path) {
    DictionarySet set;
    set.path = path;
    set.format = sae.format;
    set.kind = sae.isTranscoder() ? QStringLiteral("transcoder") : QStringLiteral("sae");
    set.coders.push_back(std::move(sae));
    return set;
}

DictionarySet openDictionaries(const QString& path, const QString& hookOverride) {
    const QFileInfo info(path);
    if (!info.exists()) {
        if (isGemmaScope2Path(path)) return openGemmaScope2(path); // <site>/width_W_l0_S[_affine]: every layer of that variant
        throw ModelError(QDir::toNativeSeparators(path), QStringLiteral("no such file or folder"));
    }
    if (info.isFile()) {
        const QString name = info.fileName();
        if (isGemmaScopeFile(path)) return single(readGemmaScopeFile(path, hookOverride), path);
        if (name.startsWith(QLatin1String("params_layer_")) && isGemmaScope2Path(info.absolutePath())) return openGemmaScope2(info.absolutePath());
        if (isPickleName(name)) refusePickle(path);
        if (name == QLatin1String("cfg.json") || name == QLatin1String("sae_weights.safetensors") || name == QLatin1String("config.yaml") ||
            name == QLatin1String("hyperparams.json"))
            return openDictionaries(info.absolutePath(), hookOverride);
        if (name.endsWith(QLatin1String(".yaml"), Qt::CaseInsensitive) || name.endsWith(QLatin1String(".yml"), Qt::CaseInsensitive))
            return readCircuitTracerSet(path); // a circuit-tracer config of any name (the first format's configs/*.yaml)
        if (name == QLatin1String("final.safetensors") && info.dir().dirName() == QLatin1String("checkpoints"))
            return openDictionaries(QFileInfo(info.absolutePath()).absolutePath(), hookOverride);
        throw ModelError(QDir::toNativeSeparators(path), QStringLiteral("not a dictionary file AttnScope knows (an SAELens folder's cfg.json, "
                                                                        "Gemma Scope's params.npz, a circuit-tracer config .yaml, Llama Scope's hyperparams.json)"));
    }
    const QDir dir(path);
    auto withHook = [&](SparseCoder sae) {
        if (!hookOverride.isEmpty()) sae.hookIn = sae.hookOut = hookOverride;
        return single(std::move(sae), path);
    };
    if (isSaeLensFolder(path)) return withHook(readSaeLensFolder(path));
    if (isCircuitTracerFolder(path)) return readCircuitTracerSet(path);
    if (isLlamaScopeFolder(path)) return withHook(readLlamaScopeFolder(path));
    for (const QString& f : {QStringLiteral("params.npz"), QStringLiteral("params.safetensors")})
        if (dir.exists(f)) return single(readGemmaScopeFile(dir.filePath(f), hookOverride), path);
    // a folder holding one circuit-tracer config of another name (the first format's configs/*.yaml beside its weights)
    if (const QStringList yamls = dir.entryList({QStringLiteral("*.yaml"), QStringLiteral("*.yml")}, QDir::Files); yamls.size() == 1)
        return readCircuitTracerSet(dir.filePath(yamls.first()));
    if (dir.exists(QStringLiteral("cfg.json")) && !dir.exists(QStringLiteral("sae_weights.safetensors")))
        throw ModelError(QDir::toNativeSeparators(dir.filePath(QStringLiteral("sae_weights.safetensors"))),
                         QStringLiteral("missing: the folder has an SAELens cfg.json but not its weights%1")
                             .arg(dir.exists(QStringLiteral("sparsity.safetensors"))
                                      ? QStringLiteral(" (sparsity.safetensors holds only each feature's firing frequency)") : QString()));
    if (isGemmaScope2Path(path)) return openGemmaScope2(path);
    const QStringList pickles = dir.entryList({QStringLiteral("*.pt"), QStringLiteral("*.pth"), QStringLiteral("*.pkl")}, QDir::Files);
    if (!pickles.isEmpty()) refusePickle(dir.filePath(pickles.first()));
    throw ModelError(QDir::toNativeSeparators(path), QStringLiteral("no dictionary here: looked for cfg.json + sae_weights.safetensors (SAELens), "
                                                                    "config.yaml or one other .yaml (circuit-tracer), hyperparams.json + checkpoints/final.safetensors "
                                                                    "(Llama Scope), params.npz or params.safetensors (Gemma Scope)"));
}

void requireOneHookPerDictionary(const DictionarySet& set) {
    if (set.kind == QLatin1String("crosscoder"))
        throw InputError(QStringLiteral("%1: a crosscoder (its features at each of its %2 layers reconstruct all of them): one dictionary "
                                        "on one hook is all the Features view shows, so it is not opened here")
                             .arg(QDir::toNativeSeparators(set.path)).arg(set.coders.size()));
}

void requireFitsModel(const DictionarySet& set, const ModelConfig& cfg) {
    if (set.kind == QLatin1String("transcoder_set") || set.kind == QLatin1String("cross_layer_transcoder")) {
        if (int(set.coders.size()) != cfg.n_layers)
            throw InputError(QStringLiteral("%1: the set has transcoders for %2 layers but the model has %3")
                                 .arg(QDir::toNativeSeparators(set.path)).arg(set.coders.size()).arg(cfg.n_layers));
    }
    for (const SparseCoder& sae : set.coders) {
        const QString label = QDir::toNativeSeparators(sae.path);
        requireHook(cfg, sae.hookIn, sae.d_in, label);
        requireHook(cfg, sae.hookOut, sae.d_out, label);
    }
}

} // namespace attnscope
