#include "app/screenshot.h"

#include "app/main_window.h"
#include "app/session_controller.h"
#include "model/discovery/model_name.h"
#include "model/analysis/graphs/graph_document.h"
#include "views/graphs/graph_panel.h"
#include "views/residual/ablation_panel.h"
#include "views/comparison/model_compare_panel.h"
#include "views/residual/residual_panel.h"

#include <QCoreApplication>
#include <QEventLoop>
#include <QFileInfo>
#include <QImage>
#include <QLayout>
#include <QMainWindow>
#include <QTabWidget>
#include <QTimer>

namespace attnscope {

namespace {
const QString kDetectors = QStringLiteral("head-detectors"), kAblation = QStringLiteral("ablation");
const QString kStitch = QStringLiteral("stitch"), kFinetune = QStringLiteral("finetune-directions"); // Compare tab sub-tabs
const QStringList kTabs{QStringLiteral("attention"),  QStringLiteral("logit-attribution"), QStringLiteral("attention-steps"),
                        QStringLiteral("attention-by-hand"), QStringLiteral("logit-lens"), QStringLiteral("embedding-space"),
                        QStringLiteral("compare-models"), QStringLiteral("circuits"), QStringLiteral("features"),
                        QStringLiteral("graphs")};
} // namespace

QSize fitWindow(QMainWindow& window, QSize size) {
    for (QTabWidget* tabs : window.findChildren<QTabWidget*>()) // the main tabs and every view's sub-tabs
        for (int i = 0; i < tabs->count(); ++i)
            if (i != tabs->currentIndex()) tabs->widget(i)->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Ignored);
    for (int i = 0; i < 2; ++i) { // the new minimum is known once the layouts have run again
        if (QWidget* central = window.centralWidget()) central->updateGeometry(); // its cached minimum goes
        if (QLayout* l = window.layout()) {
            l->invalidate();
            l->activate();
        }
        QCoreApplication::processEvents();
        window.resize(size);
        QCoreApplication::processEvents();
    }
    return window.size();
}

QStringList screenshotViews() { return kTabs + QStringList{kDetectors, kAblation, kStitch, kFinetune}; }

int runScreenshot(const CommandLine& cmd, QTextStream& out, QTextStream& err) {
    if (!cmd.force && QFileInfo::exists(cmd.out)) {
        err << "attnscope: " << cmd.out << ": already exists (use --force to overwrite)\n";
        return 1;
    }
    SessionState state;
    QStringList problems;
    if (!cmd.session.isEmpty()) {
        QString error;
        if (!readSessionFile(cmd.session, &state, &problems, &error)) {
            err << "attnscope: " << error << "\n";
            return 1;
        }
    } else {
        state.prompt = QString(); // the window's default prompt unless --prompt
    }
    if (!cmd.modelPath.isEmpty() || cmd.session.isEmpty()) {
        const ResolvedModel m = resolveModelName(cmd.modelPath);
        if (!m.ok()) {
            err << "attnscope: " << m.error << "\n";
            return 1;
        }
        state.model = m.path;
        state.modelName = cmd.modelPath;
    }
    if (!cmd.tokenizerPath.isEmpty()) state.tokenizer = QFileInfo(cmd.tokenizerPath).absoluteFilePath(); // as the window's --tokenizer
    if (!cmd.prompt.isEmpty()) state.prompt = cmd.prompt;
    if (cmd.prependBos) state.prependBos = cmd.prependBos; // --bos / --no-bos; else the session's, else the model's
    if (cmd.layer >= 0) {
        state.layer = cmd.layer;
        state.head = cmd.head;
    }
    const bool subTab = cmd.screenshot == kDetectors || cmd.screenshot == kAblation;
    const bool compareSubTab = cmd.screenshot == kStitch || cmd.screenshot == kFinetune;
    state.tab = subTab ? QStringLiteral("logit-attribution") : compareSubTab ? QStringLiteral("compare-models") : cmd.screenshot;

    MainWindow window(nullptr, MainWindow::Mode::Offscreen);
    if (state.prompt.isEmpty()) state.prompt = window.prompt(); // the default prompt
    const QSize wanted = cmd.sizeGiven ? cmd.size : QSize(1600, 1000);
    window.resize(wanted);
    window.show();
    QString failure;
    QEventLoop loop;
    QObject::connect(&window.sessions(), &SessionController::restored, &loop, [&](const QStringList& p) {
        problems = p;
        loop.quit();
    });
    QObject::connect(&window.session(), &ModelSession::modelLoadFailed, &loop, [&](const QString& m) { failure = m; });
    QObject::connect(&window.session(), &ModelSession::forwardFailed, &loop, [&](const QString& m) { failure = m; });
    QTimer::singleShot(0, &window, [&] { window.sessions().restore(state, problems); });
    loop.exec();
    if (!failure.isEmpty()) {
        err << "attnscope: " << failure << "\n";
        return 1;
    }
    for (const QString& p : problems) err << "attnscope: warning: " << p << "\n";
    if (auto* residual = qobject_cast<ResidualPanel*>(window.panel(QStringLiteral("logit-attribution"))); residual && subTab) {
        residual->subTabs()->setCurrentIndex(cmd.screenshot == kDetectors ? 1 : 2);
        if (cmd.screenshot == kAblation && !residual->ablation()->ablatedHeads().empty()) residual->ablation()->run();
    }
    if (auto* compare = qobject_cast<ModelComparePanel*>(window.panel(QStringLiteral("compare-models"))); compare && compareSubTab) {
        window.waitForIdle(); // the second model first: the sub-tab starts its work when shown with both models
        compare->subTabs()->setCurrentIndex(cmd.screenshot == kStitch ? 1 : 2);
    }
    if (!cmd.openGraph.isEmpty()) { // --open-graph FILE: the file in the Graph tab, over the demo model
        window.openGraphFile(cmd.openGraph);
        window.waitForIdle();
        const auto* graph = qobject_cast<GraphPanel*>(window.panel(QStringLiteral("graphs")));
        if (!graph || !graph->document() || !graph->document()->isOffline()) {
            err << "attnscope: " << (graph ? graph->summaryText() : QStringLiteral("no Graph tab")) << "\n";
            return 1;
        }
    }
    if (!cmd.featureLabels.isEmpty()) { // --feature-labels: on the Features and Graph tabs
        if (const QString e = window.openFeatureLabels(cmd.featureLabels); !e.isEmpty()) {
            err << "attnscope: " << e << "\n";
            return 1;
        }
    }
    window.waitForIdle();
    if (const QSize used = fitWindow(window, wanted); used != wanted)
        err << "attnscope: warning: --width " << wanted.width() << " --height " << wanted.height() << " is smaller than the "
            << cmd.screenshot << " view can be laid out; the picture is " << used.width() << "×" << used.height() << "\n";
    window.waitForIdle(); // views that redo their work at the new size
    for (int i = 0; i < 3; ++i) QCoreApplication::processEvents(); // layouts and deferred repaints
    const QImage image = window.grab().toImage();
    if (!image.save(cmd.out, "PNG")) {
        err << "attnscope: " << cmd.out << ": cannot write the PNG\n";
        return 1;
    }
    out << "wrote " << cmd.out << " (" << image.width() << "×" << image.height() << ", " << cmd.screenshot << ")\n";
    return 0;
}

} // namespace attnscope
