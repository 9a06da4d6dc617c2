#pragma once
// Typed members of a dictionary config: SAELens cfg.json, Gemma Scope 2 config.json, Llama Scope hyperparams.json
// (and, through configTypeError, circuit-tracer's config.yaml). Every boolean, number and string member a reader
// uses goes through here, so a member of the wrong JSON type is refused with one message naming the file and the
// field, never read as its default (QJsonValue::toBool("yes") is false, toString(5) is "").
// An absent member and a JSON null both read as "not given" (std::nullopt): SAELens writes null for unset optional
// fields (hook_head_index, norm_scaling_factor, …).

#include <QJsonObject>
#include <QJsonValue>
#include <QString>
#include <optional>

namespace attnscope {

/// InputError "FILE: field \"KEY\" must be EXPECTED, not GOT" (GOT e.g. "the string \"yes\"").
[[noreturn]] void configTypeError(const QString& fileLabel, const QString& key, const QString& expected, const QString& got);

/// How a JSON value is named in those messages: "the string \"yes\"", "the number 3", "true", "null", "an array",
/// "an object".
QString describeJsonValue(const QJsonValue& v);

/// A JSON object of a config file, read member by member with type checks. `prefix` names nested objects in
/// messages ("metadata." → field "metadata.hook_name").
class ConfigFields {
public:
    ConfigFields(QJsonObject object, QString fileLabel, QString prefix = {});

    const QJsonObject& object() const { return object_; }
    const QString& fileLabel() const { return label_; }
    /// Present and not null.
    bool has(const QString& key) const;

    std::optional<QString> string(const QString& key) const;
    std::optional<bool> boolean(const QString& key) const;
    /// A finite number.
    std::optional<double> number(const QString& key) const;
    /// A whole number in [lo, hi]; outside it: InputError "… must be an integer between LO and HI, not …".
    std::optional<qint64> integer(const QString& key, qint64 lo, qint64 hi) const;
    /// A nested object, read with the same checks (its fields named "KEY.member").
    std::optional<ConfigFields> object(const QString& key) const;

    QString stringOr(const QString& key, const QString& fallback) const { return string(key).value_or(fallback); }
    bool booleanOr(const QString& key, bool fallback) const { return boolean(key).value_or(fallback); }

    /// The field's name as messages give it (prefix + key).
    QString name(const QString& key) const { return prefix_ + key; }
    [[noreturn]] void wrongType(const QString& key, const QString& expected) const;

private:
    QJsonObject object_;
    QString label_, prefix_;
};

} // namespace attnscope
