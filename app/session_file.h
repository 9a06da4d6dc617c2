#pragma once
// Session files (.attnscope): what the window shows, to reopen it later or send to someone.
// JSON: {"format": "attnscope-session", "version": 1, "model": PATH, "modelName": NAME,
//        "tokenizer": PATH (a llama2.c checkpoint's tokenizer.bin given apart, absolute; only then),
//        "prompt": TEXT, "prependBos": BOOL, "layer": L, "head": H, "tab": VIEW_ID,
//        "panels": {VIEW_ID: <that panel's saveState()>, ...}}
// (view ids: app/view_ids.h). Reading validates every value and keeps what it can: a file that is not
// a session (bad JSON, another format) is refused; a newer version, a wrong value or a missing model
// is reported and the rest restored.

#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <optional>

namespace attnscope {

/// The version this build writes and the newest it reads fully.
inline constexpr int kSessionVersion = 1;
inline const QString kSessionSuffix = QStringLiteral("attnscope");

struct SessionState {
    QString model;           ///< what the loader opens (":/demo" for the demo)
    QString modelName;       ///< the name it was opened by ("gpt2", "ollama:…"), "" when opened by path
    QString tokenizer;       ///< the tokenizer file it was opened with (--tokenizer), absolute; "" when with the weights
    QString prompt;
    std::optional<bool> prependBos; ///< absent: the model's default (Tokenizer::addsBos)
    int layer = 0, head = 0;
    QString tab;             ///< view id of the selected tab
    QJsonObject panels;      ///< view id → the panel's saved settings
};

QJsonObject sessionToJson(const SessionState& s);
/// Reads a session object. Returns false with *error when `o` is not a session; otherwise fills *out
/// with every valid value (defaults elsewhere) and appends one line per value it skipped to *problems.
bool sessionFromJson(const QJsonObject& o, SessionState* out, QStringList* problems, QString* error);

/// Writes `s` to `path` atomically (QSaveFile). Returns false with *error "<file>: <problem>".
bool writeSessionFile(const QString& path, const SessionState& s, QString* error);
/// Reads `path` (read-only, never modified). Returns false with *error "<file>: <problem>" when the file
/// cannot be read or is not a session; problems as for sessionFromJson.
bool readSessionFile(const QString& path, SessionState* out, QStringList* problems, QString* error);

} // namespace attnscope
