#include "model/formats/json_file.h"

#include "model/core/errors.h"

#include <QFile>
#include <QJsonDocument>

namespace attnscope {

QJsonObject parseJsonObject(const QByteArray& json, const QString& file) {
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &err);
    if (err.error != QJsonParseError::NoError)
        throw ModelError(file, QStringLiteral("not valid JSON: %1 at offset %2").arg(err.errorString()).arg(err.offset));
    if (!doc.isObject()) throw ModelError(file, QStringLiteral("not a JSON object"));
    return doc.object();
}

QByteArray readSmallFile(const QString& path, const QString& file, qint64 maxBytes) {
    QFile f(path);
    if (!f.exists()) throw ModelError(file, QStringLiteral("file not found (%1)").arg(path));
    if (!f.open(QIODevice::ReadOnly)) throw ModelError(file, QStringLiteral("cannot open for reading: %1").arg(f.errorString()));
    if (f.size() > maxBytes) throw ModelError(file, QStringLiteral("file is too large (%1 bytes; at most %2)").arg(f.size()).arg(maxBytes));
    return f.readAll();
}

} // namespace attnscope
