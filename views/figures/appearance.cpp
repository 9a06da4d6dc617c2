#include "views/figures/appearance.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QEvent>
#include <QMenu>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>
#include <QStyleHints>
#include <functional>
#include <memory>

namespace attnscope {
namespace {

constexpr const char* kThemeKey = "appearance/theme";
constexpr const char* kMapsKey = "appearance/colorMaps";

QString modeName(Appearance::ThemeMode m) {
    switch (m) {
    case Appearance::ThemeMode::Light: return QStringLiteral("light");
    case Appearance::ThemeMode::Dark: return QStringLiteral("dark");
    case Appearance::ThemeMode::FollowDesktop: break;
    }
    return QStringLiteral("follow");
}

Appearance::ThemeMode modeFromName(const QString& s) {
    if (s == QLatin1String("light")) return Appearance::ThemeMode::Light;
    if (s == QLatin1String("dark")) return Appearance::ThemeMode::Dark;
    return Appearance::ThemeMode::FollowDesktop;
}

} // namespace

Appearance& Appearance::instance() {
    static Appearance* a = new Appearance; // lives as long as the process; QSettings needs the app's names set
    return *a;
}

Appearance::Appearance() {
    QSettings s;
    mode_ = modeFromName(s.value(kThemeKey).toString());
    maps_ = s.value(kMapsKey).toString() == QLatin1String("colorblind") ? ColorMaps::ColorBlindSafe : ColorMaps::Standard;
}

void Appearance::install() {
    if (installed_ || !qApp) return;
    installed_ = true;
    qApp->installEventFilter(this);
#if QT_VERSION >= QT_VERSION_CHECK(6, 5, 0)
    connect(QGuiApplication::styleHints(), &QStyleHints::colorSchemeChanged, this, [this] {
        if (mode_ == ThemeMode::FollowDesktop) apply();
    });
#endif
    apply();
}

void Appearance::setThemeMode(ThemeMode mode) {
    QSettings().setValue(kThemeKey, modeName(mode));
    if (mode == mode_) return;
    mode_ = mode;
    if (installed_) apply();
}

void Appearance::setColorMaps(ColorMaps maps) {
    QSettings().setValue(kMapsKey, maps == ColorMaps::ColorBlindSafe ? QStringLiteral("colorblind") : QStringLiteral("standard"));
    if (maps == maps_) return;
    maps_ = maps;
    emit changed();
}

void Appearance::apply() {
    const bool wasDark = dark_;
    applying_ = true;
    switch (mode_) {
    case ThemeMode::Light:
        QApplication::setPalette(lightPalette());
        dark_ = false;
        break;
    case ThemeMode::Dark:
        QApplication::setPalette(darkPalette());
        dark_ = true;
        break;
    case ThemeMode::FollowDesktop: {
        QApplication::setPalette(QPalette()); // no roles set: the desktop's (platform theme's) palette
        const QPalette desktop = QApplication::palette();
        dark_ = desktopIsDark(desktop);
        // a desktop that says "dark" (Qt 6.5+ colour scheme) but hands Qt a light palette
        if (dark_ && desktop.color(QPalette::Window).lightness() >= 128) QApplication::setPalette(darkPalette());
        break;
    }
    }
    applying_ = false;
    if (dark_ != wasDark) emit changed();
}

bool Appearance::eventFilter(QObject* watched, QEvent* event) {
    // an application-wide filter: only the application's own palette-change event matters
    if (event->type() == QEvent::ApplicationPaletteChange && watched == qApp && !applying_ &&
        mode_ == ThemeMode::FollowDesktop) {
        const bool dark = desktopIsDark(QApplication::palette());
        if (dark != dark_) {
            dark_ = dark;
            emit changed();
        }
    }
    return QObject::eventFilter(watched, event);
}

bool Appearance::desktopIsDark(const QPalette& desktopPalette) {
#if QT_VERSION >= QT_VERSION_CHECK(6, 5, 0)
    const Qt::ColorScheme scheme = QGuiApplication::styleHints()->colorScheme();
    if (scheme != Qt::ColorScheme::Unknown) return scheme == Qt::ColorScheme::Dark;
#endif
    return desktopPalette.color(QPalette::Window).lightness() < 128;
}

QPalette Appearance::lightPalette() {
    const std::unique_ptr<QStyle> fusion(QStyleFactory::create(QStringLiteral("Fusion")));
    return fusion ? fusion->standardPalette() : QApplication::style()->standardPalette();
}

QPalette Appearance::darkPalette() {
    QPalette p;
    // Fusion draws frames (check boxes, group boxes) in the window colour darkened 1.4×: the window is light
    // enough that they still show on the base
    const QColor window(0x35, 0x35, 0x35), base(0x19, 0x19, 0x19), text(0xe6, 0xe6, 0xe6);
    const QColor button(0x3c, 0x3c, 0x3c), disabled(0x80, 0x80, 0x80), highlight(0x3d, 0x7a, 0xd6);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0x23, 0x23, 0x23));
    p.setColor(QPalette::ToolTipBase, QColor(0x3a, 0x3a, 0x3a));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x9a, 0x9a, 0x9a));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, button);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
    p.setColor(QPalette::Light, QColor(0x50, 0x50, 0x50));
    p.setColor(QPalette::Midlight, QColor(0x45, 0x45, 0x45));
    p.setColor(QPalette::Mid, QColor(0x60, 0x60, 0x60));
    p.setColor(QPalette::Dark, QColor(0x18, 0x18, 0x18));
    p.setColor(QPalette::Shadow, QColor(0x0a, 0x0a, 0x0a));
    p.setColor(QPalette::Highlight, highlight);
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(0x6c, 0xb4, 0xff));
    p.setColor(QPalette::LinkVisited, QColor(0xb0, 0x8c, 0xff));
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText, QPalette::HighlightedText})
        p.setColor(QPalette::Disabled, role, disabled);
    p.setColor(QPalette::Disabled, QPalette::Highlight, QColor(0x50, 0x50, 0x50));
    return p;
}

QMenu* Appearance::createMenu(QWidget* parent) {
    auto* menu = new QMenu(tr("&Theme"), parent);
    // one exclusive group of radio items; `choose(value)` applies the item's value
    const auto addGroup = [menu](const QList<std::pair<int, QString>>& items, const std::function<void(int)>& choose) {
        auto* group = new QActionGroup(menu);
        for (const auto& [value, text] : items) {
            QAction* a = menu->addAction(text);
            a->setCheckable(true);
            a->setData(value);
            group->addAction(a);
            QObject::connect(a, &QAction::triggered, menu, [choose, value = value] { choose(value); });
        }
        return group;
    };
    QActionGroup* themes = addGroup({{int(ThemeMode::FollowDesktop), tr("Follow &Desktop")},
                                     {int(ThemeMode::Light), tr("&Light")},
                                     {int(ThemeMode::Dark), tr("Dar&k")}},
                                    [this](int v) { setThemeMode(ThemeMode(v)); });
    menu->addSection(tr("Colour maps"));
    QActionGroup* maps = addGroup({{int(ColorMaps::Standard), tr("&Standard (viridis; red–blue diverging)")},
                                   {int(ColorMaps::ColorBlindSafe), tr("&Colour-blind safe (cividis; blue–orange diverging)")}},
                                  [this](int v) { setColorMaps(ColorMaps(v)); });
    const auto sync = [this, themes, maps] {
        for (QAction* a : themes->actions()) a->setChecked(a->data().toInt() == int(mode_));
        for (QAction* a : maps->actions()) a->setChecked(a->data().toInt() == int(maps_));
    };
    sync();
    connect(menu, &QMenu::aboutToShow, menu, sync);
    return menu;
}

} // namespace attnscope
