#include "app/model_file_watcher.h"

#include <QDir>
#include <QFileInfo>

namespace attnscope {

QStringList modelFilesOnDisk(const ModelInfo& info) {
    if (info.path.startsWith(QLatin1Char(':'))) return {};
    const QFileInfo fi(info.path);
    const QDir folder(fi.isDir() ? fi.absoluteFilePath() : fi.absolutePath());
    QStringList files;
    if (folder.exists(QStringLiteral("config.json"))) files << folder.filePath(QStringLiteral("config.json"));
    for (const QString& w : info.weightFiles) files << folder.filePath(w);
    if (fi.isFile() && !files.contains(fi.absoluteFilePath())) files << fi.absoluteFilePath();
    return files;
}

ModelFileWatcher::ModelFileWatcher(QObject* parent) : QObject(parent) {
    settle_.setSingleShot(true);
    settle_.setInterval(400);
    connect(&watcher_, &QFileSystemWatcher::fileChanged, this, &ModelFileWatcher::onFileChanged);
    connect(&settle_, &QTimer::timeout, this, &ModelFileWatcher::report);
}

void ModelFileWatcher::watch(const QStringList& files) {
    if (!watcher_.files().isEmpty()) watcher_.removePaths(watcher_.files());
    settle_.stop();
    files_ = files;
    for (const QString& f : files)
        if (QFileInfo::exists(f)) watcher_.addPath(f);
}

void ModelFileWatcher::onFileChanged(const QString& file) {
    lastChanged_ = file;
    settle_.start(); // restarts: report once the writes stop
}

void ModelFileWatcher::report() {
    const QStringList active = watcher_.files();
    for (const QString& f : files_) // a replaced (renamed-over) or recreated file drops out of the watcher
        if (!active.contains(f) && QFileInfo::exists(f)) watcher_.addPath(f);
    emit changed(lastChanged_);
}

} // namespace attnscope
