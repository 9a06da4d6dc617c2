#include "app/keyboard_shortcuts.h"

#include <QAction>
#include <QDialog>
#include <QDialogButtonBox>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace attnscope {

namespace {

void collect(const QMenu* menu, const QString& where, QList<ShortcutEntry>& out) {
    for (const QAction* a : menu->actions()) {
        if (a->menu()) {
            collect(a->menu(), where + QStringLiteral(" → ") + a->menu()->title().remove(QLatin1Char('&')), out);
            continue;
        }
        QStringList keys;
        for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
        if (!keys.isEmpty()) out.push_back({keys.join(QStringLiteral(", ")), a->text().remove(QLatin1Char('&')), where});
    }
}

} // namespace

QList<ShortcutEntry> windowShortcuts(const QMainWindow* window) {
    QList<ShortcutEntry> out;
    for (const QAction* a : window->menuBar()->actions())
        if (a->menu()) collect(a->menu(), a->menu()->title().remove(QLatin1Char('&')), out);
    const QString prompt = QObject::tr("Prompt box"), steps = QObject::tr("Attention steps tab");
    out.push_back({QStringLiteral("Return"), QObject::tr("Run the prompt"), prompt});
    out.push_back({QStringLiteral("Alt+Right, N"), QObject::tr("Next step"), steps});
    out.push_back({QStringLiteral("Alt+Left, P"), QObject::tr("Previous step"), steps});
    return out;
}

QString shortcutsHtml(const QList<ShortcutEntry>& entries) {
    QString html = QStringLiteral("<table cellpadding='4'><tr><th align='left'>%1</th><th align='left'>%2</th>"
                                  "<th align='left'>%3</th></tr>")
                       .arg(QObject::tr("Keys"), QObject::tr("Does"), QObject::tr("Where"));
    for (const ShortcutEntry& e : entries)
        html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td><td>%3</td></tr>")
                    .arg(e.keys.toHtmlEscaped(), e.what.toHtmlEscaped(), e.where.toHtmlEscaped());
    return html + QStringLiteral("</table><p>%1</p>").arg(QObject::tr("Arrow keys move between heads while the "
                                                                      "prompt box does not have the focus."));
}

void showShortcutsDialog(QWidget* parent, const QList<ShortcutEntry>& entries) {
    auto* d = new QDialog(parent);
    d->setAttribute(Qt::WA_DeleteOnClose);
    d->setWindowTitle(QObject::tr("Keyboard Shortcuts"));
    d->resize(620, 640);
    auto* text = new QTextBrowser;
    text->setHtml(shortcutsHtml(entries));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    QObject::connect(buttons, &QDialogButtonBox::rejected, d, &QDialog::close);
    auto* v = new QVBoxLayout(d);
    v->addWidget(text);
    v->addWidget(buttons);
    d->show();
}

} // namespace attnscope
