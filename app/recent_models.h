#pragma once
// The models and sessions opened recently (File → Open Recent and the model picker): QSettings
// "recentModels", newest first, at most kMaxRecentModels. Entries are what the user opened: an
// absolute path, a model name ("gpt2", "ollama:llama3.2:1b") or a session file.

#include <QString>
#include <QStringList>

namespace attnscope {

inline constexpr int kMaxRecentModels = 10;

/// The recent entries, newest first.
QStringList recentModels();
/// Puts `entry` first (relative paths made absolute), removing an older copy and entries past the limit.
void addRecentModel(const QString& entry);
void clearRecentModels();
/// True when the entry no longer opens: its file or folder is gone, or its name no longer resolves.
bool isStaleRecentModel(const QString& entry);

} // namespace attnscope
