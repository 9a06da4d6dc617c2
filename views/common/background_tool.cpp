#include "views/common/background_tool.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QVBoxLayout>

namespace attnscope {

QLabel* textLine(const QString& text) {
    auto* l = new QLabel(text);
    l->setTextFormat(Qt::PlainText);
    l->setWordWrap(true);
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return l;
}

QSplitter* splitPanes(Qt::Orientation orientation, std::initializer_list<std::pair<QWidget*, int>> panes) {
    auto* split = new QSplitter(orientation);
    for (auto [pane, stretch] : panes) {
        split->addWidget(pane);
        if (stretch > 0) split->setStretchFactor(split->count() - 1, stretch);
    }
    return split;
}

BackgroundTool::BackgroundTool(const QString& runText, const QString& idleStatus, QObject* parent)
    : QObject(parent), idle_(idleStatus), status_(textLine(idleStatus)) {
    if (!runText.isEmpty()) {
        run_ = new QPushButton(runText);
        connect(run_, &QPushButton::clicked, this, &BackgroundTool::runRequested);
    }
    cancelled_ = [this] { setStatus(tr("Cancelled.")); };
    failed_ = [this](const QString& m) { setStatus(m); };
    connect(&task_, &BackgroundTask::cancelled, this, [this] {
        if (cancelled_) cancelled_();
    });
    connect(&task_, &BackgroundTask::failed, this, [this](const QString& m) {
        if (failed_) failed_(m);
    });
    connect(&task_, &BackgroundTask::progressChanged, this, [this](qint64 done, qint64 total, const QString& what) {
        if (progressInStatus_) setStatus(tr("%1 %2 / %3").arg(what).arg(done).arg(total));
    });
}

BackgroundTool::~BackgroundTool() {
    for (QWidget* w : {static_cast<QWidget*>(run_), static_cast<QWidget*>(status_)})
        if (w && !w->parent()) delete w;
}

QPushButton* BackgroundTool::runButton() const { return run_; }
QLabel* BackgroundTool::statusLabel() const { return status_; }

QString BackgroundTool::statusText() const { return status_ ? status_->text() : QString(); }

void BackgroundTool::setStatus(const QString& text) {
    if (status_) status_->setText(text);
}

void BackgroundTool::useStatusLabel(QLabel* label) {
    if (status_ && !status_->parent()) delete status_;
    status_ = label;
}

QHBoxLayout* BackgroundTool::controlRow(std::initializer_list<QWidget*> lead, std::initializer_list<QWidget*> trail) {
    auto* row = taskRow(task_, lead);
    int at = int(lead.size()); // before the progress bar
    if (run_) row->insertWidget(at++, run_);
    for (QWidget* w : trail) row->insertWidget(at++, w);
    return row;
}

void BackgroundTool::addTo(QVBoxLayout* layout, std::initializer_list<QWidget*> lead, QWidget* result) {
    layout->addLayout(controlRow(lead));
    layout->addWidget(status_);
    if (result) layout->addWidget(result, 1);
}

void BackgroundTool::start(const QString& busy, BackgroundTask::Work work) {
    setStatus(busy);
    start(std::move(work));
}

void BackgroundTool::start(BackgroundTask::Work work) { task_.start(std::move(work)); }

void BackgroundTool::reject(const QString& message) {
    task_.discard();
    setStatus(message);
}

void BackgroundTool::newContext() {
    const bool running = task_.isRunning();
    task_.discard();
    if (running) setStatus(idle_);
}

} // namespace attnscope
