#include "model/discovery/model_name.h"

#include "model/discovery/hf_cache.h"
#include "model/discovery/ollama_store.h"

#include <QFileInfo>
#include <QRegularExpression>

namespace attnscope {

ResolvedModel resolveModelName(const QString& nameOrPath) {
    const QString name = nameOrPath.trimmed();
    if (name.isEmpty() || (name == QLatin1String("demo") && !QFileInfo::exists(name))) return {QStringLiteral(":/demo"), {}};
    if (name == QLatin1String("demo-variant") && !QFileInfo::exists(name)) {
        if (QFileInfo::exists(QStringLiteral(":/demo-variant/config.json"))) return {QStringLiteral(":/demo-variant"), {}};
        return {{}, QStringLiteral("demo-variant: no such file or folder, and this program has no bundled demo-variant")};
    }
    if (name.startsWith(QLatin1String("ollama:"))) {
        const OllamaModel m = findOllamaModel(ollamaModelsDir(), name.mid(7));
        return m.problem.isEmpty() ? ResolvedModel{m.blob, {}} : ResolvedModel{{}, m.problem};
    }
    const bool explicitHf = name.startsWith(QLatin1String("hf:"));
    if (!explicitHf && QFileInfo::exists(name)) return {name, {}};
    const QString repoId = explicitHf ? name.mid(3) : name;
    // huggingface_hub's repo id rule: [ORG/]NAME of letters, digits, '-', '_', '.'
    static const QRegularExpression repoIdPattern(QStringLiteral("^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$"));
    if (!repoIdPattern.match(repoId).hasMatch() || repoId.contains(QLatin1String("..")) || repoId.contains(QLatin1String("--")))
        return {{}, QStringLiteral("%1: no such file or folder").arg(name)};
    const HfCachedModel m = findHfCachedModel(hfHubCacheDir(), repoId);
    if (!m.snapshot.isEmpty()) return {m.snapshot, {}};
    return {{}, explicitHf ? QStringLiteral("%1: %2").arg(repoId, m.problem)
                           : QStringLiteral("%1: no such file or folder, and %2").arg(name, m.problem)};
}

} // namespace attnscope
