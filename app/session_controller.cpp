#include "app/session_controller.h"

#include "app/main_window.h"
#include "app/view_ids.h"
#include "model/discovery/model_name.h"
#include "views/common/analysis_panel.h"

#include <QFileInfo>
#include <QSet>

namespace attnscope {

SessionController::SessionController(MainWindow* window) : QObject(window), w_(window) {
    ModelSession& s = w_->session();
    connect(&s, &ModelSession::forwardFinished, this, [this] {
        if (pending_) finish();
    });
    auto failedWith = [this](const QString& what) {
        return [this, what](const QString& message) {
            if (!pending_) return;
            problems_ << what.arg(message);
            finish();
        };
    };
    connect(&s, &ModelSession::modelLoadFailed, this, failedWith(tr("the session's model could not be opened: %1")));
    connect(&s, &ModelSession::forwardFailed, this, failedWith(tr("the session's prompt could not be run: %1")));
    connect(&s, &ModelSession::cancelled, this, [this] {
        if (!pending_) return;
        problems_ << tr("the restore was cancelled before the prompt ran");
        finish();
    });
}

SessionState SessionController::capture() const {
    SessionState s;
    if (const auto model = w_->session().model()) {
        s.model = model->info().path;
        const QString as = w_->openedAs();
        if (!as.isEmpty() && !QFileInfo::exists(as) && resolveModelName(as).path == s.model) s.modelName = as;
        if (const QString tok = model->info().tokenizerPath; !tok.isEmpty()) s.tokenizer = QFileInfo(tok).absoluteFilePath();
    }
    s.prompt = w_->prompt();
    s.prependBos = w_->prependBos();
    s.layer = w_->layer();
    s.head = w_->head();
    s.tab = w_->currentViewId();
    for (const AnalysisPanel* p : w_->panels())
        if (const QJsonObject state = p->saveState(); !state.isEmpty()) s.panels.insert(viewIdOf(p), state);
    return s;
}

void SessionController::restore(const SessionState& state, QStringList problems, bool reload) {
    ModelSession& session = w_->session();
    if (session.isBusy()) { // a load or run started before would deliver the wrong forward pass
        session.cancel();
        session.waitForIdle();
    }
    w_->setPrompt(state.prompt);
    if (state.prependBos) w_->setPrependBos(*state.prependBos);
    pending_ = state;
    problems_ = problems;

    QString open = state.model; // what to pass to openModel: the model's name when it still names this path
    if (!state.modelName.isEmpty()) {
        const ResolvedModel byName = resolveModelName(state.modelName);
        if (byName.ok() && (byName.path == state.model || !QFileInfo::exists(state.model))) {
            if (byName.path != state.model)
                problems_ << tr("the session's model %1 is gone; opened %2 (%3) instead").arg(state.model, state.modelName, byName.path);
            open = state.modelName;
        }
    }
    const ResolvedModel target = resolveModelName(open);
    const auto model = session.model();
    const auto sameFile = [](const QString& a, const QString& b) {
        return a.isEmpty() == b.isEmpty() && (a.isEmpty() || QFileInfo(a).absoluteFilePath() == QFileInfo(b).absoluteFilePath());
    };
    if (!open.isEmpty() && !target.ok()) {
        problems_ << (model ? tr("the session's model %1 was not found; its settings were applied to %2")
                                  .arg(state.model, model->info().name)
                            : tr("the session's model %1 was not found").arg(state.model));
    } else if (!open.isEmpty() && (!model || model->info().path != target.path || reload ||
                                   !sameFile(model->info().tokenizerPath, state.tokenizer))) {
        w_->openModel(open, {}, state.tokenizer); // runs the prompt when loaded; finish() follows the forward pass
        return;
    }
    if (model) {
        w_->runPrompt();
        if (session.isBusy()) return;
    }
    finish();
}

QString SessionController::openFile(const QString& path) {
    SessionState s;
    QStringList problems;
    QString error;
    if (!readSessionFile(path, &s, &problems, &error)) return error;
    restore(s, problems);
    return {};
}

QString SessionController::saveFile(const QString& path) const {
    QString error;
    writeSessionFile(path, capture(), &error);
    return error;
}

void SessionController::finish() {
    const SessionState s = *pending_;
    pending_.reset();
    if (const auto model = w_->session().model()) {
        const ModelConfig& c = model->config();
        if (s.layer >= c.n_layers || s.head >= c.n_heads)
            problems_ << tr("head L%1H%2 is not in %3 (%4 layers × %5 heads); selected the nearest")
                             .arg(s.layer).arg(s.head).arg(model->info().name).arg(c.n_layers).arg(c.n_heads);
        w_->selectHead(std::min(s.layer, c.n_layers - 1), std::min(s.head, c.n_heads - 1));
    }
    if (!s.tab.isEmpty() && !w_->showView(s.tab)) problems_ << tr("there is no view \"%1\"").arg(s.tab);
    QSet<QString> known;
    for (AnalysisPanel* p : w_->panels()) {
        const QString id = viewIdOf(p);
        known.insert(id);
        const QJsonValue v = s.panels.value(id);
        if (v.isObject()) p->restoreState(v.toObject(), &problems_);
        else if (!v.isUndefined()) problems_ << tr("%1: the saved settings are not a JSON object").arg(p->title());
    }
    for (auto it = s.panels.begin(); it != s.panels.end(); ++it)
        if (!known.contains(it.key())) problems_ << tr("settings of an unknown view \"%1\" were ignored").arg(it.key());
    const QStringList problems = problems_;
    problems_.clear();
    emit restored(problems);
}

} // namespace attnscope
