#include "model/features/llama_scope_folder.h"

#include "model/core/errors.h"
#include "model/features/config_fields.h"
#include "model/features/dictionary_tensors.h"
#include "model/formats/json_file.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonObject>
#include <cmath>

namespace attnscope {

bool isLlamaScopeFolder(const QString& folder) {
    const QDir d(folder);
    return QFileInfo(folder).isDir() && d.exists(QStringLiteral("hyperparams.json")) &&
           d.exists(QStringLiteral("checkpoints/final.safetensors"));
}

SparseCoder readLlamaScopeFolder(const QString& folder) {
    const QDir dir(folder);
    const QString cfgLabel = QDir::toNativeSeparators(dir.filePath(QStringLiteral("hyperparams.json")));
    const ConfigFields cfg(parseJsonObject(readSmallFile(dir.filePath(QStringLiteral("hyperparams.json")), cfgLabel, 1 << 20), cfgLabel), cfgLabel);
    auto number = [&](const ConfigFields& at, const QString& key) {
        const std::optional<double> v = at.number(key);
        if (!v) throw ModelError(cfgLabel, QStringLiteral("\"%1\" must be a number").arg(at.name(key)));
        return *v;
    };
    const double dModel = number(cfg, QStringLiteral("d_model"));
    const double dSae = number(cfg, QStringLiteral("d_sae"));
    if (dModel < 1 || dSae < 1 || dModel != std::floor(dModel) || dSae != std::floor(dSae) || dModel > 1e6 || dSae > 1e8)
        throw ModelError(cfgLabel, QStringLiteral("d_model and d_sae must be positive integers"));
    const double theta = number(cfg, QStringLiteral("jump_relu_threshold"));
    const std::optional<ConfigFields> norms = cfg.object(QStringLiteral("dataset_average_activation_norm"));
    const double normIn = number(norms.value_or(ConfigFields({}, cfgLabel, QStringLiteral("dataset_average_activation_norm."))), QStringLiteral("in"));
    if (!(normIn > 0)) throw ModelError(cfgLabel, QStringLiteral("dataset_average_activation_norm.in must be positive"));
    if (norms) norms->number(QStringLiteral("out"));
    cfg.integer(QStringLiteral("top_k"), 0, 1'000'000'000);
    cfg.string(QStringLiteral("norm_activation"));
    const QString act = cfg.stringOr(QStringLiteral("act_fn"), QStringLiteral("jumprelu"));
    if (act != QLatin1String("jumprelu"))
        throw ModelError(cfgLabel, QStringLiteral("act_fn \"%1\" is not supported (jumprelu)").arg(act));

    SparseCoder sae;
    sae.path = folder;
    sae.format = QStringLiteral("Llama Scope");
    sae.d_in = sae.d_out = int(dModel);
    sae.d_sae = int(dSae);
    sae.hookIn = cfg.stringOr(QStringLiteral("hook_point_in"), QString());
    sae.hookOut = cfg.stringOr(QStringLiteral("hook_point_out"), sae.hookIn);
    if (sae.hookIn.isEmpty()) throw ModelError(cfgLabel, QStringLiteral("no hook_point_in"));
    sae.architecture = sae.hookOut == sae.hookIn ? QStringLiteral("jumprelu") : QStringLiteral("jumprelu_transcoder");
    sae.activation = FeatureActivation::JumpReLU;
    sae.inputScale = std::sqrt(dModel) / normIn;
    sae.thresholdScalar = float(theta * sae.inputScale);
    const QString weights = dir.filePath(QStringLiteral("checkpoints/final.safetensors"));
    DictionaryTensors t(SafetensorsFile::open(weights, QDir::toNativeSeparators(weights)));
    sae.owners.push_back(t.owner());
    const std::int64_t d = sae.d_in, f = sae.d_sae;
    const QString ctx = QStringLiteral("hyperparams.json (d_model %1, d_sae %2)").arg(d).arg(f);
    sae.W_enc = t.weight(QStringLiteral("encoder.weight"), {f, d}, d, f, true, ctx);
    sae.b_enc = t.weight(QStringLiteral("encoder.bias"), {f}, 1, f, false, ctx);
    sae.W_dec = t.weight(QStringLiteral("decoder.weight"), {d, f}, f, d, true, ctx);
    sae.b_dec = t.weight(QStringLiteral("decoder.bias"), {d}, 1, d, false, ctx);
    return sae;
}

} // namespace attnscope
