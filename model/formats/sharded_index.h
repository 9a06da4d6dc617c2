#pragma once
// Sharded Hugging Face checkpoints: model.safetensors.index.json
// {"metadata": {...}, "weight_map": {tensor name: shard file name}} (transformers modeling_utils).

#include <QByteArray>
#include <QMap>
#include <QString>
#include <QStringList>

namespace attnscope {

struct ShardedIndex {
    QMap<QString, QString> weightMap; ///< tensor name -> shard file, relative to the model folder
    QStringList shardFiles;           ///< distinct shard names, in first-seen order of the sorted weight map
};

/// Parses an index file's text. Shard names must be relative paths that stay inside the model folder:
/// absolute paths (including Qt resource ":/" paths and drive letters), backslashes and ".."
/// components are rejected. Throws ModelError(fileLabel, problem) for invalid JSON, a missing or
/// empty weight_map, a non-string entry or an unsafe shard name (naming the tensor and shard).
ShardedIndex parseShardedIndex(const QByteArray& json, const QString& fileLabel);

/// Reads `path` and parses it (see parseShardedIndex); errors name `fileLabel` (default: file name).
ShardedIndex loadShardedIndex(const QString& path, const QString& fileLabel = {});

} // namespace attnscope
