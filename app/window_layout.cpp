#include "app/window_layout.h"

#include <QMainWindow>
#include <QSettings>
#include <QSplitter>

namespace attnscope {

namespace {

/// "QMainWindow/QSplitter#0/QTabWidget#0/…": class names and the index among siblings of that class.
QString pathOf(const QWidget* w, const QWidget* root) {
    QStringList parts;
    for (const QObject* o = w; o && o != root; o = o->parent()) {
        int index = 0;
        if (const QObject* parent = o->parent())
            for (const QObject* sibling : parent->children()) {
                if (sibling == o) break;
                if (sibling->metaObject() == o->metaObject()) ++index;
            }
        parts.prepend(QStringLiteral("%1#%2").arg(QLatin1String(o->metaObject()->className())).arg(index));
    }
    return parts.join(QLatin1Char('/')).replace(QLatin1String("::"), QLatin1String("_"));
}

} // namespace

void saveWindowLayout(const QMainWindow* window) {
    QSettings s;
    s.setValue(QStringLiteral("window/geometry"), window->saveGeometry());
    s.setValue(QStringLiteral("window/state"), window->saveState());
    s.beginGroup(QStringLiteral("window/splitters"));
    for (const QSplitter* sp : window->findChildren<QSplitter*>()) s.setValue(pathOf(sp, window), sp->saveState());
    s.endGroup();
}

void restoreWindowLayout(QMainWindow* window) {
    QSettings s;
    if (s.contains(QStringLiteral("window/geometry"))) window->restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
    if (s.contains(QStringLiteral("window/state"))) window->restoreState(s.value(QStringLiteral("window/state")).toByteArray());
    s.beginGroup(QStringLiteral("window/splitters"));
    for (QSplitter* sp : window->findChildren<QSplitter*>())
        if (const QString key = pathOf(sp, window); s.contains(key)) sp->restoreState(s.value(key).toByteArray());
    s.endGroup();
}

} // namespace attnscope
