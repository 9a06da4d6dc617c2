#include "support/json_schema_check.h"

#include <QJsonArray>
#include <cmath>

namespace attnscope::test {

namespace {

bool hasType(const QJsonValue& v, const QString& type) {
    if (type == QLatin1String("object")) return v.isObject();
    if (type == QLatin1String("array")) return v.isArray();
    if (type == QLatin1String("string")) return v.isString();
    if (type == QLatin1String("boolean")) return v.isBool();
    if (type == QLatin1String("null")) return v.isNull();
    if (type == QLatin1String("number")) return v.isDouble();
    if (type == QLatin1String("integer")) return v.isDouble() && std::isfinite(v.toDouble()) && v.toDouble() == std::floor(v.toDouble());
    return false;
}

QString typeName(const QJsonValue& v) {
    switch (v.type()) {
    case QJsonValue::Null: return QStringLiteral("null");
    case QJsonValue::Bool: return QStringLiteral("boolean");
    case QJsonValue::Double: return QStringLiteral("number");
    case QJsonValue::String: return QStringLiteral("string");
    case QJsonValue::Array: return QStringLiteral("array");
    case QJsonValue::Object: return QStringLiteral("object");
    case QJsonValue::Undefined: break;
    }
    return QStringLiteral("undefined");
}

} // namespace

QStringList jsonSchemaViolations(const QJsonValue& value, const QJsonObject& schema, const QString& path) {
    static const QStringList kSkipped{"$id", "$schema", "title", "version", "description", "examples", "default", "prefixItems"};
    static const QStringList kChecked{"type", "properties", "required", "items", "additionalProperties", "minItems", "maxItems", "enum"};
    QStringList out;
    for (auto it = schema.begin(); it != schema.end(); ++it)
        if (!kSkipped.contains(it.key()) && !kChecked.contains(it.key()))
            out << QStringLiteral("%1: the schema's keyword \"%2\" is not one this checker knows").arg(path, it.key());
    if (schema.contains(QLatin1String("type"))) {
        const QJsonValue t = schema.value(QLatin1String("type"));
        QStringList types;
        if (t.isArray())
            for (const QJsonValue& x : t.toArray()) types << x.toString();
        else
            types << t.toString();
        bool ok = false;
        for (const QString& type : types) ok = ok || hasType(value, type);
        if (!ok) return out << QStringLiteral("%1: is %2, not %3").arg(path, typeName(value), types.join(QLatin1String(" or ")));
    }
    if (schema.contains(QLatin1String("enum")) && !schema.value(QLatin1String("enum")).toArray().contains(value))
        out << QStringLiteral("%1: is not one of the enum's values").arg(path);
    if (value.isObject()) {
        const QJsonObject o = value.toObject();
        for (const QJsonValue& r : schema.value(QLatin1String("required")).toArray())
            if (!o.contains(r.toString())) out << QStringLiteral("%1: lacks the required member \"%2\"").arg(path, r.toString());
        const QJsonObject properties = schema.value(QLatin1String("properties")).toObject();
        const QJsonValue additional = schema.value(QLatin1String("additionalProperties"));
        for (auto it = o.begin(); it != o.end(); ++it) {
            const QString at = path + QLatin1Char('.') + it.key();
            if (properties.contains(it.key()))
                out << jsonSchemaViolations(it.value(), properties.value(it.key()).toObject(), at);
            else if (additional.isObject())
                out << jsonSchemaViolations(it.value(), additional.toObject(), at);
            else if (additional.isBool() && !additional.toBool())
                out << QStringLiteral("%1: is not allowed (additionalProperties false)").arg(at);
        }
    }
    if (value.isArray()) {
        const QJsonArray a = value.toArray();
        if (schema.contains(QLatin1String("minItems")) && a.size() < schema.value(QLatin1String("minItems")).toInt())
            out << QStringLiteral("%1: has %2 items, fewer than minItems").arg(path).arg(a.size());
        if (schema.contains(QLatin1String("maxItems")) && a.size() > schema.value(QLatin1String("maxItems")).toInt())
            out << QStringLiteral("%1: has %2 items, more than maxItems").arg(path).arg(a.size());
        if (schema.value(QLatin1String("items")).isObject())
            for (int i = 0; i < a.size(); ++i)
                out << jsonSchemaViolations(a[i], schema.value(QLatin1String("items")).toObject(), QStringLiteral("%1[%2]").arg(path).arg(i));
    }
    return out;
}

} // namespace attnscope::test
