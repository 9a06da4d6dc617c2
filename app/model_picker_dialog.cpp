#include "app/model_picker_dialog.h"

#include "app/model_open_dialog.h"
#include "app/recent_models.h"
#include "app/session_file.h"
#include "model/discovery/model_name.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

namespace attnscope {

namespace {

const QString kFoldersKey = QStringLiteral("modelFolders");

/// "124M", "1.1B" parameters.
QString parameterCount(std::int64_t n) {
    if (n <= 0) return {};
    if (n >= 1'000'000'000) return QStringLiteral("%1B").arg(double(n) / 1e9, 0, 'f', 1);
    if (n >= 1'000'000) return QStringLiteral("%1M").arg(double(n) / 1e6, 0, 'f', n >= 100'000'000 ? 0 : 1);
    if (n >= 1'000) return QStringLiteral("%1K").arg(double(n) / 1e3, 0, 'f', 0);
    return QString::number(n);
}

/// A recent entry as a picker row: a session file, or a model name/path resolved and probed.
ModelPickerDialog::Entry recentEntry(const QString& entry) {
    ModelPickerDialog::Entry e{QObject::tr("Recent"), {}};
    InstalledModel& m = e.model;
    m.name = entry.startsWith(QLatin1Char(':')) || !QFileInfo::exists(entry) ? entry : QFileInfo(entry).fileName();
    m.openName = entry;
    if (entry.endsWith(QLatin1Char('.') + kSessionSuffix)) {
        m.path = entry;
        m.probe.path = entry;
        m.probe.detail = QObject::tr("session");
        m.verdict = QFileInfo::exists(entry) ? OpenVerdict{true, {}} : OpenVerdict{false, QObject::tr("the file is gone")};
        return e;
    }
    const ResolvedModel r = resolveModelName(entry);
    if (!r.ok()) {
        m.probe.problem = r.error;
    } else {
        m.path = r.path;
        m.probe = probeModel(r.path);
    }
    m.verdict = canOpen(m.probe);
    return e;
}

} // namespace

ModelPickerDialog::ModelPickerDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Open Recent or Installed Model"));
    resize(1100, 560);
    auto* intro = new QLabel(tr("Models found on this machine (read from their headers; weights are not loaded). "
                                "Double-click one to open it. Models AttnScope cannot open yet say why."));
    intro->setWordWrap(true);
    filter_ = new QLineEdit;
    filter_->setPlaceholderText(tr("Filter by name, source, architecture…"));
    filter_->setClearButtonEnabled(true);

    model_ = new QStandardItemModel(0, ColumnCount, this);
    model_->setHorizontalHeaderLabels({tr("Model"), tr("Source"), tr("Architecture"), tr("Format"), tr("Dtype / quant"),
                                       tr("Size"), tr("Parameters"), tr("Can open?")});
    proxy_ = new QSortFilterProxyModel(this);
    proxy_->setSourceModel(model_);
    proxy_->setFilterKeyColumn(-1);
    proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
    proxy_->setSortRole(Qt::UserRole);
    table_ = new QTableView;
    table_->setModel(proxy_);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->verticalHeader()->setVisible(false);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setSectionResizeMode(NameColumn, QHeaderView::Stretch);
    table_->horizontalHeader()->setSectionResizeMode(StatusColumn, QHeaderView::Stretch);
    table_->setSortingEnabled(true);
    table_->sortByColumn(-1, Qt::AscendingOrder); // keep the listing order (recent first) until a header is clicked

    locations_ = new QLabel;
    locations_->setWordWrap(true);
    locations_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* bar = new QProgressBar;
    bar->setMaximumWidth(240);
    auto* cancel = new QPushButton(tr("Cancel"));
    scan_.attach(bar, cancel);

    auto* addButton = new QPushButton(tr("Add Folder…"));
    addButton->setToolTip(tr("Search another folder for models (kept for the next time)."));
    removeFolder_ = new QPushButton(tr("Remove Folder"));
    removeFolder_->setToolTip(tr("Stop searching the folder of the selected row."));
    auto* browse = new QPushButton(tr("Browse…"));
    browse->setToolTip(tr("Open a model file or folder that is not listed."));
    auto* demo = new QPushButton(tr("Demo Model"));
    demo->setToolTip(tr("The bundled 2-layer GPT-2 trained on the King James Bible."));
    auto* rescan = new QPushButton(tr("Refresh"));
    open_ = new QPushButton(tr("Open"));
    open_->setDefault(true);
    auto* close = new QPushButton(tr("Close"));

    auto* top = new QHBoxLayout;
    top->addWidget(filter_, 1);
    top->addWidget(bar);
    top->addWidget(cancel);
    auto* buttons = new QHBoxLayout;
    for (QPushButton* b : {addButton, removeFolder_, rescan, browse, demo}) buttons->addWidget(b);
    buttons->addStretch(1);
    buttons->addWidget(open_);
    buttons->addWidget(close);
    auto* v = new QVBoxLayout(this);
    v->addWidget(intro);
    v->addLayout(top);
    v->addWidget(table_, 1);
    v->addWidget(locations_);
    v->addLayout(buttons);

    connect(filter_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);
    connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& i) { openRow(proxy_->mapToSource(i).row()); });
    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &ModelPickerDialog::updateButtons);
    connect(open_, &QPushButton::clicked, this, [this] { openRow(currentSourceRow()); });
    connect(close, &QPushButton::clicked, this, &QDialog::reject);
    connect(rescan, &QPushButton::clicked, this, &ModelPickerDialog::refresh);
    connect(demo, &QPushButton::clicked, this, [this] {
        emit modelChosen(QStringLiteral("demo"));
        accept();
    });
    connect(browse, &QPushButton::clicked, this, [this] {
        if (const QString p = ModelOpenDialog::getPath(this); !p.isEmpty()) {
            emit modelChosen(p);
            accept();
        }
    });
    connect(addButton, &QPushButton::clicked, this, [this] {
        if (const QString d = QFileDialog::getExistingDirectory(this, tr("Search this folder for models")); !d.isEmpty()) addFolder(d);
    });
    connect(removeFolder_, &QPushButton::clicked, this, [this] {
        const int row = currentSourceRow();
        if (row < 0) return;
        QStringList folders = userFolders();
        for (const QString& f : userFolders())
            if (entries_[row].model.path.startsWith(f)) folders.removeAll(f);
        setUserFolders(folders);
        refresh();
    });
    connect(&scan_, &BackgroundTask::failed, locations_, &QLabel::setText);
    updateButtons();
    refresh();
}

QStringList ModelPickerDialog::userFolders() { return QSettings().value(kFoldersKey).toStringList(); }

void ModelPickerDialog::setUserFolders(const QStringList& folders) { QSettings().setValue(kFoldersKey, folders); }

void ModelPickerDialog::addFolder(const QString& dir) {
    QStringList folders = userFolders();
    const QString abs = QFileInfo(dir).absoluteFilePath();
    if (!folders.contains(abs)) folders << abs;
    setUserFolders(folders);
    refresh();
}

void ModelPickerDialog::refresh() {
    const QStringList recent = recentModels(), folders = userFolders();
    locations_->setText(tr("Reading model headers…"));
    scan_.start([this, recent, folders](const BackgroundTask::Context& ctx) -> std::function<void()> {
        QList<Entry> out;
        for (const QString& r : recent) {
            ctx.progress.checkCancelled();
            out << recentEntry(r);
        }
        for (const InstalledModel& m : findInstalledModels(folders, ctx.progress))
            out << Entry{modelSourceName(m.source), m};
        const QList<ModelStoreLocation> locations = modelStoreLocations(folders);
        return [this, out, locations] {
            entries_ = out;
            fill();
            QStringList where;
            for (const ModelStoreLocation& l : locations)
                where << (l.exists ? QStringLiteral("%1 (%2)") : QStringLiteral("%1 (%2, not found)"))
                             .arg(QDir::toNativeSeparators(l.dir), modelSourceName(l.source));
            locations_->setText(tr("Searched: %1").arg(where.join(QStringLiteral(" · "))));
        };
    });
}

QString ModelPickerDialog::locationsText() const { return locations_->text(); }

void ModelPickerDialog::fill() {
    model_->removeRows(0, model_->rowCount());
    const QLocale loc;
    for (int i = 0; i < entries_.size(); ++i) {
        const InstalledModel& m = entries_[i].model;
        const ModelProbe& p = m.probe;
        auto cell = [&](const QString& text, const QVariant& sortKey = {}) {
            auto* it = new QStandardItem(text);
            it->setData(sortKey.isValid() ? sortKey : QVariant(text.toLower()), Qt::UserRole);
            if (!m.verdict.ok) it->setForeground(QColor(130, 130, 130));
            it->setToolTip(m.verdict.ok ? QDir::toNativeSeparators(m.path) : m.verdict.reason);
            return it;
        };
        QList<QStandardItem*> row(ColumnCount);
        row[NameColumn] = cell(m.name);
        row[NameColumn]->setData(m.openName, OpenNameRole);
        row[SourceColumn] = cell(entries_[i].source);
        row[ArchitectureColumn] = cell(p.architecture);
        row[FormatColumn] = cell(p.detail == tr("session") ? tr("session")
                                 : p.format == ModelFormat::Unknown ? QString() : modelFormatName(p.format));
        row[DtypeColumn] = cell(p.dtype);
        row[SizeColumn] = cell(p.bytes > 0 ? loc.formattedDataSize(p.bytes) : QString(), qlonglong(p.bytes));
        row[ParametersColumn] = cell(parameterCount(p.parameters), qlonglong(p.parameters));
        row[StatusColumn] = cell(m.verdict.ok ? tr("yes") : tr("no: %1").arg(m.verdict.reason));
        model_->appendRow(row);
    }
    updateButtons();
}

int ModelPickerDialog::currentSourceRow() const {
    const QModelIndexList rows = table_->selectionModel()->selectedRows();
    return rows.isEmpty() ? -1 : proxy_->mapToSource(rows.first()).row();
}

void ModelPickerDialog::updateButtons() {
    const int row = currentSourceRow();
    const bool valid = row >= 0 && row < entries_.size();
    open_->setEnabled(valid && entries_[row].model.verdict.ok);
    bool inUserFolder = false;
    for (const QString& f : userFolders()) inUserFolder |= valid && entries_[row].model.path.startsWith(f);
    removeFolder_->setEnabled(inUserFolder);
}

bool ModelPickerDialog::openRow(int row) {
    if (row < 0 || row >= entries_.size() || !entries_[row].model.verdict.ok) return false;
    emit modelChosen(entries_[row].model.openName);
    accept();
    return true;
}

} // namespace attnscope
