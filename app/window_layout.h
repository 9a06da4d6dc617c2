#pragma once
// The window's geometry, tool bar state and every splitter's sizes, remembered in QSettings
// ("window/geometry", "window/state", "window/splitters/<path>"). A splitter is keyed by its place in
// the widget tree, so a splitter added in a later version starts with its default sizes.

class QMainWindow;

namespace attnscope {

void saveWindowLayout(const QMainWindow* window);
/// Restores what saveWindowLayout stored (nothing the first time).
void restoreWindowLayout(QMainWindow* window);

} // namespace attnscope
