#pragma once
// One Open dialog for everything AttnScope opens: a .safetensors, .gguf or llama2.c .bin file, a
// session (.attnscope), or a model folder (Hugging Face layout) — select the folder (or its
// config.json) and press Open; a folder without config.json is entered as usual.

#include <QFileDialog>

namespace attnscope {

class ModelOpenDialog : public QFileDialog {
    Q_OBJECT
public:
    explicit ModelOpenDialog(QWidget* parent = nullptr, const QString& directory = {});
    /// The chosen file or model folder ("" until accepted).
    QString chosenPath() const { return chosen_; }
    /// True for a folder that holds a config.json (a Hugging Face model folder).
    static bool isModelFolder(const QString& path);

    /// Runs the dialog; returns the chosen path or "" when cancelled.
    static QString getPath(QWidget* parent, const QString& directory = {});

public slots:
    void accept() override;

private:
    QString chosen_;
};

} // namespace attnscope
