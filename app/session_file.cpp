#include "app/session_file.h"

#include "model/core/errors.h"
#include "model/formats/json_file.h"
#include "views/common/panel_state.h"

#include <QFileInfo>
#include <QJsonDocument>
#include <QSaveFile>

namespace attnscope {

namespace {
const QString kFormat = QStringLiteral("attnscope-session");
}

QJsonObject sessionToJson(const SessionState& s) {
    QJsonObject o{{QStringLiteral("format"), kFormat},
                  {QStringLiteral("version"), kSessionVersion},
                  {QStringLiteral("model"), s.model},
                  {QStringLiteral("prompt"), s.prompt},
                  {QStringLiteral("layer"), s.layer},
                  {QStringLiteral("head"), s.head},
                  {QStringLiteral("tab"), s.tab},
                  {QStringLiteral("panels"), s.panels}};
    if (!s.modelName.isEmpty()) o.insert(QStringLiteral("modelName"), s.modelName);
    if (!s.tokenizer.isEmpty()) o.insert(QStringLiteral("tokenizer"), s.tokenizer);
    if (s.prependBos) o.insert(QStringLiteral("prependBos"), *s.prependBos);
    return o;
}

bool sessionFromJson(const QJsonObject& o, SessionState* out, QStringList* problems, QString* error) {
    if (o.value(QLatin1String("format")).toString() != kFormat) {
        *error = QStringLiteral("not an AttnScope session (no \"format\": \"%1\")").arg(kFormat);
        return false;
    }
    const PanelStateReader r(o, QStringLiteral("session"), problems);
    const int version = r.integer(QStringLiteral("version"), 1, 1 << 30).value_or(1);
    if (version > kSessionVersion)
        r.problem(QStringLiteral("written by a newer AttnScope (session version %1; this one reads version %2): "
                                 "settings it does not know are ignored")
                      .arg(version).arg(kSessionVersion));
    SessionState s;
    if (auto v = r.string(QStringLiteral("model"))) s.model = *v;
    else r.problem(QStringLiteral("no model is named"));
    s.modelName = r.string(QStringLiteral("modelName")).value_or(QString());
    s.tokenizer = r.string(QStringLiteral("tokenizer")).value_or(QString());
    s.prompt = r.string(QStringLiteral("prompt")).value_or(QString());
    s.prependBos = r.boolean(QStringLiteral("prependBos"));
    s.layer = r.integer(QStringLiteral("layer"), 0, 1 << 20).value_or(0);
    s.head = r.integer(QStringLiteral("head"), 0, 1 << 20).value_or(0);
    s.tab = r.string(QStringLiteral("tab")).value_or(QString());
    s.panels = r.object(QStringLiteral("panels")).value_or(QJsonObject());
    *out = s;
    return true;
}

bool writeSessionFile(const QString& path, const SessionState& s, QString* error) {
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(QJsonDocument(sessionToJson(s)).toJson(QJsonDocument::Indented)) < 0 ||
        !f.commit()) {
        *error = QStringLiteral("%1: cannot write: %2").arg(path, f.errorString());
        return false;
    }
    return true;
}

bool readSessionFile(const QString& path, SessionState* out, QStringList* problems, QString* error) {
    try {
        const QJsonObject o = parseJsonObject(readSmallFile(path, path, 64 << 20), path);
        QString why;
        if (sessionFromJson(o, out, problems, &why)) return true;
        *error = QStringLiteral("%1: %2").arg(path, why);
    } catch (const ModelError& e) {
        *error = e.message();
    }
    return false;
}

} // namespace attnscope
