#pragma once
// How every figure looks: the theme (light, dark, or following the desktop) and the colour maps
// (standard or colour-blind safe), both chosen in one place and stored in QSettings ("appearance/…").
// Following the desktop reads QStyleHints::colorScheme on Qt 6.5+, and otherwise the lightness of the
// desktop palette's window colour; it re-reads them when the application palette changes
// (QEvent::ApplicationPaletteChange, Qt 6.4 has no colorSchemeChanged signal). A manual theme sets the
// application palette; the views restyle their plots on changed().

#include <QObject>
#include <QPalette>

class QMenu;
class QWidget;

namespace attnscope {

class Appearance : public QObject {
    Q_OBJECT
public:
    enum class ThemeMode { FollowDesktop, Light, Dark };
    enum class ColorMaps {
        Standard,      ///< viridis (sequential), RdBu (diverging)
        ColorBlindSafe ///< cividis (sequential), blue–orange (diverging)
    };

    /// The one instance (created on first use, reading QSettings; needs a QGuiApplication).
    static Appearance& instance();

    /// Applies the stored theme to the application and starts following the desktop. Call once after
    /// the QApplication exists (the main window does). Without it the views draw light figures.
    void install();
    bool isInstalled() const { return installed_; }

    ThemeMode themeMode() const { return mode_; }
    /// Stores the mode in QSettings and applies it (emits changed() when the effective theme changes).
    void setThemeMode(ThemeMode mode);
    /// True when figures are drawn dark: a Dark mode, or FollowDesktop on a dark desktop (installed only).
    bool isDark() const { return dark_; }

    ColorMaps colorMaps() const { return maps_; }
    /// Stores the choice in QSettings; emits changed().
    void setColorMaps(ColorMaps maps);

    /// The palettes a manual theme installs (Fusion-like light and dark).
    static QPalette lightPalette();
    static QPalette darkPalette();
    /// Whether the desktop asks for dark: QStyleHints::colorScheme (Qt 6.5+) or the palette's window lightness.
    static bool desktopIsDark(const QPalette& desktopPalette);

    /// "Theme" submenu: Follow desktop / Light / Dark, then Colour maps: Standard / Colour-blind safe
    /// (radio items kept in sync with the settings). Owned by `parent`.
    QMenu* createMenu(QWidget* parent);

signals:
    /// The effective theme or the colour maps changed: figures restyle and redraw.
    void changed();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    Appearance();
    void apply();

    ThemeMode mode_ = ThemeMode::FollowDesktop;
    ColorMaps maps_ = ColorMaps::Standard;
    bool dark_ = false;
    bool installed_ = false;
    bool applying_ = false; ///< our own setPalette is running (its palette-change event is not the desktop's)
};

} // namespace attnscope
