#pragma once
// Watches the files of the open model (config.json and the weight files) with QFileSystemWatcher and
// reports a change once its writer has settled, so the window can offer to reload. A file replaced by
// a rename (how most tools save) is watched again under its name.

#include "model/transformer/model.h"

#include <QFileSystemWatcher>
#include <QObject>
#include <QTimer>

namespace attnscope {

/// The files on disk a model was read from: config.json and the weight files (none for a Qt resource).
QStringList modelFilesOnDisk(const ModelInfo& info);

class ModelFileWatcher : public QObject {
    Q_OBJECT
public:
    explicit ModelFileWatcher(QObject* parent = nullptr);
    /// Watches `files` instead of the previous ones.
    void watch(const QStringList& files);
    QStringList watched() const { return files_; }
    /// How long a file must stay unchanged before the change is reported (default 400 ms).
    void setSettleTime(int ms) { settle_.setInterval(ms); }

signals:
    /// A watched file was written, replaced or removed (once per burst of changes).
    void changed(const QString& file);

private:
    void onFileChanged(const QString& file);
    void report();

    QFileSystemWatcher watcher_;
    QStringList files_;
    QString lastChanged_;
    QTimer settle_;
};

} // namespace attnscope
