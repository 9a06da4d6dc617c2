#pragma once
// Small helpers for tests that check bad-input handling.

#include "model/core/errors.h"

#include <QByteArray>
#include <QFile>
#include <QString>
#include <QTemporaryDir>
#include <utility>
#include <stdexcept>

namespace attnscope::test {

/// The message of the exception of type Error (ModelError, InputError) `f` throws ("" if it throws nothing).
template <typename Error, typename F>
QString errorOf(F f) {
    try {
        f();
    } catch (const Error& e) {
        return e.message();
    }
    return QString();
}

/// The message of the ModelError `f` throws ("" if it throws nothing).
template <typename F>
QString modelErrorOf(F f) { return errorOf<ModelError>(std::move(f)); }

/// The message of the InputError `f` throws ("" if it throws nothing).
template <typename F>
QString inputErrorOf(F f) { return errorOf<InputError>(std::move(f)); }

/// The message of the ModelError or InputError `f` throws ("" if it throws nothing): readers whose type checks raise
/// InputError (config_fields.h) and whose file checks raise ModelError.
template <typename F>
QString anyErrorOf(F f) {
    try {
        f();
    } catch (const ModelError& e) {
        return e.message();
    } catch (const InputError& e) {
        return e.message();
    }
    return QString();
}

/// The whole file; throws std::runtime_error naming it if it cannot be read.
inline QByteArray readBytes(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) throw std::runtime_error("cannot open " + path.toStdString());
    return f.readAll();
}

/// Writes `bytes` to a file called `name` in a fresh temporary folder and returns its path and the
/// message of the ModelError `load(path)` throws ("" if none; "the file was modified" if the
/// loader changed it).
template <typename F>
std::pair<QString, QString> modelErrorOfFile(const QString& name, const QByteArray& bytes, F load) {
    QTemporaryDir dir;
    const QString path = dir.filePath(name);
    QFile f(path);
    if (!dir.isValid() || !f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size()) throw std::runtime_error("cannot write " + path.toStdString());
    f.close();
    const QString message = modelErrorOf([&] { load(path); });
    return {path, readBytes(path) == bytes ? message : QStringLiteral("the file was modified")};
}

} // namespace attnscope::test
