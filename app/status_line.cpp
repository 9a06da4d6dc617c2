#include "app/status_line.h"

namespace attnscope {

StatusLine::StatusLine(QWidget* parent) : QLabel(parent) {
    clear_.setSingleShot(true);
    clear_.setInterval(kFinishedMs);
    connect(&clear_, &QTimer::timeout, this, &QLabel::clear);
}

void StatusLine::showMessage(const QString& text) {
    clear_.stop();
    setText(text);
}

void StatusLine::showFinished(const QString& text) {
    setText(text);
    clear_.start();
}

} // namespace attnscope
