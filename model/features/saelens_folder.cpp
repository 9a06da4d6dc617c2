#include "model/features/saelens_folder.h"

#include "model/core/errors.h"
#include "model/features/config_fields.h"
#include "model/features/dictionary_tensors.h"
#include "model/formats/json_file.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonObject>
#include <limits>

namespace attnscope {

namespace {

/// The architectures of SAELens 6.49's registry (sae_lens/saes/__init__.py) AttnScope reads, and the training
/// architectures whose saved inference SAE is one of them (batchtopk and matryoshka_batchtopk: saved as jumprelu with
/// their global threshold; a folder still labelled so is read when it holds that threshold tensor).
const QStringList kArchitectures{QStringLiteral("standard"), QStringLiteral("gated"), QStringLiteral("topk"),
                                 QStringLiteral("jumprelu"), QStringLiteral("batchtopk"), QStringLiteral("matryoshka_batchtopk"),
                                 QStringLiteral("matching_pursuit"), QStringLiteral("transcoder"), QStringLiteral("skip_transcoder"),
                                 QStringLiteral("jumprelu_transcoder"), QStringLiteral("jumprelu_skip_transcoder")};

/// Architectures SAELens 6.49 registers that AttnScope refuses, each with the reason.
QString refusalOf(const QString& arch) {
    if (arch == QLatin1String("temporal"))
        return QStringLiteral("architecture \"temporal\" is not supported: a TemporalSAE (sae_lens/saes/temporal_sae.py) predicts "
                              "part of each position's codes from the earlier positions through its own attention layers "
                              "(attn_layers.*), and its reconstruction adds those predicted codes, which are not features: "
                              "decoding the features alone does not reconstruct the activation, so interventions, "
                              "reconstruction losses and attribution graphs, which decode features one position at a time, "
                              "would be wrong");
    if (arch == QLatin1String("phase_multiplexed"))
        return QStringLiteral("architecture \"phase_multiplexed\" is not supported");
    return {};
}

bool isJumpReLU(const QString& arch) {
    return arch == QLatin1String("jumprelu") || arch == QLatin1String("jumprelu_transcoder") ||
           arch == QLatin1String("jumprelu_skip_transcoder") || arch == QLatin1String("batchtopk") ||
           arch == QLatin1String("matryoshka_batchtopk");
}

/// cfg.json's top level and its "metadata" (6.x keeps the hook and the run's settings there): a member is read from
/// the top level when it is there (null included), else from metadata.
struct SaeLensFields {
    ConfigFields top;
    ConfigFields meta;
    const ConfigFields& at(const QString& key) const { return top.object().contains(key) ? top : meta; }
    std::optional<QString> string(const QString& key) const { return at(key).string(key); }
    std::optional<bool> boolean(const QString& key) const { return at(key).boolean(key); }
    std::optional<qint64> integer(const QString& key, qint64 lo, qint64 hi) const { return at(key).integer(key, lo, hi); }
    std::optional<double> number(const QString& key) const { return at(key).number(key); }
    bool has(const QString& key) const { return at(key).has(key); }
};

int positiveInt(const SaeLensFields& cfg, const QString& key) {
    const std::optional<qint64> v = cfg.integer(key, 1, 1'000'000'000);
    if (!v) throw ModelError(cfg.top.fileLabel(), QStringLiteral("\"%1\" must be a positive integer").arg(key));
    return int(*v);
}

/// Fields SAELens writes that AttnScope does not use, with the type SAELens gives them: checked so a file that is
/// wrong there is not half-read either (null allowed, as for every field).
void checkUnusedFields(const SaeLensFields& cfg) {
    for (const char* key : {"dtype", "device", "model_name", "model_class_name", "dataset_path", "sae_lens_version",
                            "sae_lens_training_version"})
        cfg.string(QLatin1String(key));
    for (const char* key : {"prepend_bos", "finetuning_scaling_factor"}) cfg.boolean(QLatin1String(key));
    for (const char* key : {"hook_layer", "context_size"}) cfg.integer(QLatin1String(key), -1, std::numeric_limits<int>::max());
}

} // namespace

bool isSaeLensFolder(const QString& folder) {
    const QDir d(folder);
    return QFileInfo(folder).isDir() && d.exists(QStringLiteral("cfg.json")) && d.exists(QStringLiteral("sae_weights.safetensors"));
}

SparseCoder readSaeLensConfig(const QString& folder) {
    const QDir dir(folder);
    const QString cfgPath = dir.filePath(QStringLiteral("cfg.json"));
    const QString cfgLabel = QDir::toNativeSeparators(cfgPath);
    const ConfigFields top(parseJsonObject(readSmallFile(cfgPath, cfgLabel, 1 << 20), cfgLabel), cfgLabel);
    const SaeLensFields cfg{top, top.object(QStringLiteral("metadata")).value_or(ConfigFields({}, cfgLabel, QStringLiteral("metadata.")))};
    checkUnusedFields(cfg);

    SparseCoder sae;
    sae.path = folder;
    sae.format = QStringLiteral("SAELens");
    // activation_fn(_str) "topk" with activation_fn_kwargs.k: a pre-6.0 TopK SAE
    const QString activationFn = cfg.string(QStringLiteral("activation_fn")).value_or(cfg.string(QStringLiteral("activation_fn_str")).value_or(QStringLiteral("relu")));
    QString arch = top.stringOr(QStringLiteral("architecture"), QStringLiteral("standard"));
    int k = 0;
    if (activationFn == QLatin1String("topk")) {
        arch = QStringLiteral("topk");
        if (const auto kwargs = top.object(QStringLiteral("activation_fn_kwargs")))
            k = int(kwargs->integer(QStringLiteral("k"), 0, 1'000'000'000).value_or(0));
    }
    if (const QString why = refusalOf(arch); !why.isEmpty()) throw ModelError(cfgLabel, why);
    if (!kArchitectures.contains(arch))
        throw ModelError(cfgLabel, QStringLiteral("architecture \"%1\" is not one AttnScope reads (%2)").arg(arch, kArchitectures.join(QStringLiteral(", "))));
    if (activationFn != QLatin1String("relu") && activationFn != QLatin1String("topk"))
        throw ModelError(cfgLabel, QStringLiteral("activation_fn \"%1\" is not supported (relu or topk)").arg(activationFn));
    sae.architecture = arch;
    sae.d_in = positiveInt(cfg, QStringLiteral("d_in"));
    sae.d_sae = positiveInt(cfg, QStringLiteral("d_sae"));
    const bool transcoder = arch.endsWith(QLatin1String("transcoder"));
    sae.d_out = transcoder ? positiveInt(cfg, QStringLiteral("d_out")) : sae.d_in;

    sae.hookIn = cfg.string(QStringLiteral("hook_name")).value_or(cfg.string(QStringLiteral("hook_point")).value_or(QString()));
    if (sae.hookIn.isEmpty()) throw ModelError(cfgLabel, QStringLiteral("no hook: neither metadata.hook_name nor hook_name nor hook_point"));
    sae.hookOut = transcoder ? cfg.string(QStringLiteral("hook_name_out")).value_or(QString()) : sae.hookIn;
    if (transcoder && sae.hookOut.isEmpty()) throw ModelError(cfgLabel, QStringLiteral("a transcoder needs hook_name_out"));
    // an integer when set; null (or absent) for an SAE on the whole hook
    const bool headSet = cfg.integer(QStringLiteral("hook_head_index"), 0, 1 << 20).has_value() ||
                         cfg.integer(QStringLiteral("hook_point_head_index"), 0, 1 << 20).has_value();
    if (headSet) throw ModelError(cfgLabel, QStringLiteral("hook_head_index is set: SAEs on one head's slice of a hook are not supported"));

    sae.applyBDecToInput = top.booleanOr(QStringLiteral("apply_b_dec_to_input"), !transcoder);
    if (transcoder && sae.applyBDecToInput)
        throw ModelError(cfgLabel, QStringLiteral("apply_b_dec_to_input is true on a transcoder (b_dec has d_out entries; SAELens refuses it too)"));

    // SAELens before 6.0 wrote a bool (true = expected_average_only_in; handle_pre_6_0_config converts it), later
    // versions a string: both are read, nothing else.
    const QJsonValue norm = top.object().value(QStringLiteral("normalize_activations"));
    if (!norm.isBool() && !norm.isString() && !norm.isNull() && !norm.isUndefined())
        top.wrongType(QStringLiteral("normalize_activations"), QStringLiteral("a string (or, before SAELens 6, a boolean)"));
    const QString normName = norm.isBool() ? (norm.toBool() ? QStringLiteral("expected_average_only_in") : QStringLiteral("none"))
                                           : norm.toString(QStringLiteral("none"));
    if (normName == QLatin1String("constant_norm_rescale")) sae.normalization = InputNormalization::ConstantNormRescale;
    else if (normName == QLatin1String("layer_norm")) sae.normalization = InputNormalization::LayerNorm;
    else if (normName == QLatin1String("expected_average_only_in")) {
        const std::optional<double> factor = cfg.number(QStringLiteral("norm_scaling_factor"));
        if (!factor || !(*factor > 0))
            throw ModelError(cfgLabel, QStringLiteral("normalize_activations is expected_average_only_in but cfg.json gives no "
                                                      "norm_scaling_factor to fold into the weights (SAELens takes it from its "
                                                      "pretrained_saes.yaml entry for this SAE; add \"norm_scaling_factor\" to cfg.json)"));
        sae.inputScale = *factor;
    } else if (normName != QLatin1String("none"))
        throw ModelError(cfgLabel, QStringLiteral("normalize_activations \"%1\" is not supported (none, constant_norm_rescale, layer_norm, "
                                                  "expected_average_only_in)").arg(normName));
    const QString reshape = top.stringOr(QStringLiteral("reshape_activations"), QStringLiteral("none"));
    if (reshape != QLatin1String("none") && reshape != QLatin1String("hook_z"))
        throw ModelError(cfgLabel, QStringLiteral("reshape_activations \"%1\" is not supported (none or hook_z)").arg(reshape));

    if (arch == QLatin1String("matching_pursuit")) { // MatchingPursuitSAEConfig's fields, with its defaults
        sae.residualThreshold = cfg.number(QStringLiteral("residual_threshold")).value_or(1e-2);
        sae.maxIterations = int(cfg.integer(QStringLiteral("max_iterations"), 0, 1'000'000'000).value_or(-1));
        sae.stopOnDuplicateSupport = cfg.boolean(QStringLiteral("stop_on_duplicate_support")).value_or(true);
    }
    // k: an integer for topk; SAELens ≥ 6.11 allows a fractional k for batchtopk (a mean over the batch), which
    // AttnScope does not use (a saved BatchTopK SAE runs on its threshold)
    if (arch == QLatin1String("topk")) {
        if (k == 0) k = int(cfg.integer(QStringLiteral("k"), 0, 1'000'000'000).value_or(0));
        if (k < 1 || k > sae.d_sae)
            throw ModelError(cfgLabel, QStringLiteral("k = %1 must be between 1 and d_sae = %2").arg(k).arg(sae.d_sae));
        sae.k = k;
    } else {
        cfg.number(QStringLiteral("k"));
    }
    sae.rescaleActsByDecoderNorm = top.booleanOr(QStringLiteral("rescale_acts_by_decoder_norm"), false) && arch == QLatin1String("topk");
    return sae;
}

SparseCoder readSaeLensFolder(const QString& folder) {
    const QDir dir(folder);
    SparseCoder sae = readSaeLensConfig(folder);
    const QString& arch = sae.architecture;
    const bool transcoder = arch.endsWith(QLatin1String("transcoder"));
    DictionaryTensors t(SafetensorsFile::open(dir.filePath(QStringLiteral("sae_weights.safetensors")),
                                              QDir::toNativeSeparators(dir.filePath(QStringLiteral("sae_weights.safetensors")))));
    sae.owners.push_back(t.owner());
    const std::int64_t din = sae.d_in, dsae = sae.d_sae, dout = sae.d_out;
    const QString ctx = QStringLiteral("cfg.json (d_in %1, d_sae %2%3)").arg(din).arg(dsae).arg(transcoder ? QStringLiteral(", d_out %1").arg(dout) : QString());
    const bool tied = arch == QLatin1String("matching_pursuit"); // W_enc is W_decᵀ, no b_enc; b_dec only with apply_b_dec_to_input
    if (!tied) sae.W_enc = t.weight(QStringLiteral("W_enc"), {din, dsae}, din, dsae, false, ctx);
    sae.W_dec = t.weight(QStringLiteral("W_dec"), {dsae, dout}, dsae, dout, false, ctx);
    sae.b_dec = t.weight(QStringLiteral("b_dec"), {dout}, 1, dout, false, ctx);
    if (tied) {
        sae.activation = FeatureActivation::MatchingPursuit;
        sae.W_enc = sae.W_dec.t();
        if (!sae.applyBDecToInput) sae.b_dec = Weight{};
        return sae;
    }
    if (arch == QLatin1String("gated")) {
        sae.activation = FeatureActivation::Gated;
        sae.b_gate = t.weight(QStringLiteral("b_gate"), {dsae}, 1, dsae, false, ctx);
        sae.b_mag = t.weight(QStringLiteral("b_mag"), {dsae}, 1, dsae, false, ctx);
        sae.r_mag = t.weight(QStringLiteral("r_mag"), {dsae}, 1, dsae, false, ctx);
    } else {
        sae.b_enc = t.weight(QStringLiteral("b_enc"), {dsae}, 1, dsae, false, ctx);
    }
    if (isJumpReLU(arch)) {
        sae.activation = FeatureActivation::JumpReLU;
        if (arch.endsWith(QLatin1String("batchtopk")) && !t.has(QStringLiteral("threshold")))
            throw ModelError(t.label(), QStringLiteral("a %1 SAE needs its threshold tensor: this is a training checkpoint (topk_threshold, "
                                                       "decoder not folded); SAELens's save_inference_model writes the SAE to "
                                                       "run, as jumprelu with that threshold").arg(arch));
        sae.threshold = t.weight(QStringLiteral("threshold"), {dsae}, 1, dsae, false, ctx, true);
        if (!sae.threshold.allFinite()) throw ModelError(t.label(), QStringLiteral("tensor threshold holds NaN or infinite values"));
    }
    if (arch == QLatin1String("topk")) sae.activation = FeatureActivation::TopK;
    if (arch.endsWith(QLatin1String("skip_transcoder")))
        sae.W_skip = t.weight(QStringLiteral("W_skip"), {dout, din}, din, dout, true, ctx);
    return sae;
}

} // namespace attnscope
