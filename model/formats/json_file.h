#pragma once
// Small JSON files of a model folder (config.json, model.safetensors.index.json): read and parse
// with errors that name the file.

#include <QByteArray>
#include <QJsonObject>
#include <QString>

namespace attnscope {

/// Parses `json` as a JSON object. Throws ModelError(fileLabel, "not valid JSON: <reason> at offset N")
/// or ModelError(fileLabel, "not a JSON object").
QJsonObject parseJsonObject(const QByteArray& json, const QString& fileLabel);

/// Reads at most `maxBytes` from `path` (read-only). Throws ModelError(fileLabel, ...) if the file is
/// missing ("file not found (<path>)"), unreadable or larger than maxBytes.
QByteArray readSmallFile(const QString& path, const QString& fileLabel, qint64 maxBytes);

} // namespace attnscope
