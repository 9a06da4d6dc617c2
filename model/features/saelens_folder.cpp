#include "model/features/saelens_folder.h"

#include "model/core/errors.h"
#include "model/features/dictionary_tensors.h"
#include "model/formats/json_file.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonObject>

namespace attnscope {

namespace {

const QStringList kArchitectures{QStringLiteral("standard"), QStringLiteral("gated"), QStringLiteral("topk"),
                                 QStringLiteral("jumprelu"), QStringLiteral("batchtopk"), QStringLiteral("transcoder"),
                                 QStringLiteral("skip_transcoder"), QStringLiteral("jumprelu_transcoder")};

/// A value from the top level or from "metadata" (6.x keeps the hook there).
QJsonValue field(const QJsonObject& cfg, const QString& key) {
    if (cfg.contains(key)) return cfg.value(key);
    return cfg.value(QStringLiteral("metadata")).toObject().value(key);
}

int positiveInt(const QJsonObject& cfg, const QString& key, const QString& label) {
    const QJsonValue v = field(cfg, key);
    if (!v.isDouble() || v.toDouble() != double(qint64(v.toDouble())) || v.toDouble() < 1 || v.toDouble() > 1e9)
        throw ModelError(label, QStringLiteral("\"%1\" must be a positive integer").arg(key));
    return int(v.toDouble());
}

} // namespace

bool isSaeLensFolder(const QString& folder) {
    const QDir d(folder);
    return QFileInfo(folder).isDir() && d.exists(QStringLiteral("cfg.json")) && d.exists(QStringLiteral("sae_weights.safetensors"));
}

SparseCoder readSaeLensFolder(const QString& folder) {
    const QDir dir(folder);
    const QString cfgPath = dir.filePath(QStringLiteral("cfg.json"));
    const QString cfgLabel = QDir::toNativeSeparators(cfgPath);
    const QJsonObject cfg = parseJsonObject(readSmallFile(cfgPath, cfgLabel, 1 << 20), cfgLabel);

    SparseCoder sae;
    sae.path = folder;
    sae.format = QStringLiteral("SAELens");
    // activation_fn(_str) "topk" with activation_fn_kwargs.k: a pre-6.0 TopK SAE
    const QString activationFn = field(cfg, QStringLiteral("activation_fn")).toString(field(cfg, QStringLiteral("activation_fn_str")).toString(QStringLiteral("relu")));
    QString arch = cfg.value(QStringLiteral("architecture")).toString(QStringLiteral("standard"));
    int k = 0;
    if (activationFn == QLatin1String("topk")) {
        arch = QStringLiteral("topk");
        k = cfg.value(QStringLiteral("activation_fn_kwargs")).toObject().value(QStringLiteral("k")).toInt(0);
    }
    if (!kArchitectures.contains(arch))
        throw ModelError(cfgLabel, QStringLiteral("architecture \"%1\" is not one AttnScope reads (%2)").arg(arch, kArchitectures.join(QStringLiteral(", "))));
    if (activationFn != QLatin1String("relu") && activationFn != QLatin1String("topk"))
        throw ModelError(cfgLabel, QStringLiteral("activation_fn \"%1\" is not supported (relu or topk)").arg(activationFn));
    sae.architecture = arch;
    sae.d_in = positiveInt(cfg, QStringLiteral("d_in"), cfgLabel);
    sae.d_sae = positiveInt(cfg, QStringLiteral("d_sae"), cfgLabel);
    const bool transcoder = arch.endsWith(QLatin1String("transcoder"));
    sae.d_out = transcoder ? positiveInt(cfg, QStringLiteral("d_out"), cfgLabel) : sae.d_in;

    sae.hookIn = field(cfg, QStringLiteral("hook_name")).toString(field(cfg, QStringLiteral("hook_point")).toString());
    if (sae.hookIn.isEmpty()) throw ModelError(cfgLabel, QStringLiteral("no hook: neither metadata.hook_name nor hook_name nor hook_point"));
    sae.hookOut = transcoder ? field(cfg, QStringLiteral("hook_name_out")).toString() : sae.hookIn;
    if (transcoder && sae.hookOut.isEmpty()) throw ModelError(cfgLabel, QStringLiteral("a transcoder needs hook_name_out"));
    const QJsonValue head = field(cfg, QStringLiteral("hook_head_index")).isUndefined() ? field(cfg, QStringLiteral("hook_point_head_index"))
                                                                                        : field(cfg, QStringLiteral("hook_head_index"));
    if (!head.isNull() && !head.isUndefined())
        throw ModelError(cfgLabel, QStringLiteral("hook_head_index is set: SAEs on one head's slice of a hook are not supported"));

    sae.applyBDecToInput = cfg.value(QStringLiteral("apply_b_dec_to_input")).toBool(!transcoder);
    if (transcoder && sae.applyBDecToInput)
        throw ModelError(cfgLabel, QStringLiteral("apply_b_dec_to_input is true on a transcoder (b_dec has d_out entries; SAELens refuses it too)"));

    const QJsonValue norm = cfg.value(QStringLiteral("normalize_activations"));
    QString normName = norm.isBool() ? (norm.toBool() ? QStringLiteral("expected_average_only_in") : QStringLiteral("none"))
                                     : norm.toString(QStringLiteral("none"));
    if (normName == QLatin1String("constant_norm_rescale")) sae.normalization = InputNormalization::ConstantNormRescale;
    else if (normName == QLatin1String("layer_norm")) sae.normalization = InputNormalization::LayerNorm;
    else if (normName == QLatin1String("expected_average_only_in")) {
        const QJsonValue factor = field(cfg, QStringLiteral("norm_scaling_factor"));
        if (!factor.isDouble() || !(factor.toDouble() > 0) || !std::isfinite(factor.toDouble()))
            throw ModelError(cfgLabel, QStringLiteral("normalize_activations is expected_average_only_in but cfg.json gives no "
                                                      "norm_scaling_factor to fold into the weights (SAELens takes it from its "
                                                      "pretrained_saes.yaml entry for this SAE; add \"norm_scaling_factor\" to cfg.json)"));
        sae.inputScale = factor.toDouble();
    } else if (normName != QLatin1String("none"))
        throw ModelError(cfgLabel, QStringLiteral("normalize_activations \"%1\" is not supported (none, constant_norm_rescale, layer_norm, "
                                                  "expected_average_only_in)").arg(normName));
    const QString reshape = cfg.value(QStringLiteral("reshape_activations")).toString(QStringLiteral("none"));
    if (reshape != QLatin1String("none") && reshape != QLatin1String("hook_z"))
        throw ModelError(cfgLabel, QStringLiteral("reshape_activations \"%1\" is not supported (none or hook_z)").arg(reshape));

    DictionaryTensors t(SafetensorsFile::open(dir.filePath(QStringLiteral("sae_weights.safetensors")),
                                              QDir::toNativeSeparators(dir.filePath(QStringLiteral("sae_weights.safetensors")))));
    sae.owners.push_back(t.owner());
    const std::int64_t din = sae.d_in, dsae = sae.d_sae, dout = sae.d_out;
    const QString ctx = QStringLiteral("cfg.json (d_in %1, d_sae %2%3)").arg(din).arg(dsae).arg(transcoder ? QStringLiteral(", d_out %1").arg(dout) : QString());
    sae.W_enc = t.weight(QStringLiteral("W_enc"), {din, dsae}, din, dsae, false, ctx);
    sae.W_dec = t.weight(QStringLiteral("W_dec"), {dsae, dout}, dsae, dout, false, ctx);
    sae.b_dec = t.weight(QStringLiteral("b_dec"), {dout}, 1, dout, false, ctx);
    if (arch == QLatin1String("gated")) {
        sae.activation = FeatureActivation::Gated;
        sae.b_gate = t.weight(QStringLiteral("b_gate"), {dsae}, 1, dsae, false, ctx);
        sae.b_mag = t.weight(QStringLiteral("b_mag"), {dsae}, 1, dsae, false, ctx);
        sae.r_mag = t.weight(QStringLiteral("r_mag"), {dsae}, 1, dsae, false, ctx);
    } else {
        sae.b_enc = t.weight(QStringLiteral("b_enc"), {dsae}, 1, dsae, false, ctx);
    }
    if (arch == QLatin1String("jumprelu") || arch == QLatin1String("jumprelu_transcoder") || arch == QLatin1String("batchtopk")) {
        sae.activation = FeatureActivation::JumpReLU;
        if (arch == QLatin1String("batchtopk") && !t.has(QStringLiteral("threshold")))
            throw ModelError(t.label(), QStringLiteral("a batchtopk SAE needs its threshold tensor (SAELens saves BatchTopK SAEs as jumprelu)"));
        sae.threshold = t.weight(QStringLiteral("threshold"), {dsae}, 1, dsae, false, ctx, true);
        if (!sae.threshold.allFinite()) throw ModelError(t.label(), QStringLiteral("tensor threshold holds NaN or infinite values"));
    }
    if (arch == QLatin1String("topk")) {
        sae.activation = FeatureActivation::TopK;
        if (k == 0) k = field(cfg, QStringLiteral("k")).toInt(0);
        if (k < 1 || k > sae.d_sae)
            throw ModelError(cfgLabel, QStringLiteral("k = %1 must be between 1 and d_sae = %2").arg(k).arg(sae.d_sae));
        sae.k = k;
        sae.rescaleActsByDecoderNorm = cfg.value(QStringLiteral("rescale_acts_by_decoder_norm")).toBool(false);
    }
    if (arch == QLatin1String("skip_transcoder"))
        sae.W_skip = t.weight(QStringLiteral("W_skip"), {dout, din}, din, dout, true, ctx);
    return sae;
}

} // namespace attnscope
