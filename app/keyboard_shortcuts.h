#pragma once
// Help → Keyboard Shortcuts: every key the window answers to, read from its menus' actions (so the
// list cannot go stale) plus the keys that views handle themselves.

#include <QList>
#include <QString>

class QMainWindow;
class QWidget;

namespace attnscope {

struct ShortcutEntry {
    QString keys;  ///< "Ctrl+O", "Right", "Alt+Right, N"
    QString what;  ///< "Open…"
    QString where; ///< "File", "Navigate", "Attention steps tab"
};

/// The shortcuts of `window`'s menu bar (menu path as `where`), then those of the views.
QList<ShortcutEntry> windowShortcuts(const QMainWindow* window);
/// The list as an HTML table.
QString shortcutsHtml(const QList<ShortcutEntry>& entries);
/// Shows the list in a dialog.
void showShortcutsDialog(QWidget* parent, const QList<ShortcutEntry>& entries);

} // namespace attnscope
