#pragma once
// gzip files (RFC 1952), read through zlib (Debian zlib1g-dev) when the build found it: Neuronpedia's exports
// (explanations/batch-N.jsonl.gz) are gzip. Without zlib, reading one fails with a clear error naming the file.

#include <QByteArray>
#include <QString>

namespace attnscope {

/// True when this build reads gzip (zlib was found).
bool gzipSupported();

/// True when `bytes` start with gzip's magic (1f 8b).
bool looksGzipped(const QByteArray& bytes);

/// Reads `path` and inflates every gzip member in it (as gzip -d does with concatenated members), stopping at
/// `maxBytes` of output: a file that inflates to more is refused before more is allocated, so a small file cannot
/// expand into an out-of-memory kill. Throws ModelError(fileLabel, …): file not found, unreadable, larger than
/// maxBytes on disk, "not a gzip file", "corrupt gzip data: <zlib's message>", "truncated gzip data",
/// "inflates to more than N bytes", or "gzip files need zlib (install zlib1g-dev and rebuild)".
QByteArray readGzipFile(const QString& path, const QString& fileLabel, qint64 maxBytes);

} // namespace attnscope
