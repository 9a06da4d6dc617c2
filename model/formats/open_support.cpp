#include "model/formats/open_support.h"

#include "model/core/errors.h"
#include "model/formats/hf_config.h"

namespace attnscope {

QStringList openableHfModelTypes() { return supportedModelTypes(); }

QStringList openableSafetensorsDtypes() { return {QStringLiteral("F32"), QStringLiteral("F16"), QStringLiteral("BF16")}; }

QStringList openableGgufArchitectures() {
    return {QStringLiteral("llama"),  QStringLiteral("mistral"), QStringLiteral("qwen2"), QStringLiteral("qwen3"),
            QStringLiteral("gemma2"), QStringLiteral("gemma3")};
}

QStringList openableGgufTensorTypes() {
    return {QStringLiteral("F32"),  QStringLiteral("F16"),  QStringLiteral("BF16"), QStringLiteral("Q8_0"),
            QStringLiteral("Q4_0"), QStringLiteral("Q4_1"), QStringLiteral("Q5_0"), QStringLiteral("Q5_1"),
            QStringLiteral("Q4_K"), QStringLiteral("Q5_K"), QStringLiteral("Q6_K")};
}

bool llama2cOpens() { return true; }

namespace {

QString joined(const QStringList& l) { return l.isEmpty() ? QStringLiteral("none yet") : l.join(QStringLiteral(", ")); }

/// The first of `types` that is not in `allowed`, or "".
QString firstNotIn(const QStringList& types, const QStringList& allowed) {
    for (const QString& t : types)
        if (!allowed.contains(t)) return t;
    return {};
}

} // namespace

OpenVerdict canOpen(const ModelProbe& p) {
    if (!p.readable()) return {false, p.problem};
    switch (p.format) {
    case ModelFormat::HfFolder:
    case ModelFormat::Safetensors: {
        if (p.architecture.isEmpty())
            return {false, QStringLiteral("no config.json with a model_type next to the weights")};
        if (!openableHfModelTypes().contains(p.architecture))
            return {false, QStringLiteral("model type '%1' is not supported yet (supported: %2)")
                               .arg(p.architecture, joined(openableHfModelTypes()))};
        if (const QString bad = firstNotIn(p.tensorTypes, openableSafetensorsDtypes()); !bad.isEmpty())
            return {false, QStringLiteral("weights stored as %1 (supported: %2)").arg(bad, joined(openableSafetensorsDtypes()))};
        return {true, {}};
    }
    case ModelFormat::Gguf:
        if (openableGgufArchitectures().isEmpty()) return {false, QStringLiteral("GGUF files cannot be opened yet")};
        if (!openableGgufArchitectures().contains(p.architecture))
            return {false, QStringLiteral("GGUF architecture '%1' is not supported (supported: %2)")
                               .arg(p.architecture, joined(openableGgufArchitectures()))};
        if (const QString bad = firstNotIn(p.tensorTypes, openableGgufTensorTypes()); !bad.isEmpty())
            return {false, QStringLiteral("tensors quantized as %1 are not supported (supported: %2)")
                               .arg(bad, joined(openableGgufTensorTypes()))};
        return {true, {}};
    case ModelFormat::Llama2c:
        if (!llama2cOpens()) return {false, QStringLiteral("llama2.c checkpoints cannot be opened yet")};
        if (!p.detail.contains(QLatin1String("legacy")))
            return {false, QStringLiteral("%1: only the legacy export (export.py --version 0) is supported").arg(p.detail)};
        return {true, {}};
    case ModelFormat::Unknown: break;
    }
    return {false, QStringLiteral("not a model AttnScope knows")};
}

void requireOpenable(const QString& path) {
    const ModelProbe p = probeModel(path);
    if (!p.readable() || p.format == ModelFormat::Unknown) return;
    if (const OpenVerdict v = canOpen(p); !v.ok) throw ModelError(path, v.reason);
}

} // namespace attnscope
