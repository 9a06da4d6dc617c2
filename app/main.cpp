// attnscope: the window by default; headless work (--export, --dump-json) with no window and no
// display needed (the offscreen platform is selected before Qt starts).

#include "app/command_line.h"
#include "app/headless.h"
#include "app/main_window.h"
#include "app/screenshot.h"
#include "app/session_controller.h"
#include "model/core/heap_reuse.h"
#include "model/core/kernels/kernel_choice.h"
#include "model/transformer/cache_budget.h"
#include "app/startup_model.h"

#include <QApplication>
#include <QIcon>
#include <QTextStream>
#include <cstdio>

int main(int argc, char** argv) {
    attnscope::keepFreedMemoryForReuse(); // the next forward reuses the last cache's pages
    const bool headless = attnscope::argvIsHeadless(argc, argv);
    // headless work runs offscreen; a window falls back to offscreen when no display answers (said below)
    bool fallback = false;
    if (!headless) fallback = attnscope::offerOffscreenFallback(argc, argv);
    else if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    const bool display = !fallback || QGuiApplication::platformName() != QLatin1String("offscreen");
    if (fallback) qunsetenv("QT_QPA_PLATFORM"); // the list was for this process: what it starts (xdg-open) chooses its own
    QApplication::setApplicationName(QStringLiteral("AttnScope"));
    QApplication::setOrganizationName(QStringLiteral("AttnScope"));
    QApplication::setApplicationVersion(QStringLiteral("0.1.0"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/attnscope.svg")));
    QGuiApplication::setDesktopFileName(QStringLiteral("attnscope")); // packaging/attnscope.desktop

    QTextStream out(stdout), err(stderr);
    // the compute kernel is chosen before any work: a forced one the CPU cannot run is a clear error
    if (const attnscope::KernelChoice& choice = attnscope::processKernelChoice(); !choice.error.isEmpty()) {
        err << "attnscope: " << choice.error << "\n";
        return 1;
    }
    if (const QString e = attnscope::memoryBudgetError(); !e.isEmpty()) { // likewise a budget that is not a number
        err << "attnscope: " << e << "\n";
        return 1;
    }
    attnscope::CommandLine cmd;
    QString error, help;
    if (!attnscope::parseCommandLine(QApplication::arguments(), &cmd, &error, &help)) {
        if (error.isEmpty()) {
            out << help;
            return 0;
        }
        err << "attnscope: " << error << "\nTry 'attnscope --help'.\n";
        return 2;
    }
    if (!cmd.screenshot.isEmpty()) return attnscope::runScreenshot(cmd, out, err);
    if (cmd.isHeadless()) return attnscope::runHeadless(cmd, out, err);
    if (!display) {
        err << "attnscope: no display to open the window on (" << attnscope::noDisplayReason() << "); ";
        if (cmd.openGraph.isEmpty()) {
            err << "headless work (--export, --dump-json, …) needs none: see attnscope --help\n";
            return 1;
        }
        err << "the file's summary follows; --dump-json, --graph-json and --export write it, the file and its figure\n";
        return attnscope::runHeadless(cmd, out, err);
    }

    attnscope::MainWindow window;
    window.show();
    const attnscope::StartupPlan plan = attnscope::planStartup(cmd.modelPath); // the last session if none given
    switch (plan.action) {
    case attnscope::StartupPlan::Action::OpenSessionFile: window.openPath(plan.sessionFile); break;
    case attnscope::StartupPlan::Action::RestoreLastSession: window.sessions().restore(plan.lastSession); break;
    case attnscope::StartupPlan::Action::OpenModel: window.openModel(plan.model, cmd.prompt, cmd.tokenizerPath); break;
    }
    if (!cmd.openGraph.isEmpty()) window.openGraphFile(cmd.openGraph); // shown over the model: the file needs none
    else if (plan.showPicker) window.showModelPicker(); // first start: the demo opens behind the installed models
    return app.exec();
}
