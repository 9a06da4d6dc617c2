#pragma once
// Errors raised by the model library. Every error names the file (or input) and what is wrong,
// so the GUI can show it in a dialog and the CLI can print it verbatim.

#include <QString>
#include <stdexcept>

namespace attnscope {

/// A model, tokenizer or config file that cannot be used.
/// what() is "<file>: <problem>" (UTF-8); file() and problem() give the two parts.
class ModelError : public std::runtime_error {
public:
    ModelError(const QString& file, const QString& problem)
        : std::runtime_error((file.isEmpty() ? problem : file + QStringLiteral(": ") + problem).toStdString()),
          file_(file), problem_(problem) {}
    const QString& file() const { return file_; }
    const QString& problem() const { return problem_; }
    QString message() const { return QString::fromStdString(what()); }

private:
    QString file_;
    QString problem_;
};

/// Bad user input that is not a file (prompt too long, layer out of range, ...).
class InputError : public std::runtime_error {
public:
    explicit InputError(const QString& problem) : std::runtime_error(problem.toStdString()) {}
    QString message() const { return QString::fromStdString(what()); }
};

/// Thrown by long computations when the user cancelled them.
class Cancelled : public std::exception {
public:
    const char* what() const noexcept override { return "cancelled"; }
};

} // namespace attnscope
