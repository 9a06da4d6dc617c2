#include "model/formats/sharded_index.h"

#include "model/core/errors.h"
#include "model/formats/json_file.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonObject>
#include <QSet>

namespace attnscope {

namespace {
/// True if `name` is a relative path whose components never leave the folder it is resolved in.
bool staysInsideFolder(const QString& name) {
    if (name.isEmpty() || QDir::isAbsolutePath(name) || name.startsWith(QLatin1Char('/')) ||
        name.startsWith(QLatin1Char(':')) || name.contains(QLatin1Char('\\')) || name.contains(QLatin1Char(':')))
        return false;
    for (const QString& part : name.split(QLatin1Char('/')))
        if (part == QLatin1String("..")) return false;
    return true;
}
} // namespace

ShardedIndex parseShardedIndex(const QByteArray& json, const QString& file) {
    const QJsonValue mapValue = parseJsonObject(json, file).value(QLatin1String("weight_map"));
    if (!mapValue.isObject()) throw ModelError(file, QStringLiteral("missing weight_map object"));
    const QJsonObject map = mapValue.toObject();
    if (map.isEmpty()) throw ModelError(file, QStringLiteral("weight_map is empty"));

    ShardedIndex index;
    QSet<QString> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
        if (!it.value().isString())
            throw ModelError(file, QStringLiteral("weight_map entry for tensor %1 is not a file name").arg(it.key()));
        const QString shard = it.value().toString();
        if (!staysInsideFolder(shard))
            throw ModelError(file, QStringLiteral("shard '%1' for tensor %2 is outside the model folder").arg(shard, it.key()));
        index.weightMap.insert(it.key(), shard);
        if (!seen.contains(shard)) {
            seen.insert(shard);
            index.shardFiles << shard;
        }
    }
    return index;
}

ShardedIndex loadShardedIndex(const QString& path, const QString& fileLabel) {
    const QString label = fileLabel.isEmpty() ? QFileInfo(path).fileName() : fileLabel;
    return parseShardedIndex(readSmallFile(path, label, 256 * 1024 * 1024), label);
}

} // namespace attnscope
