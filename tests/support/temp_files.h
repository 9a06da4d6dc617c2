#pragma once
// A temporary folder for the fixture files a test writes; removed with the object.

#include "tests/support/safetensors_writer.h"

#include <QTemporaryDir>

namespace attnscope::test {

class TempFiles {
public:
    /// The path of `name` in the folder (the file need not exist).
    QString path(const QString& name) const { return dir_.filePath(name); }
    /// Writes `bytes` to `name` in the folder (overwriting) and returns its path.
    QString write(const QString& name, const QByteArray& bytes) const {
        const QString p = path(name);
        writeFile(p, bytes);
        return p;
    }

private:
    QTemporaryDir dir_;
};

} // namespace attnscope::test
