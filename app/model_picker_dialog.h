#pragma once
// File → Open Recent/Installed…: the models already on this machine (model/discovery/installed_models.h)
// and the recently opened ones, one row each with its source, architecture, format, dtype or
// quantization, size and whether AttnScope can open it (and why not). The list is read in the
// background (headers only) with progress and Cancel; folders can be added to the search (QSettings
// "modelFolders"). Double-click or Open opens a row; rows that cannot be opened say why and stay disabled.

#include "model/discovery/installed_models.h"
#include "views/common/background_task.h"

#include <QDialog>

class QLabel;
class QLineEdit;
class QPushButton;
class QSortFilterProxyModel;
class QStandardItemModel;
class QTableView;

namespace attnscope {

class ModelPickerDialog : public QDialog {
    Q_OBJECT
public:
    /// Columns of the table.
    enum Column { NameColumn, SourceColumn, ArchitectureColumn, FormatColumn, DtypeColumn, SizeColumn,
                  ParametersColumn, StatusColumn, ColumnCount };
    /// Item data of the name column: what to open (InstalledModel::openName).
    static constexpr int OpenNameRole = Qt::UserRole + 1;

    explicit ModelPickerDialog(QWidget* parent = nullptr);

    /// Lists again (in the background): recent entries first, then every store.
    void refresh();
    /// Blocks (processing events) until the listing is done (tests).
    void waitForScan() { scan_.waitForIdle(); }
    /// One row: where it was found ("Recent", "Hugging Face cache", "Ollama", ...) and what it is.
    struct Entry {
        QString source;
        InstalledModel model;
    };
    /// The entries shown, in source-row order (before sorting and filtering): recent ones first.
    const QList<Entry>& entries() const { return entries_; }
    QTableView* table() const { return table_; }
    QLineEdit* filter() const { return filter_; }
    /// The searched folders line under the table.
    QString locationsText() const;

    /// Folders the user added to the search (QSettings "modelFolders").
    static QStringList userFolders();
    static void setUserFolders(const QStringList& folders);
    void addFolder(const QString& dir);

    /// Opens the entry in source row `row` (emits modelChosen and closes) if it can be opened.
    bool openRow(int row);

signals:
    /// The user chose a model: a name or path for MainWindow::openModel, or a session file.
    void modelChosen(const QString& nameOrPath);

private:
    void fill();
    int currentSourceRow() const;
    void updateButtons();

    QList<Entry> entries_;
    BackgroundTask scan_;
    QStandardItemModel* model_;
    QSortFilterProxyModel* proxy_;
    QTableView* table_;
    QLineEdit* filter_;
    QLabel* locations_;
    QPushButton* open_;
    QPushButton* removeFolder_;
};

} // namespace attnscope
