#pragma once
// A JSON Schema checker for the subset of draft-07 that Neuronpedia's graph-schema.json uses, so the tests can check a
// written graph file against the schema without Python: type (a name or a list of names; "integer" is a whole number),
// properties, required, items (one schema), additionalProperties (a schema or false), minItems, maxItems, enum.
// Annotations ($id, $schema, title, version, description, examples, default) are skipped, and so is prefixItems (a
// draft 2020-12 keyword that draft-07 validators ignore). Any other keyword is reported as a violation, so a schema
// using more than this checker knows cannot pass unnoticed.

#include <QJsonObject>
#include <QJsonValue>
#include <QStringList>

namespace attnscope::test {

/// Every way `value` breaks `schema`, each "PATH: problem" (PATH from `path`, e.g. "$.nodes[3].feature"); empty when
/// it conforms.
QStringList jsonSchemaViolations(const QJsonValue& value, const QJsonObject& schema, const QString& path = QStringLiteral("$"));

} // namespace attnscope::test
