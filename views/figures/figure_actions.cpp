#include "views/figures/figure_actions.h"

#include "views/figures/figure.h"
#include "views/figures/figure_export.h"

#include <QAbstractScrollArea>
#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QFileDialog>
#include <QMainWindow>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QStatusBar>
#include <cmath>

namespace attnscope {

FigureActions::FigureActions(QWidget* widget, Figure* figure, const QString& baseName)
    : QObject(widget), widget_(widget), figure_(figure), baseName_(baseName) {
    widget->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(widget, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        const auto* area = qobject_cast<QAbstractScrollArea*>(widget_.data());
        const QPoint global = area ? area->viewport()->mapToGlobal(pos) : widget_->mapToGlobal(pos);
        QMenu* menu = createMenu(widget_);
        menu->setAttribute(Qt::WA_DeleteOnClose);
        menu->popup(global);
    });
}

QMenu* FigureActions::createMenu(QWidget* parent) {
    auto* menu = new QMenu(parent);
    const bool have = figure_->hasFigureData();
    QAction* image = menu->addAction(tr("Copy &Image"), this, [this] { copyImage(); });
    QAction* values = menu->addAction(tr("Copy &Values"), this, [this] { copyValues(); });
    values->setToolTip(tr("Tab-separated: header row and column labels, then the exact numbers"));
    menu->addSeparator();
    const std::pair<QString, QString> formats[] = {{QStringLiteral("png"), tr("Export &PNG…")},
                                                   {QStringLiteral("svg"), tr("Export &SVG…")},
                                                   {QStringLiteral("pdf"), tr("Export P&DF…")},
                                                   {QStringLiteral("csv"), tr("Export &CSV…")}};
    QList<QAction*> exports;
    for (const auto& [suffix, text] : formats)
        exports << menu->addAction(text, this, [this, suffix = suffix] { exportDialog(suffix); });
    for (QAction* a : QList<QAction*>{image, values} + exports) a->setEnabled(have);
    if (figure_->isZoomable()) {
        menu->addSeparator();
        menu->addAction(tr("&Reset Zoom"), this, [this] { figure_->resetZoom(); })->setEnabled(have);
    }
    return menu;
}

bool FigureActions::copyImage() {
    const double dpr = widget_ ? widget_->devicePixelRatioF() : 1.0;
    const QImage image = figureImage(*figure_, {}, std::max(2.0, dpr));
    if (image.isNull()) return false;
    auto* mime = new QMimeData;
    mime->setImageData(image);
    QApplication::clipboard()->setMimeData(mime);
    report(tr("Copied the figure as a %1×%2 image.").arg(image.width()).arg(image.height()));
    return true;
}

bool FigureActions::copyValues() {
    if (!figure_->hasFigureData()) return false;
    const ValueTable values = figure_->figureValues();
    if (values.isEmpty()) return false;
    const QString tsv = values.toTsv();
    auto* mime = new QMimeData;
    mime->setText(tsv);
    mime->setData(QStringLiteral("text/tab-separated-values"), tsv.toUtf8());
    QApplication::clipboard()->setMimeData(mime);
    report(tr("Copied %1 × %2 values.").arg(values.cells.size()).arg(values.colLabels.size()));
    return true;
}

QString FigureActions::exportTo(const QString& path, double scale) {
    QString error;
    if (!exportFigure(*figure_, path, {}, scale, &error)) return error;
    report(tr("Exported %1").arg(path));
    return {};
}

void FigureActions::exportDialog(const QString& suffix) {
    if (!figure_->hasFigureData()) return;
    const QString filter = suffix == QLatin1String("csv") ? tr("CSV (*.csv)")
                                                          : tr("%1 (*.%2)").arg(suffix.toUpper(), suffix);
    QString path = QFileDialog::getSaveFileName(widget_, tr("Export figure"),
                                                QDir::home().filePath(baseName_ + QLatin1Char('.') + suffix), filter);
    if (path.isEmpty()) return;
    if (QFileInfo(path).suffix().isEmpty()) path += QLatin1Char('.') + suffix;
    if (const QString error = exportTo(path); !error.isEmpty())
        QMessageBox::warning(widget_, tr("Export failed"), error);
}

void FigureActions::report(const QString& message) {
    emit done(message);
    if (widget_)
        if (auto* window = qobject_cast<QMainWindow*>(widget_->window())) window->statusBar()->showMessage(message, 6000);
}

} // namespace attnscope
