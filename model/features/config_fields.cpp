#include "model/features/config_fields.h"

#include "model/core/errors.h"

#include <cmath>

namespace attnscope {

void configTypeError(const QString& fileLabel, const QString& key, const QString& expected, const QString& got) {
    throw InputError(QStringLiteral("%1: field \"%2\" must be %3, not %4").arg(fileLabel, key, expected, got));
}

QString describeJsonValue(const QJsonValue& v) {
    switch (v.type()) {
    case QJsonValue::Null: return QStringLiteral("null");
    case QJsonValue::Bool: return v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    case QJsonValue::Double: return QStringLiteral("the number %1").arg(v.toDouble(), 0, 'g', 17);
    case QJsonValue::String: {
        QString s = v.toString();
        if (s.size() > 40) s = s.left(40) + QStringLiteral("…");
        return QStringLiteral("the string \"%1\"").arg(s);
    }
    case QJsonValue::Array: return QStringLiteral("an array");
    case QJsonValue::Object: return QStringLiteral("an object");
    case QJsonValue::Undefined: break;
    }
    return QStringLiteral("nothing");
}

ConfigFields::ConfigFields(QJsonObject object, QString fileLabel, QString prefix)
    : object_(std::move(object)), label_(std::move(fileLabel)), prefix_(std::move(prefix)) {}

bool ConfigFields::has(const QString& key) const {
    const QJsonValue v = object_.value(key);
    return !v.isUndefined() && !v.isNull();
}

void ConfigFields::wrongType(const QString& key, const QString& expected) const {
    configTypeError(label_, name(key), expected, describeJsonValue(object_.value(key)));
}

std::optional<QString> ConfigFields::string(const QString& key) const {
    if (!has(key)) return std::nullopt;
    const QJsonValue v = object_.value(key);
    if (!v.isString()) wrongType(key, QStringLiteral("a string"));
    return v.toString();
}

std::optional<bool> ConfigFields::boolean(const QString& key) const {
    if (!has(key)) return std::nullopt;
    const QJsonValue v = object_.value(key);
    if (!v.isBool()) wrongType(key, QStringLiteral("a boolean (true or false)"));
    return v.toBool();
}

std::optional<double> ConfigFields::number(const QString& key) const {
    if (!has(key)) return std::nullopt;
    const QJsonValue v = object_.value(key);
    if (!v.isDouble() || !std::isfinite(v.toDouble())) wrongType(key, QStringLiteral("a number"));
    return v.toDouble();
}

std::optional<qint64> ConfigFields::integer(const QString& key, qint64 lo, qint64 hi) const {
    if (!has(key)) return std::nullopt;
    const QJsonValue v = object_.value(key);
    const double d = v.toDouble();
    if (!v.isDouble() || d != std::floor(d) || d < double(lo) || d > double(hi))
        wrongType(key, QStringLiteral("an integer between %1 and %2").arg(lo).arg(hi));
    return qint64(d);
}

std::optional<ConfigFields> ConfigFields::object(const QString& key) const {
    if (!has(key)) return std::nullopt;
    const QJsonValue v = object_.value(key);
    if (!v.isObject()) wrongType(key, QStringLiteral("an object"));
    return ConfigFields(v.toObject(), label_, name(key) + QLatin1Char('.'));
}

} // namespace attnscope
