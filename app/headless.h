#pragma once
// Headless command-line work (--export, --dump-json): the same model/ and export code the window
// uses, no window. Runs under QT_QPA_PLATFORM=offscreen, so it needs no display.

#include "app/command_line.h"

#include <QTextStream>

namespace attnscope {

/// Loads the model, runs the prompt and writes what the command line asks for.
/// Returns the process exit code: 0 on success, 1 on any error (message on `err`, naming the file).
int runHeadless(const CommandLine& cmd, QTextStream& out, QTextStream& err);

} // namespace attnscope
