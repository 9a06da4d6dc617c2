// libFuzzer target: parseShardedIndex (model.safetensors.index.json) on arbitrary bytes.
// ModelError is an expected rejection; an accepted index must only name shards inside the folder.

#include "model/core/errors.h"
#include "model/formats/sharded_index.h"

#include <QDir>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace attnscope;
    try {
        const ShardedIndex index = parseShardedIndex(QByteArray(reinterpret_cast<const char*>(data), qsizetype(size)),
                                                     QStringLiteral("model.safetensors.index.json"));
        if (index.weightMap.isEmpty() || index.shardFiles.isEmpty()) std::abort();
        for (const QString& shard : index.shardFiles) {
            const QString clean = QDir::cleanPath(QStringLiteral("/model/") + shard);
            if (shard.isEmpty() || QDir::isAbsolutePath(shard) ||
                (clean != QStringLiteral("/model") && !clean.startsWith(QStringLiteral("/model/"))) ||
                shard.contains(QLatin1Char('\\')))
                std::abort();
        }
    } catch (const ModelError&) {
    }
    return 0;
}
