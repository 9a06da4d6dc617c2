#pragma once
// The context menu every figure shares: Copy image, Copy values (TSV), Export PNG/SVG/PDF/CSV…, and
// Reset zoom for figures that zoom. Built once here and installed on each view (heatmaps, charts,
// tables, the head grid, the block diagram); the actions read the view through its Figure interface.
// Results and errors go to the window's status bar when it has one.

#include <QObject>
#include <QPointer>
#include <QString>

class QMenu;
class QWidget;

namespace attnscope {

class Figure;

class FigureActions : public QObject {
    Q_OBJECT
public:
    /// Installs the menu on `widget` (Qt::CustomContextMenu; a scroll area's viewport positions are
    /// mapped). `baseName` names the suggested export files ("attention_L0H1").
    FigureActions(QWidget* widget, Figure* figure, const QString& baseName);

    void setBaseName(const QString& name) { baseName_ = name; }
    QString baseName() const { return baseName_; }

    /// The menu as shown (actions enabled for what the figure has now). Caller owns it.
    QMenu* createMenu(QWidget* parent = nullptr);

    /// Copies figureImage at the on-screen size and the screen's device pixel ratio (at least 2 for a
    /// crisp paste) as an image. Returns false when the figure is empty.
    bool copyImage();
    /// Copies figureValues as TSV (text/plain and text/tab-separated-values). False when empty.
    bool copyValues();
    /// Writes the figure to `path` (format from the suffix) at its on-screen size; PNG at `scale`.
    /// Returns "" or the error.
    QString exportTo(const QString& path, double scale = 2.0);
    /// Asks for a file name for `suffix` ("png", "svg", "pdf", "csv") and exports.
    void exportDialog(const QString& suffix);

signals:
    /// A file was written, or something was copied (for status lines).
    void done(const QString& message);

private:
    void report(const QString& message);

    QPointer<QWidget> widget_;
    Figure* figure_;
    QString baseName_;
};

} // namespace attnscope
