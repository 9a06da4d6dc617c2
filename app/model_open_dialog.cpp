#include "app/model_open_dialog.h"

#include <QDir>
#include <QFileInfo>

namespace attnscope {

ModelOpenDialog::ModelOpenDialog(QWidget* parent, const QString& directory)
    : QFileDialog(parent, tr("Open model, model folder or session"), directory) {
    setOption(QFileDialog::DontUseNativeDialog); // native dialogs cannot accept a folder in file mode
    setFileMode(QFileDialog::ExistingFile);
    setAcceptMode(QFileDialog::AcceptOpen);
    setNameFilters({tr("Models and sessions (*.safetensors *.gguf *.bin config.json *.index.json *.attnscope)"),
                    tr("Sessions (*.attnscope)"), tr("All files (*)")});
    setLabelText(QFileDialog::FileName, tr("File or model folder:"));
}

bool ModelOpenDialog::isModelFolder(const QString& path) {
    return QFileInfo(path).isDir() && QFileInfo::exists(QDir(path).filePath(QStringLiteral("config.json")));
}

void ModelOpenDialog::accept() {
    const QString selected = selectedFiles().value(0);
    const QFileInfo fi(selected);
    const QString current = directory().absolutePath();
    if (fi.isFile()) // config.json stands for its folder
        chosen_ = fi.fileName() == QLatin1String("config.json") ? fi.absolutePath() : fi.absoluteFilePath();
    else if (isModelFolder(selected)) // a model folder selected in the list or typed
        chosen_ = fi.absoluteFilePath();
    else if ((selected.isEmpty() || fi.absoluteFilePath() == current) && isModelFolder(current)) // the folder shown
        chosen_ = current;
    else
        return QFileDialog::accept(); // a plain folder: enter it
    QDialog::accept();
}

QString ModelOpenDialog::getPath(QWidget* parent, const QString& directory) {
    ModelOpenDialog d(parent, directory);
    return d.exec() == QDialog::Accepted ? d.chosenPath() : QString();
}

} // namespace attnscope
